package io.fencer.client.internal;

import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.BackupRequest;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.DescribeSemaphoreRequest;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import com.google.protobuf.ByteString;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.SemaphoreInfo;
import io.fencer.api.v1.RevokeRequest;
import io.fencer.api.v1.RevokeResponse;
import io.fencer.api.v1.StatusRequest;
import io.fencer.api.v1.StatusResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.client.FencerClient;
import io.fencer.client.LockStatus;
import io.fencer.client.Revocation;
import io.fencer.client.ServerStatus;
import io.fencer.client.SemaphoreStatus;
import io.fencer.client.Session;
import io.fencer.client.TokenStatus;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.client.WatchPosition;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gRPC implementation of {@link FencerClient}: a {@link Router} to the leader, a {@link KeepAliver} for the
 * sessions, and a small pool of daemon threads on which session-loss listeners run. Not public API: obtain one
 * through {@link io.fencer.client.Fencer}.
 */
public final class DefaultFencerClient implements FencerClient {
    static final Duration TTL_MIN = Duration.ofSeconds(1);
    static final Duration TTL_MAX = Duration.ofHours(1);
    static final int LIST_LIMIT_MAX = 1_000;
    /** The largest backup file taken: the format's own bound. */
    static final long BACKUP_BYTES_MAX = (1L << 30) + 1024;
    /** The least time a backup's stream is given, whatever the client's call timeout. */
    static final long BACKUP_TIMEOUT_NANOS_MIN = TimeUnit.SECONDS.toNanos(60);
    /** Threads that run session-loss listeners, so a slow listener cannot hold up keepalives or the others. */
    private static final int EVENT_THREADS_MAX = 4;
    /** Loss events waiting for a listener thread; beyond it (never in practice) listeners run on the notifier. */
    private static final int EVENTS_QUEUED_MAX = 65_536;
    /** Threads that make the client's own blocking calls in the background (re-sent releases, give-backs). */
    private static final int CALL_THREADS_MAX = 4;

    private final Router router;
    private final Ticker ticker;
    private final KeepAliver keepAliver;
    /** Follows the group's membership: the router learns every peer's address (see {@link PeerDirectory}). */
    private final PeerDirectory peerDirectory;
    private final ExecutorService events;
    /**
     * Where the client's background calls wait for the service, apart from {@link #events}: a call waits up to a call
     * timeout against a peer that stopped answering, and queued behind such calls a session's loss reached its
     * listeners that much after the client knew it, while the service may have expired the session already.
     */
    private final ExecutorService backgroundCalls;
    private final RequestIds requestIds = new RequestIds();
    private final ReleasesInFlight releasesInFlight = new ReleasesInFlight();
    private final Map<Long, DefaultSession> sessions = new ConcurrentHashMap<>();
    private final Set<DefaultWatch> watches = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    DefaultFencerClient(List<String> endpoints, Duration callTimeout, Duration unreachableTimeout, Ticker ticker,
            ClientTransport transport, boolean pipelining) {
        this.router = new Router(endpoints, callTimeout.toNanos(), unreachableTimeout.toNanos(), transport,
                pipelining);
        this.ticker = ticker;
        this.keepAliver = new KeepAliver(router, ticker);
        this.peerDirectory = new PeerDirectory(router, PeerDirectory.refreshIntervalOfProperty());
        peerDirectory.start();
        this.events = daemonPool("fencer-events-", EVENT_THREADS_MAX);
        this.backgroundCalls = daemonPool("fencer-calls-", CALL_THREADS_MAX);
    }

    private static ExecutorService daemonPool(String threadPrefix, int threads) {
        AtomicInteger threadNumber = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(EVENTS_QUEUED_MAX), runnable -> {
                    Thread thread = new Thread(runnable, threadPrefix + threadNumber.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** Returns a builder of clients; the hook behind {@link io.fencer.client.Fencer#newBuilder()}. */
    public static FencerClient.Builder newBuilder() {
        return new ClientBuilder();
    }

    @Override
    public Session openSession(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.compareTo(TTL_MIN) < 0 || ttl.compareTo(TTL_MAX) > 0) {
            throw new InvalidArgumentException("ttl", Long.toString(ttl.toMillis()), "session ttl must be between "
                    + TTL_MIN.toMillis() + " and " + TTL_MAX.toMillis() + " ms, got " + ttl.toMillis() + " ms");
        }
        checkOpen();
        // The lease starts when the server receives the request, never before this reading: a safe lower bound.
        long openedNanos = ticker.nanoTime();
        OpenSessionResponse response = open(ttl);
        if (response.getSessionId() <= 0) {
            throw new InternalException("the server opened a session with id " + response.getSessionId());
        }
        if (response.getSecret().isEmpty()) {
            throw new InternalException("the server opened session " + response.getSessionId() + " without a "
                    + "secret: it predates session secrets");
        }
        Duration granted = response.getTtlMillis() > 0 ? Duration.ofMillis(response.getTtlMillis()) : ttl;
        DefaultSession session = new DefaultSession(this, response.getSessionId(), response.getSecret(), granted);
        sessions.put(session.id(), session);
        try {
            keepAliver.register(session, openedNanos);
        } catch (IllegalStateException closedMeanwhile) {
            session.closeSession(true); // best effort: do not leave the session open on the service
            throw closedMeanwhile;
        }
        if (closed.get()) {
            session.closeSession(true);
            throw new IllegalStateException("the FencerClient was closed while the session opened");
        }
        return session;
    }

    /**
     * Opens a session on the service. The request id is drawn at random for each open rather than from the client's
     * {@link RequestIds}, whose prefix the service shows in the request ids of queued waits: a retry of an open gets
     * the session's secret, so its id must not be guessable. Each open also draws a fresh retry key
     * ({@link RequestIds#retryKey()}), which its retries (the router's, on UNAVAILABLE, within one {@link #openOnce})
     * send again: without TLS the service tells the client's retry from anybody else's by the key alone. A retry the
     * service can no longer answer (the leader changed meanwhile) is refused as SESSION_UNAUTHENTICATED; the session
     * it names was never usable and expires on its own, so one new open with a new request id and key follows.
     */
    private OpenSessionResponse open(Duration ttl) {
        try {
            return openOnce(ttl);
        } catch (SessionUnauthenticatedException lostAnswer) {
            return openOnce(ttl);
        }
    }

    private OpenSessionResponse openOnce(Duration ttl) {
        OpenSessionRequest request = OpenSessionRequest.newBuilder()
                .setTtlMillis(ttl.toMillis()).setRequestId(RequestIds.random())
                .setRetryKey(ByteString.copyFrom(RequestIds.retryKey())).build();
        return router.call("OpenSession", calls -> calls.call(LocksGrpc.getOpenSessionMethod(), request));
    }

    @Override
    public SemaphoreStatus describeSemaphore(String semaphore) {
        LockNames.check("semaphore", semaphore);
        checkOpen();
        DescribeSemaphoreRequest request = DescribeSemaphoreRequest.newBuilder().setSemaphore(semaphore).build();
        SemaphoreInfo info = router.read("DescribeSemaphore " + semaphore,
                calls -> calls.call(LocksGrpc.getDescribeSemaphoreMethod(), request));
        List<LockStatus> slots = new ArrayList<>(info.getSlotsCount());
        info.getSlotsList().forEach(slot -> slots.add(Protos.lockStatus(slot)));
        List<Long> waiters = new ArrayList<>(info.getWaitersCount());
        info.getWaitersList().forEach(waiter -> waiters.add(waiter.getSessionId()));
        return new SemaphoreStatus(info.getSemaphore(), info.getPermits(), slots, waiters);
    }

    @Override
    public Revocation revoke(String lock) {
        LockNames.check(lock);
        FencingToken holder = describe(lock).holder();
        // A free lock is asked about all the same (token 0, any holder): the server's refusal names what it found.
        return revoke(lock, holder != null ? holder.value() : FencingToken.NONE);
    }

    @Override
    public Revocation revoke(FencingToken token) {
        Objects.requireNonNull(token, "token");
        return revoke(token.lock(), token.value());
    }

    /**
     * Revokes {@code lock}'s grant {@code token} (0: whichever holds it) through the router, which retries after a
     * failure that may have taken effect (a lost answer, a leader that failed over while committing). A retry's
     * NOT_HOLDER may then be the first attempt's own doing: see {@link #alreadyEnded}. A refusal of the first attempt
     * is always the caller's.
     */
    private Revocation revoke(String lock, long token) {
        checkOpen();
        RevokeRequest request = RevokeRequest.newBuilder().setLock(lock).setToken(token).build();
        AtomicInteger attempts = new AtomicInteger();
        RevokeResponse revoked;
        try {
            revoked = router.call("Revoke " + lock + "#" + token, calls -> {
                attempts.incrementAndGet();
                return calls.call(LocksGrpc.getRevokeMethod(), request);
            });
        } catch (NotHolderException refused) {
            Revocation already = attempts.get() > 1 ? alreadyEnded(lock, token, refused) : null;
            if (already != null) {
                return already;
            }
            throw refused;
        }
        return new Revocation(Protos.token(revoked.getRevoked()),
                revoked.hasNext() ? Protos.token(revoked.getNext()) : null, revoked.getDelayed());
    }

    /**
     * Tells whether a retried revoke's NOT_HOLDER may be its first attempt's success: the grant it named has ended
     * and the lock is free or held under a later token. The service cannot say more (a free lock keeps no record of
     * how its last grant ended), so the answer says "perhaps" and points to the Watch, which does. Returns the
     * revocation to report then, or null when the refusal stands: a revoke of "whoever holds it" (token 0) cannot
     * tell whose grant it ended.
     */
    private static Revocation alreadyEnded(String lock, long token, NotHolderException refused) {
        if (token == FencingToken.NONE || (refused.current() != FencingToken.NONE && refused.current() <= token)) {
            return null;
        }
        return new Revocation(new FencingToken(lock, token), refused.current() == FencingToken.NONE ? null
                : new FencingToken(lock, refused.current()), false, true);
    }

    @Override
    public ServerStatus status() {
        checkOpen();
        StatusResponse status = router.call("Status",
                calls -> calls.call(AdminGrpc.getStatusMethod(), StatusRequest.getDefaultInstance()));
        return new ServerStatus(status.getPeerId(), status.getReleaseFormatLevel(), status.getGroupFormatLevel(),
                status.getGeneration(), status.getHighestToken(), status.getAppliedIndex(), status.getLeader(),
                status.getLeaderAddress());
    }

    @Override
    public byte[] backup() {
        checkOpen();
        return router.call("Backup", calls -> UnaryCalls.collect(calls.channel(), AdminGrpc.getBackupMethod(),
                BackupRequest.getDefaultInstance(), Math.max(calls.timeoutNanos(), BACKUP_TIMEOUT_NANOS_MIN), BACKUP_BYTES_MAX,
                chunk -> chunk.getData()));
    }

    @Override
    public LockStatus describe(String lock) {
        LockNames.check(lock);
        checkOpen();
        DescribeRequest request = DescribeRequest.newBuilder().setLock(lock).build();
        seeReleasesSent();
        LockInfo info = router.read("Describe " + lock, calls -> calls.call(LocksGrpc.getDescribeMethod(), request));
        return Protos.lockStatus(info);
    }

    @Override
    public List<LockStatus> list(String prefix, String startAfter, int limit) {
        if (limit < 0 || limit > LIST_LIMIT_MAX) {
            throw new InvalidArgumentException("limit", Integer.toString(limit),
                    "list limit must be between 0 (the default, " + LIST_LIMIT_MAX + ") and " + LIST_LIMIT_MAX
                            + ", got " + limit);
        }
        checkOpen();
        int wanted = limit == 0 ? LIST_LIMIT_MAX : limit;
        List<LockStatus> locks = new ArrayList<>();
        String after = startAfter == null ? "" : startAfter;
        seeReleasesSent();
        // The service cuts a page at about 1 MiB: ask on after its last lock until the limit or the end.
        while (true) {
            ListRequest request = ListRequest.newBuilder().setPrefix(prefix == null ? "" : prefix)
                    .setStartAfter(after).setLimit(wanted - locks.size()).build();
            ListResponse response = router.read("List", calls -> calls.call(LocksGrpc.getListMethod(), request));
            for (LockInfo info : response.getLocksList()) {
                locks.add(Protos.lockStatus(info));
            }
            if (!response.getMore() || response.getLocksCount() == 0 || locks.size() >= wanted) {
                return List.copyOf(locks);
            }
            after = locks.get(locks.size() - 1).lock();
        }
    }

    @Override
    public TokenStatus validate(FencingToken token) {
        Objects.requireNonNull(token, "token");
        checkOpen();
        ValidateRequest request = ValidateRequest.newBuilder().setToken(Protos.toProto(token)).build();
        seeReleasesSent();
        return Protos.tokenStatus(router.read("Validate " + token,
                calls -> calls.call(LocksGrpc.getValidateMethod(), request)));
    }

    @Override
    public Watch watch(String prefix, WatchPosition from, WatchListener listener) {
        Objects.requireNonNull(prefix, "prefix");
        checkOpen();
        DefaultWatch watch = new DefaultWatch(router, prefix, from, listener, watches::remove);
        watches.add(watch);
        watch.connect();
        return watch;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            List.copyOf(watches).forEach(DefaultWatch::close);
            boolean reachable = true;
            for (DefaultSession session : List.copyOf(sessions.values())) {
                // Once the service proved unreachable, do not spend a call timeout per session: they expire.
                reachable = session.closeSession(reachable) && reachable;
            }
        } finally {
            peerDirectory.close();
            keepAliver.close();
            router.close();
            events.shutdown();
            backgroundCalls.shutdown();
        }
    }

    @Override
    public io.fencer.client.GroupPeers peers() {
        checkOpen();
        return new DefaultGroupPeers(router);
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the FencerClient is closed");
        }
    }

    Router router() {
        return router;
    }

    /** Returns the source of this client's request ids, unique across clients. */
    RequestIds requestIds() {
        return requestIds;
    }

    /**
     * Waits, at most a call timeout, for the answers of the releases this client sent without waiting before this
     * read, so that the read sees them applied (see {@link ReleasesInFlight}).
     */
    private void seeReleasesSent() {
        try {
            releasesInFlight.awaitAnsweredBefore(router.callTimeoutNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the read's call fails CANCELLED on the interrupted thread
        }
    }

    ReleasesInFlight releasesInFlight() {
        return releasesInFlight;
    }

    KeepAliver keepAliver() {
        return keepAliver;
    }

    ExecutorService events() {
        return events;
    }

    /** Returns the threads for the client's blocking background calls; never those of {@link #events()}. */
    ExecutorService calls() {
        return backgroundCalls;
    }

    /** Forgets a session that is lost or closed. */
    void forget(DefaultSession session) {
        sessions.remove(session.id(), session);
    }

    @Override
    public String toString() {
        return "FencerClient[" + String.join(",", router.endpoints()) + ", leader " + router.current()
                + (closed.get() ? ", closed" : "") + "]";
    }
}

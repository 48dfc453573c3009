package io.fencer.client.internal;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.DurableMark;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.RevokedGrant;
import io.fencer.client.FencedLock;
import io.fencer.client.FencedMultiLock;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.GrantLoss;
import io.fencer.client.LeaderElection;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.LockNames;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.UnavailableException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A session of a {@link DefaultFencerClient}: its id, secret and ttl, its loss (set once, by whoever learns of it
 * first: the keepalive thread, a call answered SESSION_EXPIRED or SESSION_UNAUTHENTICATED, or close), and the locks
 * and elections made through it. The secret goes into every request made for the session and nowhere else: not into
 * logs, exception messages nor {@link #toString()}. Thread-safe.
 */
final class DefaultSession implements Session {
    private static final System.Logger LOG = System.getLogger(DefaultSession.class.getName());

    private final DefaultFencerClient client;
    private final long id;
    /** The secret OpenSession returned; a credential, so it is never logged nor shown. */
    private final String secret;
    private final Duration ttl;
    private final AtomicReference<SessionLoss> loss = new AtomicReference<>();
    private final CompletableFuture<SessionLoss> lost = new CompletableFuture<>();
    /** What callers see: completing or cancelling it does not touch {@link #lost}. */
    private final CompletionStage<SessionLoss> lostView = lost.minimalCompletionStage();
    /** Completes on every end, a close included; {@link #lost} only on the ends the application did not ask for. */
    private final CompletableFuture<SessionLoss> ended = new CompletableFuture<>();
    private final CompletionStage<SessionLoss> endedView = ended.minimalCompletionStage();
    private final AtomicBoolean closeRequested = new AtomicBoolean();
    private final PendingReleases pendingReleases = new PendingReleases();
    private final ProvisionalGrants provisionalGrants = new ProvisionalGrants(this);
    /** The highest token released per lock: an Acquire answered with one of them is no new grant. */
    private final ReleasedTokens releasedTokens = new ReleasedTokens();
    /**
     * The grants whose release was sent without waiting and is not settled yet (answered, or re-sent after a
     * failure); {@link #releasedAlready} and {@link #awaitReleasesOf} consult it. Its monitor wakes those waiting.
     */
    private final Set<GrantKey> releasing = ConcurrentHashMap.newKeySet();
    /** Threads waiting in {@link #awaitReleasesOf}: only then does settling a release take the monitor. */
    private final AtomicInteger releasingWaiters = new AtomicInteger();
    /**
     * The current jeopardy episode: completed when the keepalive thread finds the session in jeopardy, replaced by a
     * pending one when an acknowledgement ends the episode, completed with zero when the session ends.
     */
    private volatile CompletableFuture<Duration> jeopardy = new CompletableFuture<>();
    /** Orders replacing {@link #jeopardy} against a loss, so that a lost session never gets a pending episode. */
    private final Object jeopardyLock = new Object();
    /**
     * The grants made through this session and not released, by token: each one's loss, completed when it is revoked
     * or the session is lost. Shared by every grant object of one token (the holder acquiring a lock again is handed
     * another object of the same grant, and each must learn of its loss), so that this holds one entry a grant, not
     * one an acquire. Whoever removes an entry from here completes it.
     */
    private final Map<GrantKey, Tracked> grants = new ConcurrentHashMap<>();
    /**
     * The end of each term this session leads, by its token: campaigning again while leading is answered with the
     * same grant, and every Leadership of that term must end when any of them resigns (see {@link #termEnded}).
     */
    private final Map<GrantKey, CompletableFuture<Void>> termsEnded = new ConcurrentHashMap<>();
    /** Makes a grant's hand-out and its give-back after an interrupt exclusive (see {@link #handOut}). */
    private final Object handOutGuard = new Object();
    private final RevocationsKnown revocationsKnown = new RevocationsKnown();

    /** A tracked grant: its token as granted (with its mode) and its loss, shared by every object of it. */
    private record Tracked(FencingToken token, CompletableFuture<GrantLoss> loss) {}

    /** A grant by its lock and token value (a session holds a lock in one mode only). */
    private record GrantKey(String lock, long value) {
        static GrantKey of(FencingToken token) {
            return new GrantKey(token.lock(), token.value());
        }
    }

    DefaultSession(DefaultFencerClient client, long id, String secret, Duration ttl) {
        if (id <= 0) {
            throw new IllegalArgumentException("session id must be positive, got " + id);
        }
        if (secret.isEmpty()) {
            throw new IllegalArgumentException("session " + id + " needs a secret");
        }
        this.client = client;
        this.id = id;
        this.secret = secret;
        this.ttl = ttl;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public Duration ttl() {
        return ttl;
    }

    @Override
    public FencedLock lock(String name) {
        return new DefaultFencedLock(this, LockNames.check(name));
    }

    @Override
    public FencedSemaphore semaphore(String name, int permits) {
        return new DefaultFencedSemaphore(this, LockNames.check(name), permits);
    }

    @Override
    public FencedMultiLock locks(String... names) {
        List<String> checked = new ArrayList<>(names.length);
        for (String name : names) {
            checked.add(LockNames.check(name));
        }
        return new DefaultFencedMultiLock(this, checked);
    }

    @Override
    public LeaderElection election(String name) {
        return new DefaultLeaderElection(this, LockNames.check(name));
    }

    /** Returns the session's secret, for the requests made for this session only. */
    String secret() {
        return secret;
    }

    @Override
    public void release(FencingToken token) {
        Objects.requireNonNull(token, "token");
        checkAlive();
        releaseToken(token);
    }

    /**
     * Releases {@code token} for this session, even while the session is known lost as UNREACHABLE (the service may
     * still hold it). A retry after an attempt whose answer was lost may find that attempt already released the lock:
     * the service then answers NOT_HOLDER, as for any token that is not this session's; since the grant has ended
     * either way, that retry's NOT_HOLDER is a release, unless it names {@code token} as the lock's holder still (a
     * token of another session, which no attempt could release). A refusal of the first attempt is the caller's.
     */
    void releaseToken(FencingToken token) {
        releasedTokens.releasing(token);
        ReleaseRequest request = releaseRequest(token);
        AtomicInteger attempts = new AtomicInteger();
        try {
            releaseAnswered(token, router().call("Release " + token, calls -> {
                attempts.incrementAndGet();
                return calls.call(LocksGrpc.getReleaseMethod(), request);
            }));
        } catch (NotHolderException refused) {
            if (attempts.get() == 1 || refused.current() == token.value()) {
                throw refused;
            }
            LOG.log(System.Logger.Level.DEBUG, "the release of {0} was retried and found it released, perhaps by its"
                    + " first attempt: {1}", token, refused.getMessage());
        } catch (SessionExpiredException e) {
            expiredByServer(e);
            throw e;
        } catch (SessionUnauthenticatedException e) {
            unauthenticatedByServer(e);
            throw e;
        }
    }

    /** A release asks to be answered before durable while there is room to keep one more such answer. */
    private ReleaseRequest releaseRequest(FencingToken token) {
        return ReleaseRequest.newBuilder().setToken(Protos.toProto(token)).setSessionId(id).setSessionSecret(secret)
                .setAnswerBeforeDurable(pendingReleases.hasRoom()).build();
    }

    /** A release answered before durable is kept until a durable mark confirms it (see PendingReleases). */
    private void releaseAnswered(FencingToken token, ReleaseResponse response) {
        if (response.hasDurable()) {
            durableSeen(response.getDurable());
        }
        if (response.getPendingSequence() > 0) {
            pendingReleases.add(token, response.getDurable().getIncarnation(), response.getPendingSequence());
        }
    }

    /**
     * Releases {@code token} as {@link DefaultGrant#close()} does: sent on the current endpoint's pipeline without
     * waiting for the answer, which then arrives on the transport's thread ({@link SentRelease}); or, when that
     * cannot be (no pipeline, or {@link ReleasesInFlight#IN_FLIGHT_MAX} releases unanswered), as
     * {@link #releaseToken}, waiting.
     */
    void releaseWithoutWaiting(FencingToken token) {
        releasedTokens.releasing(token);
        ReleasesInFlight inFlight = client.releasesInFlight();
        long ticket = inFlight.begin();
        if (ticket == 0) {
            releaseToken(token);
            return;
        }
        GrantKey key = GrantKey.of(token);
        releasing.add(key);
        boolean sent = false;
        try {
            sent = router().sendWithoutWaiting(LocksGrpc.getReleaseMethod(), releaseRequest(token),
                    new SentRelease(token, key, ticket));
        } finally {
            if (!sent) {
                inFlight.answered(ticket);
                resolved(key);
            }
        }
        if (!sent) {
            releaseToken(token);
        }
    }

    /**
     * The answer to one release sent without waiting, on the transport's thread, which must not block: a failure
     * that leaves the outcome unknown (the stream ended, the leader moved) re-sends it on the client's call
     * threads; a refusal that says the grant is gone already (NOT_HOLDER, the session's end) is its outcome.
     */
    private final class SentRelease implements Pipeline.Answered {
        private final FencingToken token;
        private final GrantKey key;
        private final long ticket;

        SentRelease(FencingToken token, GrantKey key, long ticket) {
            this.token = token;
            this.key = key;
            this.ticket = ticket;
        }

        @Override
        public void answered(Object answer) {
            try {
                releaseAnswered(token, (ReleaseResponse) answer);
            } finally {
                resolved(key); // after releaseAnswered: a pending release stays covered without a gap
                client.releasesInFlight().answered(ticket);
            }
        }

        @Override
        public void failed(StatusRuntimeException failure) {
            try {
                // UNIMPLEMENTED: a server without the pipeline never saw it; the re-sent release goes unary.
                if (!Router.isRetryable(failure)
                        && Status.fromThrowable(failure).getCode() != Status.Code.UNIMPLEMENTED) {
                    resolved(key);
                    refused(token, WireErrors.toException(failure));
                } else if (loss.get() == null) {
                    resendLater(token, key);
                } else {
                    resolved(key); // the session ended: resendRelease would not send it either
                }
            } finally {
                client.releasesInFlight().answered(ticket);
            }
        }
    }

    private void resendLater(FencingToken token, GrantKey key) {
        try {
            client.calls().execute(() -> {
                try {
                    resendRelease(token, "its first answer was lost");
                } finally {
                    resolved(key);
                }
            });
        } catch (RejectedExecutionException clientClosed) {
            resolved(key); // closing the client closes its sessions, which releases their locks
        }
    }

    /** A release sent without waiting was refused: only a refusal that says the grant is gone is expected. */
    private void refused(FencingToken token, FencerException refusal) {
        if (refusal instanceof SessionExpiredException expired) {
            expiredByServer(expired);
        } else if (refusal instanceof SessionUnauthenticatedException unauthenticated) {
            unauthenticatedByServer(unauthenticated);
        } else if (!(refusal instanceof NotHolderException)) {
            LOG.log(System.Logger.Level.WARNING, "the service refused the release of {0} (session {1}): {2}; the lock"
                    + " is released when the session ends", token, id, refusal.getMessage());
        }
    }

    private void resolved(GrantKey key) {
        releasing.remove(key);
        if (releasingWaiters.get() > 0) {
            synchronized (releasing) {
                releasing.notifyAll();
            }
        }
    }

    /**
     * Returns true when {@code token} is a grant this session has released or is releasing: of its lock, this
     * session released, or began to release, that token or a later one (see {@link ReleasedTokens}). An Acquire
     * answered with such a token found the lock still held by this session under that grant, because the release had
     * not taken effect yet when the Acquire applied, or was lost in a restart; that grant is not a new one, and it may
     * be released already, so the caller must not be handed it (see {@link DefaultFencedLock}). Whether the release
     * is still unsettled does not matter: it may have taken effect, and its answer arrived, between the service's
     * answer to the Acquire and the caller reading it. A lock's tokens only grow, so a new grant's token is always
     * above every token of that lock released before.
     */
    boolean releasedAlready(FencingToken token) {
        if (releasedTokens.covers(token) || pendingReleases.covers(token)) {
            return true;
        }
        // Unsettled releases are covered above unless ReleasedTokens forgot their lock meanwhile: look here too. Most
        // hand-outs find none unsettled, and iterating an empty set still walks its whole table: ask its size first.
        if (releasing.isEmpty()) {
            return false;
        }
        for (GrantKey key : releasing) {
            if (key.lock().equals(token.lock()) && key.value() >= token.value()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Releases again, waiting, a grant that an Acquire found still held by this session although it is being
     * released ({@link #releasedAlready}); NOT_HOLDER means the first release took effect meanwhile.
     */
    void releaseAgain(FencingToken token) {
        try {
            releaseToken(token);
        } catch (NotHolderException tookEffect) {
            LOG.log(System.Logger.Level.DEBUG, "the release of {0} took effect meanwhile", token);
        }
    }

    /**
     * Waits, at most {@code timeoutNanos}, until no release of {@code locks} sent without waiting by this session
     * is unsettled: a call that is not ordered behind them on the pipeline (AcquireAll) must not find them held.
     */
    void awaitReleasesOf(Collection<String> locks, long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        releasingWaiters.incrementAndGet();
        try {
            synchronized (releasing) {
                while (releasingAny(locks)) {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        return;
                    }
                    TimeUnit.NANOSECONDS.timedWait(releasing, remaining);
                }
            }
        } finally {
            releasingWaiters.decrementAndGet();
        }
    }

    private boolean releasingAny(Collection<String> locks) {
        for (GrantKey key : releasing) {
            if (locks.contains(key.lock())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Takes a durable mark from an answer of the service: it confirms the releases and grants answered before durable
     * that it covers, and re-sends, on the client's call threads, the releases it shows the service may have lost in a
     * restart; then reports the grants it shows may be lost and gives their places up ({@link ProvisionalGrants}).
     */
    void durableSeen(DurableMark mark) {
        for (FencingToken token : pendingReleases.observe(mark)) {
            try {
                client.calls().execute(() -> resendRelease(token, "the service restarted before it was durable, and"
                        + " had lost it"));
            } catch (RejectedExecutionException clientClosed) {
                return; // closing the client closes its sessions, which releases their locks
            }
        }
        provisionalGrants.observe(mark);
    }

    /** The grants this session was answered before they were durable, and the acquires it has in flight. */
    ProvisionalGrants provisionalGrants() {
        return provisionalGrants;
    }

    /**
     * Tells the holder of {@code token}, if it has not released it, that the grant may be lost: it was answered before
     * it was durable, and a durable mark of another incarnation came first.
     */
    void lostBeforeDurable(FencingToken token) {
        Tracked tracked = grants.remove(GrantKey.of(token));
        if (tracked == null) {
            return; // released by its holder, or ended otherwise and told so
        }
        LOG.log(System.Logger.Level.WARNING, "grant {0}#{1} of session {2} may be lost: it was answered before it"
                + " was durable, and the service restarted or failed a log entry first", token.lock(),
                Long.toString(token.value()), id);
        notify(() -> tracked.loss().complete(DefaultGrant.notDurable(tracked.token(), id)));
    }

    private void resendRelease(FencingToken token, String why) {
        if (loss.get() != null) {
            return; // the session's end released its locks
        }
        ReleaseRequest request = ReleaseRequest.newBuilder().setToken(Protos.toProto(token)).setSessionId(id)
                .setSessionSecret(secret).build();
        try {
            router().call("Release " + token, calls -> calls.call(LocksGrpc.getReleaseMethod(), request));
            LOG.log(System.Logger.Level.INFO, "re-sent the release of {0} (session {1}): {2}", token, id, why);
        } catch (NotHolderException e) {
            LOG.log(System.Logger.Level.DEBUG, "the release of {0} had been durable: {1}", token, e.getMessage());
        } catch (SessionExpiredException | SessionUnauthenticatedException e) {
            LOG.log(System.Logger.Level.DEBUG, "session {0} ended: its locks are released", id);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not re-send the release of {0} (session {1}); trying again at"
                    + " the next keepalive: {2}", token, id, e.getMessage());
            pendingReleases.retry(token);
        }
    }

    @Override
    public boolean isAlive() {
        if (loss.get() != null) {
            return false;
        }
        // Asking the keepalive state loses the session when its local lease has ended, however late the tick is.
        client.keepAliver().leaseRemainingNanos(id);
        return loss.get() == null;
    }

    @Override
    public Duration leaseRemaining() {
        if (loss.get() != null) {
            return Duration.ZERO;
        }
        long remainingNanos = client.keepAliver().leaseRemainingNanos(id).orElse(0);
        return loss.get() == null ? Duration.ofNanos(remainingNanos) : Duration.ZERO;
    }

    @Override
    public CompletionStage<Duration> jeopardy() {
        return jeopardy.minimalCompletionStage();
    }

    @Override
    public CompletionStage<SessionLoss> lost() {
        return lostView;
    }

    @Override
    public CompletionStage<SessionLoss> ended() {
        return endedView;
    }

    /** Called by the keepalive thread when an episode of jeopardy begins, with the local lease left then. */
    void enteredJeopardy(long remainingNanos) {
        CompletableFuture<Duration> episode = jeopardy;
        Duration remaining = Duration.ofNanos(Math.max(0, remainingNanos));
        try {
            client.events().execute(() -> episode.complete(remaining));
        } catch (RejectedExecutionException clientClosed) {
            episode.complete(remaining);
        }
    }

    /** Called by the keepalive thread when an acknowledgement ends the episode: the next call waits for another. */
    void leftJeopardy() {
        synchronized (jeopardyLock) {
            if (loss.get() == null) {
                jeopardy = new CompletableFuture<>();
            }
        }
    }

    /**
     * Tracks a grant of {@code token} until it is released ({@link #untrack}) and returns its loss, shared with the
     * other grant objects of that token: completed when the grant is revoked (at once if the service named the
     * revocation already) or the session is lost (at once if it was lost before).
     */
    CompletableFuture<GrantLoss> track(FencingToken token) {
        Tracked tracked = grants.computeIfAbsent(GrantKey.of(token), key -> new Tracked(token,
                new CompletableFuture<>()));
        tellIfEndedAlready(tracked);
        return tracked.loss();
    }

    /** Tracks {@code loss} again after its grant's release failed: the grant is still held. */
    void retrack(FencingToken token, CompletableFuture<GrantLoss> loss) {
        Tracked again = new Tracked(token, loss);
        Tracked tracked = grants.putIfAbsent(GrantKey.of(token), again);
        if (tracked != null && tracked.loss() != loss) {
            tracked.loss().whenComplete((ending, failure) -> loss.complete(ending)); // acquired again meanwhile: rare
        }
        tellIfEndedAlready(tracked == null ? again : tracked);
    }

    private void tellIfEndedAlready(Tracked tracked) {
        FencingToken token = tracked.token();
        CompletableFuture<GrantLoss> loss = tracked.loss();
        GrantKey key = GrantKey.of(token);
        String revokedBy = revocationsKnown.revokedBy(key.lock(), key.value());
        if (revokedBy != null && grants.remove(key, tracked)) {
            notify(() -> loss.complete(DefaultGrant.revoked(token, id, revokedBy)));
        }
        SessionLoss known = this.loss.get();
        // A loss recorded before the put may have missed this grant: tell it here (completing twice is harmless).
        if (known != null && grants.remove(key, tracked) && known.cause() != SessionLoss.Cause.CLOSED) {
            notify(() -> loss.complete(DefaultGrant.sessionLost(token, known)));
        }
    }

    /** Returns how many grants this session tracks (for tests): one entry a grant, whatever its objects. */
    int grantsTracked() {
        return grants.size();
    }

    /** Returns the end of the term of {@code token}, shared by every Leadership of it, forgotten once complete. */
    CompletableFuture<Void> termEnded(FencingToken token) {
        GrantKey key = GrantKey.of(token);
        CompletableFuture<Void> fresh = new CompletableFuture<>();
        CompletableFuture<Void> ended = termsEnded.computeIfAbsent(key, known -> fresh);
        if (ended == fresh) {
            fresh.whenComplete((done, failure) -> termsEnded.remove(key, fresh));
        }
        return ended;
    }

    /** Stops tracking the grant of {@code token}: it is released, or being released, and so is every object of it. */
    void untrack(FencingToken token, CompletableFuture<GrantLoss> loss) {
        grants.computeIfPresent(GrantKey.of(token), (key, tracked) -> tracked.loss() == loss ? null : tracked);
    }

    /**
     * Called by the keepalive thread with the grants the service says were revoked from this session (repeated in
     * every answer): each one not known yet is told to its grant, on the client's event threads.
     */
    void revokedByService(List<RevokedGrant> revoked) {
        for (RevokedGrant named : revoked) {
            GrantKey key = new GrantKey(named.getToken().getLock(), named.getToken().getValue());
            if (!revocationsKnown.learn(key.lock(), key.value(), named.getRevokedBy())) {
                continue;
            }
            LOG.log(System.Logger.Level.WARNING, "grant {0}#{1} of session {2} was revoked by ''{3}''", key.lock(),
                    Long.toString(key.value()), id, named.getRevokedBy());
            Tracked tracked = grants.remove(key);
            if (tracked != null) {
                notify(() -> tracked.loss().complete(DefaultGrant.revoked(tracked.token(), id,
                        named.getRevokedBy())));
            }
        }
    }

    private void notify(Runnable listener) {
        try {
            client.events().execute(listener);
        } catch (RejectedExecutionException clientClosed) {
            listener.run();
        }
    }

    /** Returns the loss when the session is known lost, else null; set before {@link #lost()} completes. */
    SessionLoss knownLoss() {
        return loss.get();
    }

    Router router() {
        return client.router();
    }

    /**
     * Makes the grants of {@code tokens} (with their {@code sequencers}), tracked, unless one of them this session
     * released or is releasing ({@link #releasedAlready}); returns null then. One step against
     * {@link #claimForGiveBack}, so that an acquire never hands out a grant an interrupted acquire's give-back releases.
     */
    List<DefaultGrant> handOut(List<FencingToken> tokens, List<String> sequencers) {
        synchronized (handOutGuard) {
            for (FencingToken token : tokens) {
                if (releasedAlready(token)) {
                    return null;
                }
            }
            List<DefaultGrant> made = new ArrayList<>(tokens.size());
            for (int i = 0; i < tokens.size(); i++) {
                made.add(new DefaultGrant(this, tokens.get(i), sequencers.get(i)));
            }
            return made;
        }
    }

    /**
     * Claims {@code token}, granted to an interrupted acquire, for release: false when an acquire of this session
     * handed it out meanwhile (the holder acquiring again gets its grant back), else it is noted as being released,
     * so that no acquire hands it out from now on, and the caller releases it.
     */
    boolean claimForGiveBack(FencingToken token) {
        synchronized (handOutGuard) {
            if (grants.containsKey(GrantKey.of(token))) {
                return false;
            }
            releasedTokens.releasing(token);
            return true;
        }
    }

    DefaultFencerClient client() {
        return client;
    }

    /**
     * Throws when the session is known to be lost, so calls through it fail at once.
     *
     * @throws SessionExpiredException naming the loss
     */
    void checkAlive() {
        SessionLoss known = loss.get();
        if (known != null) {
            throw ended(known);
        }
    }

    /**
     * Returns the failure of a call, {@code operation}, that was waiting for a grant when this session ended: the
     * service may have granted it meanwhile, and such a grant ends with the session.
     */
    SessionExpiredException endedWhileWaiting(String operation) {
        return new SessionExpiredException(id, operation + " gave up its wait: " + ended(loss.get()).getMessage()
                + "; whether it was granted is unknown, and a grant it may have got ends with the session");
    }

    private SessionExpiredException ended(SessionLoss known) {
        return new SessionExpiredException(id, "session " + id + " is " + (known.cause() == SessionLoss.Cause.CLOSED
                ? "closed" : "lost (" + known.cause() + "): " + known.detail()));
    }

    /**
     * Lets an acquire hand out {@code made}, the grants (tracked already) an answer of the service brought, unless
     * the session ended while that answer was on its way: the lock may be someone else's by then (a local lease that
     * ended), or was released with a close. The grants are then ended here (a session lost as UNREACHABLE may still
     * hold them on the service) and the caller gets the session's end. A loss after this check reaches the grants
     * through their tracking.
     *
     * @throws SessionExpiredException naming the loss
     */
    void checkHandOut(List<DefaultGrant> made) {
        if (isAlive()) {
            return;
        }
        for (DefaultGrant grant : made) {
            try {
                grant.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "the release of {0}, granted after session {1} ended, failed; it"
                        + " ends with the session: {2}", grant.token(), id, e.getMessage());
            }
        }
        throw ended(loss.get());
    }

    /**
     * Records the loss, once; listeners of {@link #lost()} run on the client's event threads, never on the
     * keepalive thread. Returns false when the session was already lost.
     */
    boolean lose(SessionLoss.Cause cause, String detail) {
        return lose(cause, detail, client.events());
    }

    private boolean lose(SessionLoss.Cause cause, String detail, Executor listeners) {
        SessionLoss ending = new SessionLoss(id, cause, detail);
        if (!loss.compareAndSet(null, ending)) {
            return false;
        }
        client.keepAliver().unregister(id);
        client.forget(this);
        if (cause != SessionLoss.Cause.CLOSED) {
            LOG.log(System.Logger.Level.WARNING, "session {0} lost ({1}): {2}", id, cause, detail);
        }
        CompletableFuture<Duration> episode;
        synchronized (jeopardyLock) {
            episode = jeopardy;
        }
        List<Tracked> held = new ArrayList<>();
        for (GrantKey key : grants.keySet()) {
            Tracked tracked = grants.remove(key);
            if (tracked != null) { // one tracked meanwhile is told by track, which finds the loss
                held.add(tracked);
            }
        }
        // In one task and in this order, so that jeopardy's listeners always run before (never after) lost's.
        Runnable notify = () -> {
            episode.complete(Duration.ZERO);
            if (cause != SessionLoss.Cause.CLOSED) { // a close is asked for, not lost
                held.forEach(grant -> grant.loss().complete(DefaultGrant.sessionLost(grant.token(), ending)));
                lost.complete(ending);
            }
            ended.complete(ending);
        };
        try {
            listeners.execute(notify);
        } catch (RejectedExecutionException clientClosed) {
            notify.run();
        }
        return true;
    }

    /** Records that the server answered SESSION_EXPIRED for this session. */
    void expiredByServer(SessionExpiredException e) {
        if (e.sessionId() == id || e.sessionId() == 0) {
            lose(SessionLoss.Cause.EXPIRED, e.getMessage());
        }
    }

    /** Records that the server refused this session's secret: nothing made for the session is accepted any more. */
    void unauthenticatedByServer(SessionUnauthenticatedException e) {
        if (e.sessionId() == id) {
            lose(SessionLoss.Cause.UNAUTHENTICATED, e.getMessage());
        }
    }

    @Override
    public void close() {
        closeSession(true);
    }

    /**
     * Closes the session; asks the service to close it when {@code askService} (best effort). Returns false when
     * the service could not be reached, so a closing client stops asking for its other sessions.
     */
    boolean closeSession(boolean askService) {
        if (!closeRequested.compareAndSet(false, true)) {
            return true;
        }
        boolean wasAlive = lose(SessionLoss.Cause.CLOSED, "closed by the application", Runnable::run);
        pendingReleases.clear(); // closing the session releases its locks, lost releases included
        provisionalGrants.clear(); // and lost grants
        SessionLoss known = loss.get();
        // A session lost as UNREACHABLE may still live on the service: closing it frees its locks sooner.
        if (!askService || !(wasAlive || known.cause() == SessionLoss.Cause.UNREACHABLE)) {
            return true;
        }
        try {
            CloseSessionRequest request = CloseSessionRequest.newBuilder().setSessionId(id).setSessionSecret(secret)
                    .build();
            router().call("CloseSession " + id, calls -> calls.call(LocksGrpc.getCloseSessionMethod(), request));
            return true;
        } catch (UnavailableException | IllegalStateException e) {
            LOG.log(System.Logger.Level.WARNING, "could not reach the service to close session {0}; it expires after "
                    + "its ttl of {1} ms: {2}", id, ttl.toMillis(), e.getMessage());
            return false;
        } catch (FencerException e) {
            LOG.log(System.Logger.Level.WARNING, "the service refused to close session {0}: {1}", id, e.getMessage());
            return true;
        }
    }

    @Override
    public String toString() {
        SessionLoss known = loss.get();
        return "Session[" + id + ", ttl " + ttl.toMillis() + " ms, " + (known == null ? "alive" : known.cause()) + "]";
    }
}

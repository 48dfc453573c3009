package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.client.SessionLoss;
import io.fencer.core.Ticker;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Keeps a client's sessions alive over one bidirectional {@code KeepAlive} stream shared by all of them.
 *
 * <p>One daemon thread ticks every {@value #TICK_MILLIS} ms and does everything: it sends a request for each
 * session every ttl/3 (by the injected {@link Ticker}), matches answers to the requests they acknowledge, loses
 * sessions, and reopens the stream. All stream and lease state is confined to that thread, so it needs no locks;
 * gRPC callbacks only hand their events over to it.
 *
 * <p>A session's lease is known to run from the send time of the last acknowledged request (the server renewed
 * it on receipt, which is later). The <em>local</em> lease ends a ttl less the {@linkplain #driftMarginNanos drift
 * margin} after that send: the server measures the ttl by its own clock, which may run faster than ours. After two
 * keepalive intervals without a newer acknowledgement the session is in jeopardy; the tick before the local lease
 * ends (or any reader that finds it ended) loses it as UNREACHABLE, so the loss is never later than the local end:
 * the server has expired it, or will. An answer with {@code expired} loses it as EXPIRED.
 * An answer with an {@code error} (the service refused the session's secret) loses it as UNAUTHENTICATED. An
 * answer that names revoked grants tells them to the session, which tells its {@link io.fencer.client.Grant}s.
 *
 * <p>The stream is reopened on the leader after an error (following a NOT_LEADER answer's address), and also when
 * a request stays unanswered for a whole keepalive interval: a paused or partitioned leader sends no error, and
 * waiting for the ttl would lose every session even when a new leader is elected in time.
 */
final class KeepAliver implements AutoCloseable {
    static final long TICK_MILLIS = 25;
    private static final long TICK_NANOS = MILLISECONDS.toNanos(TICK_MILLIS);
    /**
     * The part of the ttl, in percent, by which the local lease ends early: the server counts the ttl by its clock
     * and we count it by ours, and the two may run at different rates. Quartz oscillators differ by tens of ppm;
     * 1% also covers virtual machines whose clocks are slewed or run slow under load.
     */
    static final long DRIFT_MARGIN_PERCENT = 1;
    /** Taken off the local lease on top of the rate margin: for readings and handovers between threads. */
    static final long DRIFT_MARGIN_FIXED_NANOS = MILLISECONDS.toNanos(5);
    /** Requests remembered per session while unanswered; more would only be older than the lease anyway. */
    private static final int OUTSTANDING_MAX = 16;
    private static final System.Logger LOG = System.getLogger(KeepAliver.class.getName());

    /** The keepalive state of one session; mutable fields belong to the keepalive thread. */
    private static final class Lease {
        final DefaultSession session;
        final long ttlNanos;
        final long intervalNanos;
        /** How long the local lease runs from {@link #leaseStartNanos}: the ttl less the drift margin. */
        final long localLeaseNanos;
        /** Written by the keepalive thread only; volatile for readers elsewhere (leaseRemaining, diagnostics). */
        volatile long leaseStartNanos;
        long lastSentNanos;
        boolean due;
        /** True from the tick that found two intervals without acknowledgement until the next acknowledgement. */
        boolean inJeopardy;
        final ArrayDeque<Long> outstandingSentNanos = new ArrayDeque<>();

        Lease(DefaultSession session, long openedNanos) {
            this.session = session;
            this.ttlNanos = session.ttl().toNanos();
            this.intervalNanos = ttlNanos / 3;
            this.localLeaseNanos = ttlNanos - driftMarginNanos(ttlNanos);
            this.leaseStartNanos = openedNanos;
            this.lastSentNanos = openedNanos;
        }

        long localEndNanos() {
            return leaseStartNanos + localLeaseNanos;
        }

        /** True when no request was acknowledged for two intervals: the one sent after it waited a whole interval. */
        boolean jeopardized(long nowNanos) {
            return nowNanos - leaseStartNanos >= 2 * intervalNanos;
        }
    }

    private final Router router;
    private final Ticker ticker;
    private final ScheduledThreadPoolExecutor thread;
    private final Map<Long, Lease> leases = new ConcurrentHashMap<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private volatile boolean closed;
    private volatile String lastStreamError = "none";
    /** Ticks completed; written by the keepalive thread only, read by tests that wait for a tick to have judged. */
    private volatile long ticksRun;

    // Confined to the keepalive thread.
    private StreamObserver<KeepAliveRequest> requests;
    private String streamEndpoint;
    private long generation;
    private long reopenNotBeforeNanos;
    private long backoffNanos = RetryBudget.BACKOFF_INITIAL_NANOS;

    KeepAliver(Router router, Ticker ticker) {
        this.router = router;
        this.ticker = ticker;
        this.thread = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fencer-keepalive");
            thread.setDaemon(true);
            return thread;
        });
        this.thread.setRemoveOnCancelPolicy(true);
    }

    /** Starts keeping {@code session} alive; its lease is known to run from {@code openedNanos} (ticker time). */
    void register(DefaultSession session, long openedNanos) {
        if (closed) {
            throw new IllegalStateException("the FencerClient is closed");
        }
        leases.put(session.id(), new Lease(session, openedNanos));
        if (started.compareAndSet(false, true)) {
            thread.scheduleWithFixedDelay(this::tick, TICK_MILLIS, TICK_MILLIS, MILLISECONDS);
        }
    }

    /** Stops keeping the session alive. */
    void unregister(long sessionId) {
        leases.remove(sessionId);
    }

    /** Returns the ticker time from which the session's lease is known to run, or empty when not kept alive. */
    OptionalLong leaseStartNanos(long sessionId) {
        Lease lease = leases.get(sessionId);
        return lease == null ? OptionalLong.empty() : OptionalLong.of(lease.leaseStartNanos);
    }

    /** Returns how much shorter than its ttl a local lease is: 1% of the ttl, plus 5 ms. */
    static long driftMarginNanos(long ttlNanos) {
        return ttlNanos / 100 * DRIFT_MARGIN_PERCENT + DRIFT_MARGIN_FIXED_NANOS;
    }

    /**
     * Returns the ticker nanoseconds left of the session's local lease, or empty when it is not kept alive. Any
     * thread may ask; one that finds the local lease ended loses the session as UNREACHABLE then and there and gets
     * 0, so no reader sees a lease run past its local end however late the keepalive thread is.
     */
    OptionalLong leaseRemainingNanos(long sessionId) {
        Lease lease = leases.get(sessionId);
        if (lease == null) {
            return OptionalLong.empty();
        }
        long now = ticker.nanoTime();
        long remainingNanos = lease.localEndNanos() - now;
        if (remainingNanos <= 0) {
            loseUnreachable(lease, now);
            return OptionalLong.of(0);
        }
        return OptionalLong.of(remainingNanos);
    }

    private void tick() {
        try {
            if (!closed) {
                tickOnce();
            }
        } catch (RuntimeException e) {
            // A periodic task that throws is never run again: log and go on.
            LOG.log(System.Logger.Level.WARNING, "keepalive tick failed", e);
        }
        ticksRun++;
    }

    /** Returns how many ticks have completed. */
    long ticksRun() {
        return ticksRun;
    }

    private void tickOnce() {
        long now = ticker.nanoTime();
        boolean stalled = false;
        for (Lease lease : leases.values()) {
            if (lease.session.knownLoss() != null) {
                leases.remove(lease.session.id(), lease);
            } else if (lease.localEndNanos() - now <= TICK_NANOS) {
                // The next tick may come after the local lease end: this one is the last that is in time.
                loseUnreachable(lease, now);
            } else {
                if (!lease.inJeopardy && lease.jeopardized(now)) {
                    lease.inJeopardy = true;
                    LOG.log(System.Logger.Level.WARNING, "session {0} in jeopardy: no keepalive acknowledged for "
                            + "{1} ms, {2} ms of its local lease left; last stream error: {3}", lease.session.id(),
                            Long.toString(NANOSECONDS.toMillis(now - lease.leaseStartNanos)),
                            Long.toString(NANOSECONDS.toMillis(lease.localEndNanos() - now)), lastStreamError);
                    lease.session.enteredJeopardy(lease.localEndNanos() - now);
                }
                Long oldest = lease.outstandingSentNanos.peekFirst();
                stalled |= oldest != null && now - oldest >= lease.intervalNanos;
            }
        }
        if (stalled && requests != null) {
            String endpoint = streamEndpoint;
            lastStreamError = "keepalive unanswered for an interval by " + endpoint;
            closeStream();
            router.suspect(endpoint);
            router.advanceFrom(endpoint);
            markAllDue();
        }
        if (leases.isEmpty()) {
            closeStream();
            return;
        }
        List<Lease> due = new ArrayList<>();
        for (Lease lease : leases.values()) {
            if (lease.due || now - lease.lastSentNanos >= lease.intervalNanos) {
                due.add(lease);
            }
        }
        if (!due.isEmpty() && openStream()) {
            for (Lease lease : due) {
                if (requests == null) {
                    break; // a send failed and closed the stream; the next tick reopens it
                }
                send(lease, now);
            }
        }
    }

    private void send(Lease lease, long now) {
        try {
            requests.onNext(KeepAliveRequest.newBuilder().setSessionId(lease.session.id())
                    .setSessionSecret(lease.session.secret()).build());
        } catch (RuntimeException e) {
            streamFailed(generation, e);
            return;
        }
        lease.due = false;
        lease.lastSentNanos = now;
        if (lease.outstandingSentNanos.size() < OUTSTANDING_MAX) {
            // When full, dropping the newest is safe: answers then match older send times, a shorter lease.
            lease.outstandingSentNanos.addLast(now);
        }
    }

    /** Opens the stream on the current endpoint unless it is open or backing off; returns true when open. */
    private boolean openStream() {
        if (requests != null) {
            return true;
        }
        if (System.nanoTime() - reopenNotBeforeNanos < 0) {
            return false;
        }
        String endpoint = router.current();
        long streamGeneration = ++generation;
        try {
            requests = router.asyncStub(endpoint).keepAlive(new Responses(streamGeneration));
        } catch (IllegalStateException closedMeanwhile) {
            return false;
        }
        streamEndpoint = endpoint;
        return true;
    }

    private void closeStream() {
        if (requests == null) {
            return;
        }
        generation++; // events of the old stream, its cancellation included, are now ignored
        StreamObserver<KeepAliveRequest> old = requests;
        requests = null;
        for (Lease lease : leases.values()) {
            lease.outstandingSentNanos.clear();
        }
        try {
            old.onError(Status.CANCELLED.withDescription("keepalive stream replaced").asRuntimeException());
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "cancelling the keepalive stream failed", e);
        }
    }

    private void markAllDue() {
        for (Lease lease : leases.values()) {
            lease.due = true;
        }
    }

    private void answered(long streamGeneration, KeepAliveResponse response) {
        if (streamGeneration != generation) {
            return;
        }
        Lease lease = leases.get(response.getSessionId());
        if (lease == null) {
            return;
        }
        if (response.getExpired()) {
            lose(lease, SessionLoss.Cause.EXPIRED, "the service says session " + lease.session.id()
                    + " has expired or is unknown: its locks are gone");
            return;
        }
        if (response.hasError()) {
            // The service refused the keepalive (SESSION_UNAUTHENTICATED): it renews nothing sent for this session.
            lose(lease, SessionLoss.Cause.UNAUTHENTICATED, "the service refused the keepalive of session "
                    + lease.session.id() + " (" + Status.fromCodeValue(response.getError().getStatusCode()).getCode()
                    + "): " + response.getError().getDescription() + "; its locks end with its lease");
            return;
        }
        if (response.getRevokedCount() > 0) {
            lease.session.revokedByService(response.getRevokedList());
        }
        if (response.hasDurable()) {
            lease.session.durableSeen(response.getDurable());
        }
        Long sentNanos = lease.outstandingSentNanos.pollFirst();
        if (sentNanos != null && sentNanos - lease.leaseStartNanos > 0) {
            lease.leaseStartNanos = sentNanos;
        }
        if (lease.inJeopardy && !lease.jeopardized(ticker.nanoTime())) {
            lease.inJeopardy = false;
            lease.session.leftJeopardy();
        }
        backoffNanos = RetryBudget.BACKOFF_INITIAL_NANOS;
    }

    private void streamFailed(long streamGeneration, Throwable failure) {
        if (streamGeneration != generation || closed) {
            return;
        }
        String endpoint = streamEndpoint;
        lastStreamError = endpoint + ": " + Router.describe(failure);
        closeStream();
        if (Router.isRetryable(failure)) {
            LOG.log(System.Logger.Level.DEBUG, "keepalive stream failed, reopening: {0}", lastStreamError);
        } else {
            LOG.log(System.Logger.Level.WARNING, "keepalive stream failed, reopening: {0}", lastStreamError);
        }
        router.onFailure(endpoint, failure);
        reopenNotBeforeNanos = System.nanoTime() + RetryBudget.jitter(backoffNanos);
        backoffNanos = Math.min(backoffNanos * 2, RetryBudget.BACKOFF_MAX_NANOS);
        markAllDue();
    }

    private void loseUnreachable(Lease lease, long nowNanos) {
        lose(lease, SessionLoss.Cause.UNREACHABLE, "no keepalive of session " + lease.session.id()
                + " was acknowledged for " + NANOSECONDS.toMillis(nowNanos - lease.leaseStartNanos)
                + " ms: its local lease (the ttl of " + NANOSECONDS.toMillis(lease.ttlNanos) + " ms less "
                + NANOSECONDS.toMillis(lease.ttlNanos - lease.localLeaseNanos) + " ms for clock drift) ends; "
                + "the service has expired it or will; last stream error: " + lastStreamError);
    }

    private void lose(Lease lease, SessionLoss.Cause cause, String detail) {
        leases.remove(lease.session.id(), lease);
        lease.session.lose(cause, detail);
    }

    /** Hands a stream event to the keepalive thread; after close there is no one to hand it to. */
    private void onKeepAliveThread(Runnable event) {
        try {
            thread.execute(event);
        } catch (RejectedExecutionException closedMeanwhile) {
            // The client is closed: nothing to keep alive.
        }
    }

    /** The answers of one stream, tagged with its generation so those of replaced streams are ignored. */
    private final class Responses implements StreamObserver<KeepAliveResponse> {
        private final long streamGeneration;

        Responses(long streamGeneration) {
            this.streamGeneration = streamGeneration;
        }

        @Override
        public void onNext(KeepAliveResponse response) {
            onKeepAliveThread(() -> answered(streamGeneration, response));
        }

        @Override
        public void onError(Throwable failure) {
            onKeepAliveThread(() -> streamFailed(streamGeneration, failure));
        }

        @Override
        public void onCompleted() {
            Throwable ended = Status.UNAVAILABLE.withDescription("the server ended the keepalive stream")
                    .asRuntimeException();
            onKeepAliveThread(() -> streamFailed(streamGeneration, ended));
        }
    }

    /** Stops keepalives and closes the stream. Sessions are closed by the client before. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            thread.execute(this::closeStream);
        } catch (RejectedExecutionException alreadyShutDown) {
            return;
        }
        thread.shutdown();
        try {
            thread.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

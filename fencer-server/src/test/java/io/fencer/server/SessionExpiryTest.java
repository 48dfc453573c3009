package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.keepAliveOnce;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.raft.RaftNode;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Session leases, expiry and lock-delay, driven by a manual ticker: time moves only when a test advances it, and
 * "the keeper has looked at the new time" is observed through a canary session that must expire with it.
 */
class SessionExpiryTest {
    private static final long SHORT_TTL_MILLIS = 5_000;
    private static final long LONG_TTL_MILLIS = 3_600_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private final AtomicInteger canaries = new AtomicInteger();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    private void start(ServerConfig config) throws Exception {
        server = FencerServer.start(config);
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void acquire_whenHolderSessionExpires_grantsWaiterNextTokenAndOldTokenIsRefused() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        TestSession holder = openSession(stub, SHORT_TTL_MILLIS);
        TestSession waiter = openSession(stub, LONG_TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "orders", 0);
        ListenableFuture<AcquireResponse> waiting = waitFor(waiter, "orders");

        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1));

        AcquireResponse granted = waiting.get(30, TimeUnit.SECONDS);
        long old = held.getToken().getValue();
        assertThat(granted.getAcquired()).isTrue();
        assertThat(granted.getToken().getValue()).isEqualTo(old + 1);
        // The old holder's session has ended, so it releases nothing; the new holder cannot release the old token.
        ErrorDetail ended = failure(() -> release(stub, holder, held.getToken()));
        assertThat(ended.getReason()).isEqualTo(Reason.REASON_SESSION_EXPIRED);
        assertThat(ended.getSessionId()).isEqualTo(holder.id());
        ErrorDetail refused = failure(() -> release(stub, waiter, held.getToken()));
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(refused.getPresentedToken()).isEqualTo(old);
        assertThat(refused.getCurrentToken()).isEqualTo(old + 1);
        StatusRuntimeException status = catchThrowableOfType(
                StatusRuntimeException.class, () -> release(stub, waiter, held.getToken()));
        assertThat(status.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        ValidateResponse validated = stub.validate(ValidateRequest.newBuilder().setToken(held.getToken()).build());
        assertThat(validated.getStatus()).isEqualTo(ValidateResponse.Status.SUPERSEDED);
        assertThat(validated.getSupersededBy()).isEqualTo(old + 1);
        assertThat(keepAliveOnce(channel, holder).getExpired()).isTrue();
        assertThat(describe(stub, "orders").getHolder()).isEqualTo(granted.getToken());
    }

    @Test
    void acquire_waitingWhenItsOwnSessionExpires_failsWithSessionExpired() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        TestSession holder = openSession(stub, LONG_TTL_MILLIS);
        TestSession waiter = openSession(stub, SHORT_TTL_MILLIS);
        acquire(stub, holder, "busy", 0);
        ListenableFuture<AcquireResponse> waiting = waitFor(waiter, "busy");

        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1));

        ExecutionException failed = catchThrowableOfType(ExecutionException.class,
                () -> waiting.get(30, TimeUnit.SECONDS));
        assertThat(failed.getCause()).isInstanceOf(StatusRuntimeException.class);
        ErrorDetail detail = TestServers.detail((StatusRuntimeException) failed.getCause());
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_SESSION_EXPIRED);
        assertThat(detail.getSessionId()).isEqualTo(waiter.id());
        assertThat(waiterSessions(stub, "busy")).isEmpty();
    }

    @Test
    void keepAlive_beforeTheDeadline_keepsTheSessionPastItsFirstTtl() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        TestSession session = openSession(stub, SHORT_TTL_MILLIS);
        AcquireResponse held = acquire(stub, session, "kept", 0);
        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS - 1_000));
        assertThat(keepAliveOnce(channel, session).getTtlMillis()).isEqualTo(SHORT_TTL_MILLIS);
        String canary = canary();

        ticker.advance(Duration.ofMillis(2_000)); // past the first deadline, before the renewed one

        awaitExpired(canary);
        assertThat(describe(stub, "kept").getHolder()).isEqualTo(held.getToken());
        assertThat(keepAliveOnce(channel, session).getExpired()).isFalse();
    }

    @Test
    void lockDelay_afterExpiry_keepsLockUnavailableUntilTheDelayPasses() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker).withLockDelay(Duration.ofSeconds(10)));
        TestSession holder = openSession(stub, SHORT_TTL_MILLIS);
        TestSession waiter = openSession(stub, LONG_TTL_MILLIS);
        TestSession trier = openSession(stub, LONG_TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "delayed", 0);
        ListenableFuture<AcquireResponse> waiting = waitFor(waiter, "delayed");

        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1));
        await().atMost(WAIT_MAX).until(() -> describe(stub, "delayed").getDelayed());
        String canary = canary();
        ticker.advance(Duration.ofSeconds(5)); // half the delay
        awaitExpired(canary);

        LockInfo during = describe(stub, "delayed");
        assertThat(during.hasHolder()).isFalse();
        assertThat(during.getDelayed()).isTrue();
        assertThat(during.getLastEnd()).isEqualTo(EndCause.END_CAUSE_SESSION_EXPIRED);
        AcquireResponse tried = acquire(stub, trier, "delayed", 0);
        assertThat(tried.getAcquired()).isFalse();
        assertThat(tried.hasHolder()).as("no holder while delayed").isFalse();
        assertThat(waiting.isDone()).isFalse();

        ticker.advance(Duration.ofSeconds(6));

        AcquireResponse granted = waiting.get(30, TimeUnit.SECONDS);
        assertThat(granted.getToken().getValue()).isGreaterThan(held.getToken().getValue());
        assertThat(describe(stub, "delayed").getDelayed()).isFalse();
    }

    @Test
    void lockDelay_afterRelease_grantsTheWaiterAtOnce() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker).withLockDelay(Duration.ofSeconds(10)));
        TestSession holder = openSession(stub, LONG_TTL_MILLIS);
        TestSession waiter = openSession(stub, LONG_TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "handed", 0);
        ListenableFuture<AcquireResponse> waiting = waitFor(waiter, "handed");

        ReleaseResponse released = release(stub, holder, held.getToken());

        AcquireResponse granted = waiting.get(30, TimeUnit.SECONDS);
        assertThat(released.getNext()).isEqualTo(granted.getToken());
        assertThat(granted.getToken().getValue()).isGreaterThan(held.getToken().getValue());
    }

    @Test
    void restart_givesSessionsAGracePeriodThenExpiresThemWithoutKeepalives() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        TestSession session = openSession(stub, SHORT_TTL_MILLIS);
        AcquireResponse held = acquire(stub, session, "survivor", 0);
        TestServers.close(channel);
        server.close();

        ticker.advance(Duration.ofMinutes(10)); // far past the ttl while no server runs
        start(TestServers.singlePeer(dataDir, ticker));

        assertThat(describe(stub, "survivor").getHolder()).isEqualTo(held.getToken());
        String canary = canary();
        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS - 1_000));
        assertThat(keepAliveOnce(channel, session).getExpired()).as("alive in its grace period").isFalse();
        awaitExpired(canary);

        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1)); // no keepalive since the last one

        await().atMost(WAIT_MAX).until(() -> !describe(stub, "survivor").hasHolder());
        assertThat(keepAliveOnce(channel, session).getExpired()).isTrue();
        AcquireResponse next = acquire(stub, openSession(stub, LONG_TTL_MILLIS), "survivor", 0);
        assertThat(next.getToken().getValue()).isGreaterThan(held.getToken().getValue());
    }

    /**
     * Lease safety: a new leader's deadlines are ttl + the takeover bound B, so a keepalive a deposed leader
     * acknowledged just before the takeover never outlives the new leader's view of the session.
     */
    @Test
    void restart_newLeaderGivesTtlPlusTakeoverBound_thenExpires() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        TestSession session = openSession(stub, SHORT_TTL_MILLIS);
        AcquireResponse held = acquire(stub, session, "covered", 0);
        TestServers.close(channel);
        server.close();
        start(TestServers.singlePeer(dataDir, ticker)); // a new term: the keeper takes over every session
        long boundMillis = RaftNode.takeoverBound().toMillis();
        assertThat(boundMillis).isPositive();

        String canary = canary(); // opened after the takeover: ttl alone
        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1));
        awaitExpired(canary);
        assertThat(describe(stub, "covered").getHolder()).as("past ttl, within ttl + B").isEqualTo(held.getToken());

        ticker.advance(Duration.ofMillis(boundMillis));
        await().atMost(WAIT_MAX).until(() -> !describe(stub, "covered").hasHolder());
        assertThat(keepAliveOnce(channel, session).getExpired()).isTrue();
    }

    private ListenableFuture<AcquireResponse> waitFor(TestSession session, String lock) {
        ListenableFuture<AcquireResponse> call = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(session, lock, "wait-" + session.id(), 45_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, lock).contains(session.id()));
        return call;
    }

    /**
     * Opens a session of the shortest ttl holding a lock of its own; once the ticker passes its ttl and the lock
     * is free, the keeper has scanned with the new time (the scan looks at every session at once).
     */
    private String canary() {
        String lock = "canary-" + canaries.incrementAndGet();
        acquire(stub, openSession(stub, 1_000), lock, 0);
        return lock;
    }

    private void awaitExpired(String canaryLock) {
        await().atMost(WAIT_MAX).until(() -> !describe(stub, canaryLock).hasHolder());
    }
}

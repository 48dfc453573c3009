package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.Identities;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The lock service on one real server (Ratis, fsync, gRPC): grants, tokens, queues, restarts. */
class LockServiceTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void acquire_afterRelease_grantsHigherToken() {
        TestSession first = openSession(stub, TTL_MILLIS);
        TestSession second = openSession(stub, TTL_MILLIS);
        AcquireResponse granted = acquire(stub, first, "orders", 0);
        assertThat(granted.getAcquired()).isTrue();
        assertThat(acquire(stub, second, "orders", 0).getAcquired()).as("busy for another session").isFalse();

        release(stub, first, granted.getToken());
        AcquireResponse next = acquire(stub, second, "orders", 0);

        assertThat(next.getAcquired()).isTrue();
        assertThat(next.getToken().getValue()).isGreaterThan(granted.getToken().getValue());
        assertThat(next.getToken().getSequencer()).startsWith("fencer1.");
    }

    @Test
    void acquire_whenLockRecordDroppedAndRecreated_tokenExceedsOld() {
        TestSession session = openSession(stub, TTL_MILLIS);
        AcquireResponse old = acquire(stub, session, "reports", 0);
        release(stub, session, old.getToken());
        LockInfo dropped = describe(stub, "reports");
        assertThat(dropped.hasHolder()).isFalse();
        assertThat(dropped.getLastToken()).as("the floor remembers it").isGreaterThanOrEqualTo(
                old.getToken().getValue());

        AcquireResponse recreated = acquire(stub, session, "reports", 0);

        assertThat(recreated.getToken().getValue()).isGreaterThan(old.getToken().getValue());
    }

    @Test
    void acquire_byHolderAgain_returnsSameToken() {
        TestSession session = openSession(stub, TTL_MILLIS);
        AcquireResponse first = acquire(stub, session, "jobs", "attempt-1", 0);

        AcquireResponse retried = acquire(stub, session, "jobs", "attempt-1", 0);
        AcquireResponse again = acquire(stub, session, "jobs", "attempt-2", 5_000);

        assertThat(retried.getToken()).isEqualTo(first.getToken());
        assertThat(again.getToken()).isEqualTo(first.getToken());
    }

    @Test
    void acquire_retriedWhileWaitingWithSameRequestId_bothCallsGetTheSameGrant() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "queue", 0);
        LocksGrpc.LocksFutureStub async = LocksGrpc.newFutureStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
        AcquireRequest request = TestServers.acquireRequest(waiter, "queue", "same-attempt", 30_000);
        ListenableFuture<AcquireResponse> original = async.acquire(request);
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "queue").contains(waiter.id()));
        ListenableFuture<AcquireResponse> retry = async.acquire(request);
        await().atMost(WAIT_MAX).until(() -> server.pendingAcquires() == 2);

        ReleaseResponse released = release(stub, holder, held.getToken());

        AcquireResponse first = original.get(30, TimeUnit.SECONDS);
        AcquireResponse second = retry.get(30, TimeUnit.SECONDS);
        assertThat(first.getAcquired()).isTrue();
        assertThat(second.getToken()).isEqualTo(first.getToken());
        assertThat(released.getNext()).isEqualTo(first.getToken());
        assertThat(waiterSessions(stub, "queue")).as("one place in the queue, now granted").isEmpty();
    }

    @Test
    void acquire_threeWaiters_areGrantedInArrivalOrder() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "fifo", 0);
        LocksGrpc.LocksFutureStub async = LocksGrpc.newFutureStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
        List<TestSession> sessions = new ArrayList<>();
        List<ListenableFuture<AcquireResponse>> calls = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            TestSession session = openSession(stub, TTL_MILLIS);
            sessions.add(session);
            calls.add(async.acquire(TestServers.acquireRequest(session, "fifo", "wait-" + i, 30_000)));
            await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "fifo").contains(session.id()));
        }
        assertThat(waiterSessions(stub, "fifo")).containsExactlyElementsOf(sessions.stream().map(TestSession::id)
                .toList());

        long previous = held.getToken().getValue();
        io.fencer.api.v1.FencingToken current = held.getToken();
        TestSession holding = holder;
        for (int i = 0; i < 3; i++) {
            ReleaseResponse released = release(stub, holding, current);
            AcquireResponse granted = calls.get(i).get(30, TimeUnit.SECONDS);
            assertThat(granted.getAcquired()).isTrue();
            assertThat(released.getNext()).isEqualTo(granted.getToken());
            assertThat(describe(stub, "fifo").getHolder()).isEqualTo(granted.getToken());
            assertThat(granted.getToken().getValue()).isGreaterThan(previous);
            previous = granted.getToken().getValue();
            current = granted.getToken();
            holding = sessions.get(i);
        }
    }

    @Test
    void acquire_tryWhileTheSessionAlreadyWaits_answersNotAcquiredAndKeepsTheWait() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "patient", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(waiter, "patient", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "patient").contains(waiter.id()));

        AcquireResponse tried = acquire(stub, waiter, "patient", 0);

        assertThat(tried.getAcquired()).isFalse();
        assertThat(tried.getHolder()).isEqualTo(held.getToken());
        release(stub, holder, held.getToken());
        assertThat(waiting.get(30, TimeUnit.SECONDS).getAcquired()).isTrue();
    }

    @Test
    void acquire_whenWaitRunsOut_answersNotAcquiredWithHolderAndLeavesQueue() {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "slow", 0);

        AcquireResponse timedOut = acquire(stub, waiter, "slow", 300);

        assertThat(timedOut.getAcquired()).isFalse();
        assertThat(timedOut.getHolder()).isEqualTo(held.getToken());
        assertThat(describe(stub, "slow").getWaitersList()).isEmpty();
        assertThat(server.pendingAcquires()).isZero();
    }

    @Test
    void close_thenRestartOnSameDataDir_keepsStateAndTokensIncrease() throws Exception {
        TestSession session = openSession(stub, TTL_MILLIS);
        AcquireResponse before = acquire(stub, session, "durable", 0);
        long otherLockToken = acquire(stub, session, "other", 0).getToken().getValue();
        release(stub, session, acquire(stub, session, "other", 0).getToken());

        restart();
        LockInfo after = describe(stub, "durable");
        assertThat(after.getHolder()).isEqualTo(before.getToken());
        release(stub, session, before.getToken());
        AcquireResponse regranted = acquire(stub, session, "durable", 0);
        AcquireResponse otherAgain = acquire(stub, session, "other", 0);

        assertThat(regranted.getToken().getValue()).isGreaterThan(before.getToken().getValue());
        assertThat(otherAgain.getToken().getValue()).isGreaterThan(otherLockToken);
    }

    /**
     * Regression: a session holding 7,000 locks of 256-byte names was answered with every token, some 4.3 MB, past
     * the client's 4 MiB message limit: the close took effect, and the client read it as refused ({@code
     * RESOURCE_EXHAUSTED: gRPC message exceeds maximum size}).
     */
    @Test
    void closeSession_ofManyLocksWithLongNames_answersWithinAClientsMessageLimitAndCountsThemAll() {
        TestSession session = openSession(stub, TTL_MILLIS);
        String padding = "x".repeat(245);
        int held = 7_040;
        for (int first = 0; first < held; first += 64) {
            assertThat(stub.acquireAll(TestServers.acquireAllRequest(session, "many-" + first, 0,
                    i -> String.format(java.util.Locale.ROOT, "%05d-%s", i, padding), first, first + 64))
                    .getAcquired()).isTrue();
        }

        CloseSessionResponse closed = TestServers.closeSession(stub, session);

        assertThat(closed.getReleasedTotal()).isEqualTo(held);
        assertThat(closed.getReleasedList()).as("the first 1,000").hasSize(1_000);
        assertThat(closed.getSerializedSize()).as("bytes, against 4 MiB").isLessThan(1024 * 1024);
        assertThat(TestServers.describe(stub, String.format(java.util.Locale.ROOT, "%05d-%s", held - 1, padding))
                .hasHolder()).as("the last lock is free").isFalse();
    }

    @Test
    void closeSession_releasesItsLocksAndGrantsTheNextWaiter() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "handover", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(waiter, "handover", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "handover").contains(waiter.id()));

        CloseSessionResponse closed = TestServers.closeSession(stub, holder);

        assertThat(closed.getReleasedList()).containsExactly(held.getToken());
        AcquireResponse granted = waiting.get(30, TimeUnit.SECONDS);
        assertThat(granted.getToken().getValue()).isGreaterThan(held.getToken().getValue());
        ValidateResponse old = stub.validate(ValidateRequest.newBuilder().setToken(held.getToken()).build());
        assertThat(old.getStatus()).isEqualTo(ValidateResponse.Status.SUPERSEDED);
        assertThat(old.getSupersededBy()).isEqualTo(granted.getToken().getValue());
    }

    @Test
    void validate_reportsCurrentEndedAndNeverIssued() {
        TestSession session = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, session, "checked", 0);
        ValidateResponse current = stub.validate(ValidateRequest.newBuilder().setToken(held.getToken()).build());
        assertThat(current.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
        assertThat(current.getHolderIdentity()).isEqualTo(Identities.ANONYMOUS);
        assertThat(holderSessionId(current)).as("session ids are not shown").isZero();
        assertThat(current.getLeaseRemainingMillis()).isPositive().isLessThanOrEqualTo(TTL_MILLIS);
        io.fencer.api.v1.FencingToken future = held.getToken().toBuilder()
                .setValue(held.getToken().getValue() + 10).clearSequencer().build();
        assertThat(stub.validate(ValidateRequest.newBuilder().setToken(future).build()).getStatus())
                .isEqualTo(ValidateResponse.Status.NEVER_ISSUED);

        release(stub, session, held.getToken());
        ValidateResponse ended = stub.validate(ValidateRequest.newBuilder().setToken(held.getToken()).build());

        assertThat(ended.getStatus()).isIn(ValidateResponse.Status.ENDED, ValidateResponse.Status.SUPERSEDED);
        assertThat(ended.getLastToken()).isGreaterThanOrEqualTo(held.getToken().getValue());
    }

    @Test
    void list_withPrefix_answersLocksInNameOrder() {
        TestSession session = openSession(stub, TTL_MILLIS);
        acquire(stub, session, "team/b", 0);
        acquire(stub, session, "team/a", 0);
        acquire(stub, session, "other/c", 0);

        ListResponse listed = stub.list(ListRequest.newBuilder().setPrefix("team/").build());
        ListResponse limited = stub.list(ListRequest.newBuilder().setLimit(1).build());

        assertThat(listed.getLocksList()).extracting(LockInfo::getLock).containsExactly("team/a", "team/b");
        assertThat(listed.getLocks(0).getHolderIdentity()).isEqualTo(Identities.ANONYMOUS);
        assertThat(holderSessionId(listed.getLocks(0))).as("session ids are not shown").isZero();
        assertThat(limited.getLocksList()).extracting(LockInfo::getLock).containsExactly("other/c");
    }

    @Test
    void acquire_cancelledByTheClientWhileWaiting_leavesTheQueue() {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        acquire(stub, holder, "abandoned", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(waiter, "abandoned", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "abandoned").contains(waiter.id()));

        waiting.cancel(true);

        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "abandoned").isEmpty());
        await().atMost(WAIT_MAX).until(() -> server.pendingAcquires() == 0);
    }

    @Test
    void close_withAnOpenKeepAliveStream_endsItWithUnavailable() throws Exception {
        TestSession session = openSession(stub, TTL_MILLIS);
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<KeepAliveRequest> requests =
                LocksGrpc.newStub(channel).keepAlive(TestServers.collecting(answers));
        requests.onNext(KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .build());
        assertThat(answers.poll(20, TimeUnit.SECONDS)).isInstanceOf(KeepAliveResponse.class);

        server.close();

        Object ended = answers.poll(20, TimeUnit.SECONDS);
        assertThat(ended).isInstanceOf(StatusRuntimeException.class);
        StatusRuntimeException error = (StatusRuntimeException) ended;
        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(TestServers.detail(error).getReason()).isEqualTo(Reason.REASON_UNAVAILABLE);
    }

    @Test
    void acquire_manyClientsContendingWithWaits_everyGrantHasItsOwnIncreasingToken() throws Exception {
        int clients = 6;
        int cyclesEach = 15;
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        for (int c = 0; c < clients; c++) {
            TestSession session = openSession(stub, TTL_MILLIS);
            Thread thread = new Thread(() -> {
                try {
                    for (int i = 0; i < cyclesEach; i++) {
                        AcquireResponse granted = acquire(stub, session, "contended", 20_000);
                        assertThat(granted.getAcquired()).isTrue();
                        tokens.add(granted.getToken().getValue());
                        release(stub, session, granted.getToken());
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join(120_000);
        }

        assertThat(failures).isEmpty();
        assertThat(tokens).hasSize(clients * cyclesEach).doesNotHaveDuplicates();
        assertThat(describe(stub, "contended").getLastToken()).isEqualTo(Collections.max(tokens));
        assertThat(server.pendingAcquires()).isZero();
    }

    /** Returns the deprecated field a server before session secrets filled, to show it stays empty. */
    @SuppressWarnings("deprecation")
    private static long holderSessionId(ValidateResponse response) {
        return response.getHolderSessionId();
    }

    @SuppressWarnings("deprecation")
    private static long holderSessionId(LockInfo info) {
        return info.getHolderSessionId();
    }

    private void restart() throws Exception {
        TestServers.close(channel);
        server.close();
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }
}

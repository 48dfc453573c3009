package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.closeSession;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-identity quotas on a real server: one identity stops at its quota while another is still served; the counts
 * go down with close, release and expiry, and are rebuilt from the replicated state after a restart; an ACL file
 * sets other quotas for some identities. Named identities come from {@link TestIdentities}; a caller without one is
 * anonymous and counted by its address, {@code anonymous@127.0.0.1} here.
 */
class QuotaTest {
    private static final long TTL_MILLIS = 10_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);
    private static final IdentityQuotas QUOTAS = new IdentityQuotas(3, 4, 1, 2);

    @TempDir
    Path dir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;

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
    void openSession_overSessionsQuota_refusedNamingIdentityAndQuota_whileAnotherIdentityIsServed() throws Exception {
        start(QUOTAS, null);
        for (int i = 0; i < 3; i++) {
            openSession(as("alice"), TTL_MILLIS);
        }

        StatusRuntimeException refused = refusal(() -> openSession(as("alice"), TTL_MILLIS));
        TestSession bobs = openSession(as("bob"), TTL_MILLIS);

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(refused);
        assertQuota(detail, "alice", "sessionsPerIdentityMax", 3);
        assertThat(detail.getMessage()).contains("'alice' has 3 sessions open");
        assertThat(bobs.id()).as("another identity is served").isPositive();
        assertThat(server.stateMachineCounts().sessions()).as("the refused open proposed nothing").isEqualTo(4);
    }

    @Test
    void openSession_anonymousCallers_countedByTheirAddress() throws Exception {
        start(QUOTAS, null);
        for (int i = 0; i < 3; i++) {
            openSession(TestServers.stub(channel), TTL_MILLIS);
        }

        ErrorDetail refused = failure(() -> openSession(TestServers.stub(channel), TTL_MILLIS));

        assertQuota(refused, "anonymous@127.0.0.1", "sessionsPerIdentityMax", 3);
        assertThat(openSession(as("alice"), TTL_MILLIS).id()).isPositive();
    }

    /** The HTTP port's calls reach the same service with the HTTP client's own address as their quota identity. */
    @Test
    void openSession_overTheHttpPort_countedByTheHttpClientsAddress() throws Exception {
        ServerConfig config = TestServers.singlePeer(dir.resolve("data"), ticker).withQuotas(QUOTAS).withHttpPort(0);
        server = FencerServer.start(config);
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        ConnectCalls http = new ConnectCalls(server.httpPort());
        for (int i = 0; i < 2; i++) {
            openSession(TestServers.stub(channel), TTL_MILLIS);
        }
        assertThat(http.json("Locks/OpenSession", "{\"ttlMillis\": 10000}").status()).isEqualTo(200);

        ConnectCalls.Reply refused = http.json("Locks/OpenSession", "{\"ttlMillis\": 10000}");

        assertThat(refused.status()).isEqualTo(429);
        assertThat(refused.errorCode()).isEqualTo("resource_exhausted");
        assertQuota(refused.detail().toBuilder().setMessage(refused.json().get("message").getAsString()).build(),
                "anonymous@127.0.0.1", "sessionsPerIdentityMax", 3);
    }

    @Test
    void sessionsQuota_freedByCloseAndByExpiry() throws Exception {
        start(QUOTAS, null);
        List<TestSession> sessions = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            sessions.add(openSession(as("alice"), TTL_MILLIS));
        }
        closeSession(as("alice"), sessions.get(0));
        TestSession reopened = openSession(as("alice"), TTL_MILLIS);
        failure(() -> openSession(as("alice"), TTL_MILLIS));

        ticker.advance(Duration.ofMillis(TTL_MILLIS + 1)); // nobody keeps alice's sessions alive
        await().atMost(WAIT_MAX).until(() -> server.stateMachineCounts().sessions() == 0);
        List<TestSession> after = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            after.add(openSession(as("alice"), TTL_MILLIS));
        }

        assertThat(reopened.id()).isPositive();
        assertThat(after).hasSize(3);
    }

    @Test
    void locksQuota_countsHeldAndQueued_freedByRelease_andARetryPassesAtTheQuota() throws Exception {
        start(QUOTAS, null);
        TestSession alice = openSession(as("alice"), TTL_MILLIS);
        TestSession bob = openSession(as("bob"), TTL_MILLIS);
        AcquireResponse first = acquire(as("alice"), alice, "a", 0);
        acquire(as("alice"), alice, "b", 0);
        acquire(as("alice"), alice, "c", 0);
        acquire(as("bob"), bob, "busy", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withInterceptors(TestIdentities.as("alice")).withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(alice, "busy", "wait-busy", 45_000));
        await().atMost(WAIT_MAX).until(() -> TestServers.waiterSessions(as("bob"), "busy").contains(alice.id()));

        ErrorDetail refused = failure(() -> acquire(as("alice"), alice, "d", 0));
        AcquireResponse retried = acquire(as("alice"), alice, "a", 0);
        release(as("alice"), alice, first.getToken());
        AcquireResponse afterRelease = acquire(as("alice"), alice, "d", 0);

        assertQuota(refused, "alice", "locksPerIdentityMax", 4);
        assertThat(refused.getMessage()).contains("4 locks held or waited for", "1 more");
        assertThat(retried.getToken()).as("a retry of a held lock takes nothing more").isEqualTo(first.getToken());
        assertThat(afterRelease.getAcquired()).isTrue();
        assertThat(acquire(as("bob"), bob, "other", 0).getAcquired()).as("bob has his own quota").isTrue();
        waiting.cancel(true);
    }

    @Test
    void waitersQuota_refusesASecondWaitButNotATry() throws Exception {
        start(QUOTAS, null);
        TestSession alice = openSession(as("alice"), TTL_MILLIS);
        TestSession bob = openSession(as("bob"), TTL_MILLIS);
        acquire(as("bob"), bob, "x", 0);
        acquire(as("bob"), bob, "y", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withInterceptors(TestIdentities.as("alice")).withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(alice, "x", "wait-x", 45_000));
        await().atMost(WAIT_MAX).until(() -> TestServers.waiterSessions(as("bob"), "x").contains(alice.id()));

        ErrorDetail refused = failure(() -> acquire(as("alice"), alice, "y", 30_000));
        AcquireResponse tried = acquire(as("alice"), alice, "y", 0);

        assertQuota(refused, "alice", "waitersPerIdentityMax", 1);
        assertThat(tried.getAcquired()).as("a try queues nothing, so the waiters quota does not stop it").isFalse();
        waiting.cancel(true);
    }

    @Test
    void acquireAll_reservesARecordForEachLock() throws Exception {
        start(QUOTAS, null);
        TestSession alice = openSession(as("alice"), TTL_MILLIS);
        acquire(as("alice"), alice, "a", 0);

        ErrorDetail refused = failure(() -> as("alice").acquireAll(AcquireAllRequest.newBuilder()
                .setSessionId(alice.id()).setSessionSecret(alice.secret()).addLocks("m1").addLocks("m2")
                .addLocks("m3").addLocks("m4").setRequestId(UUID.randomUUID().toString()).build()));
        AcquireResponse three = as("alice").acquireAll(AcquireAllRequest.newBuilder().setSessionId(alice.id())
                .setSessionSecret(alice.secret()).addLocks("m1").addLocks("m2").addLocks("m3")
                .setRequestId(UUID.randomUUID().toString()).build());

        assertQuota(refused, "alice", "locksPerIdentityMax", 4);
        assertThat(three.getAcquired()).isTrue();
    }

    @Test
    void restart_rebuildsTheCountsFromTheReplicatedState() throws Exception {
        start(QUOTAS, null);
        for (int i = 0; i < 3; i++) {
            openSession(as("alice"), TTL_MILLIS);
        }
        openSession(TestServers.stub(channel), TTL_MILLIS);
        restart(QUOTAS, null);

        ErrorDetail refused = failure(() -> openSession(as("alice"), TTL_MILLIS));
        List<TestSession> anonymous = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            anonymous.add(openSession(TestServers.stub(channel), TTL_MILLIS));
        }
        ErrorDetail anonymousRefused = failure(() -> openSession(TestServers.stub(channel), TTL_MILLIS));

        assertQuota(refused, "alice", "sessionsPerIdentityMax", 3);
        assertThat(anonymous).hasSize(2);
        assertQuota(anonymousRefused, "anonymous@127.0.0.1", "sessionsPerIdentityMax", 3);
    }

    @Test
    void openSession_retryOfAnOpenWhoseSessionExists_servedAtTheQuota() throws Exception {
        start(QUOTAS, null);
        OpenSessionRequest open = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).build();
        long first = as("alice").openSession(open).getSessionId();
        openSession(as("alice"), TTL_MILLIS);
        openSession(as("alice"), TTL_MILLIS);

        long retried = as("alice").openSession(open).getSessionId();

        assertThat(retried).isEqualTo(first);
        failure(() -> openSession(as("alice"), TTL_MILLIS));
    }

    @Test
    void aclQuotaLines_overrideTheServerOptionForTheirIdentities() throws Exception {
        Path acl = dir.resolve("quotas.acl");
        Files.writeString(acl, """
                *          admin  *
                alice      quota  sessions 1
                anonymous  quota  sessions 2
                """);
        start(QUOTAS, acl);
        openSession(as("alice"), TTL_MILLIS);
        openSession(TestServers.stub(channel), TTL_MILLIS);
        openSession(TestServers.stub(channel), TTL_MILLIS);

        ErrorDetail alice = failure(() -> openSession(as("alice"), TTL_MILLIS));
        ErrorDetail anonymous = failure(() -> openSession(TestServers.stub(channel), TTL_MILLIS));
        for (int i = 0; i < 3; i++) {
            openSession(as("bob"), TTL_MILLIS); // the server's own quota: 3
        }

        assertQuota(alice, "alice", "sessionsPerIdentityMax", 1);
        assertQuota(anonymous, "anonymous@127.0.0.1", "sessionsPerIdentityMax", 2);
        assertQuota(failure(() -> openSession(as("bob"), TTL_MILLIS)), "bob", "sessionsPerIdentityMax", 3);
    }

    // Regression: one client could open every Watch stream a peer allows (watchersMax, 1,000) and leave every other
    // client's Watch refused, the console's live view among them.
    @Test
    void watch_overWatchersQuota_refusedNamingIdentityAndQuota_whileAnotherIdentityWatches() throws Exception {
        start(QUOTAS, null);
        List<Watching> alices = List.of(watchAs("alice"), watchAs("alice"));
        for (Watching watching : alices) {
            assertThat(watching.next().getKind()).as("a watch starts").isEqualTo(LockEvent.Kind.KIND_START);
        }

        Watching third = watchAs("alice");
        Watching bobs = watchAs("bob");

        StatusRuntimeException refused = third.error();
        assertThat(third.skipped()).as("a refused watch starts nothing").isZero();
        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertQuota(TestServers.detail(refused), "alice", "watchersPerIdentityMax", 2);
        assertThat(TestServers.detail(refused).getMessage()).contains("'alice' has 2 Watch streams open");
        assertThat(bobs.next().getKind()).as("another identity watches").isEqualTo(LockEvent.Kind.KIND_START);
        assertThat(server.watchStreams()).as("the refused stream holds nothing").isEqualTo(3);

        alices.get(0).cancel();
        await().atMost(WAIT_MAX).until(() -> server.watchStreams() == 2);
        Watching again = watchAs("alice");
        assertThat(again.next().getKind()).as("a cancelled stream counts no more").isEqualTo(LockEvent.Kind.KIND_START);
        List.of(alices.get(1), bobs, again).forEach(Watching::cancel);
    }

    private Watching watchAs(String identity) {
        return Watching.start(channel, Watching.from("", 0, 0), TestIdentities.as(identity));
    }

    private static void assertQuota(ErrorDetail detail, String identity, String quota, long value) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getIdentity()).isEqualTo(identity);
        assertThat(detail.getLimit()).isEqualTo(quota);
        assertThat(detail.getLimitValue()).isEqualTo(value);
        assertThat(detail.getMessage()).contains("'" + identity + "'", quota + " of " + value);
    }

    private static StatusRuntimeException refusal(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call should have been refused");
    }

    private LocksGrpc.LocksBlockingStub as(String identity) {
        return TestServers.stub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private void start(IdentityQuotas quotas, Path acl) throws Exception {
        ServerConfig config = TestServers.singlePeer(dir.resolve("data"), ticker).withQuotas(quotas).withAcl(acl);
        server = FencerServer.start(config, TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
    }

    private void restart(IdentityQuotas quotas, Path acl) throws Exception {
        TestServers.close(channel);
        server.close();
        start(quotas, acl);
    }
}

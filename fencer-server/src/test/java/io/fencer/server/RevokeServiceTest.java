package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.RenewRequest;
import io.fencer.api.v1.RenewResponse;
import io.fencer.api.v1.RevokeRequest;
import io.fencer.api.v1.RevokeResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Locks.Revoke on a real server with an ACL: who may revoke, what the holder, the waiter and a watcher see. */
class RevokeServiceTest {
    private static final long TTL_MILLIS = 60_000;
    private static final String RULES = """
            scheduler lock  jobs/
            auditor   read  jobs/
            ops       admin *
            """;

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        Path aclFile = dataDir.resolve("fencer.acl");
        Files.writeString(aclFile, RULES);
        server = FencerServer.start(TestServers.singlePeer(dataDir.resolve("data"), new ManualTicker())
                .withAcl(aclFile), TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        TestServers.awaitServingAs(server, channel, "ops");
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void revoke_withoutAdmin_isPermissionDeniedNamingAdminAndTheHolderKeepsTheLock() {
        TestSession holder = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        FencingToken token = TestServers.acquire(locksAs("scheduler"), holder, "jobs/a", 0).getToken();

        ErrorDetail scheduler = failure(() -> locksAs("scheduler").revoke(revoke("jobs/a", 0)));
        ErrorDetail auditor = failure(() -> locksAs("auditor").revoke(revoke("jobs/a", token.getValue())));

        assertThat(scheduler.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(scheduler.getIdentity()).isEqualTo("scheduler");
        assertThat(scheduler.getPermission()).isEqualTo("admin");
        assertThat(scheduler.getLock()).isEqualTo("jobs/a");
        assertThat(auditor.getPermission()).isEqualTo("admin");
        assertThat(TestServers.describe(locksAs("ops"), "jobs/a").getHolder().getValue())
                .as("the denied revokes changed nothing").isEqualTo(token.getValue());
    }

    @Test
    void revoke_byAdmin_endsTheGrantGrantsTheWaiterAHigherTokenAndTheWatchNamesTheRevoker() throws Exception {
        TestSession holder = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        TestSession waiter = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        FencingToken held = TestServers.acquire(locksAs("scheduler"), holder, "jobs/b", 0).getToken();
        CompletableFuture<AcquireResponse> waiting = CompletableFuture.supplyAsync(
                () -> TestServers.acquire(locksAs("scheduler"), waiter, "jobs/b", 15_000));
        await().atMost(Duration.ofSeconds(20)).until(
                () -> TestServers.waiterSessions(locksAs("ops"), "jobs/b").contains(waiter.id()));
        Watching watch = Watching.start(channel, Watching.from("jobs/", 0, 0), TestIdentities.as("ops"));
        assertThat(watch.next().getKind()).isEqualTo(LockEvent.Kind.KIND_START);

        RevokeResponse revoked = locksAs("ops").revoke(revoke("jobs/b", held.getValue()));
        AcquireResponse granted = waiting.get();
        ValidateResponse validated = locksAs("ops").validate(ValidateRequest.newBuilder().setToken(held).build());
        LockEvent ended = watch.next();

        assertThat(revoked.getRevoked().getValue()).isEqualTo(held.getValue());
        assertThat(revoked.getNext().getValue()).isGreaterThan(held.getValue());
        assertThat(revoked.getDelayed()).isFalse();
        assertThat(granted.getAcquired()).isTrue();
        assertThat(granted.getToken().getValue()).isEqualTo(revoked.getNext().getValue());
        assertThat(validated.getStatus()).isEqualTo(ValidateResponse.Status.SUPERSEDED);
        assertThat(ended.getKind()).isEqualTo(LockEvent.Kind.KIND_RELEASED);
        assertThat(ended.getEndCause()).isEqualTo(EndCause.END_CAUSE_REVOKED);
        assertThat(ended.getRevokedBy()).isEqualTo("ops");
        assertThat(ended.getToken().getValue()).isEqualTo(held.getValue());
        assertThat(ended.getSessionId()).isEqualTo(holder.id());
        assertThat(watch.next().getKind()).isEqualTo(LockEvent.Kind.KIND_GRANTED);
    }

    @Test
    void revoke_freeLockStaleTokenOrTooLongName_failsNamingTheValueAndChangesNothing() {
        TestSession holder = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        FencingToken held = TestServers.acquire(locksAs("scheduler"), holder, "jobs/c", 0).getToken();
        String tooLong = "jobs/" + "x".repeat(300);

        ErrorDetail free = failure(() -> locksAs("ops").revoke(revoke("jobs/free", 0)));
        ErrorDetail stale = failure(() -> locksAs("ops").revoke(revoke("jobs/c", held.getValue() + 7)));
        ErrorDetail name = failure(() -> locksAs("ops").revoke(revoke(tooLong, 0)));

        assertThat(free.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(free.getMessage()).contains("lock 'jobs/free'", "the lock is free", "nothing to revoke");
        assertThat(stale.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(stale.getCurrentToken()).isEqualTo(held.getValue());
        assertThat(name.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(name.getField()).isEqualTo("lock");
        assertThat(name.getMessage()).contains("256");
        assertThat(TestServers.describe(locksAs("ops"), "jobs/c").getHolder().getValue()).isEqualTo(held.getValue());
    }

    @Test
    void renewAndKeepAlive_ofARevokedHolder_renewTheSessionAndNameTheRevokedGrantAndTheRevoker() throws Exception {
        TestSession holder = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        FencingToken kept = TestServers.acquire(locksAs("scheduler"), holder, "jobs/kept", 0).getToken();
        FencingToken held = TestServers.acquire(locksAs("scheduler"), holder, "jobs/e", 0).getToken();
        RenewRequest renew = RenewRequest.newBuilder().setSessionId(holder.id()).setSessionSecret(holder.secret())
                .build();
        assertThat(locksAs("scheduler").renew(renew).getRevokedList()).as("the control: nothing revoked yet")
                .isEmpty();

        locksAs("ops").revoke(revoke("jobs/e", held.getValue()));
        RenewResponse renewed = locksAs("scheduler").renew(renew);
        KeepAliveResponse keptAlive = keepAliveAs("scheduler", holder);

        assertThat(renewed.getExpired()).as("the session stays open").isFalse();
        assertThat(renewed.getTtlMillis()).isEqualTo(TTL_MILLIS);
        assertThat(renewed.getRevokedList()).singleElement().satisfies(revoked -> {
            assertThat(revoked.getToken().getLock()).isEqualTo("jobs/e");
            assertThat(revoked.getToken().getValue()).isEqualTo(held.getValue());
            assertThat(revoked.getRevokedBy()).isEqualTo("ops");
        });
        assertThat(keptAlive.getExpired()).isFalse();
        assertThat(keptAlive.getRevokedList()).as("the stream's answer says the same")
                .isEqualTo(renewed.getRevokedList());
        assertThat(TestServers.describe(locksAs("ops"), "jobs/kept").getHolder().getValue())
                .as("the session's other grant is untouched").isEqualTo(kept.getValue());
    }

    @Test
    void renew_ofAnotherSessionAfterARevoke_namesNothing() {
        TestSession holder = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        TestSession bystander = TestServers.openSession(locksAs("scheduler"), TTL_MILLIS);
        FencingToken held = TestServers.acquire(locksAs("scheduler"), holder, "jobs/f", 0).getToken();

        locksAs("ops").revoke(revoke("jobs/f", held.getValue()));
        RenewResponse renewed = locksAs("scheduler").renew(RenewRequest.newBuilder().setSessionId(bystander.id())
                .setSessionSecret(bystander.secret()).build());

        assertThat(renewed.getExpired()).isFalse();
        assertThat(renewed.getRevokedList()).isEmpty();
    }

    private KeepAliveResponse keepAliveAs(String identity, TestSession session) throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<KeepAliveRequest> requests = LocksGrpc.newStub(channel)
                .withInterceptors(TestIdentities.as(identity)).keepAlive(TestServers.collecting(answers));
        requests.onNext(KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .build());
        Object answer = answers.poll(20, TimeUnit.SECONDS);
        requests.onCompleted();
        assertThat(answer).isInstanceOf(KeepAliveResponse.class);
        return (KeepAliveResponse) answer;
    }

    private LocksGrpc.LocksBlockingStub locksAs(String identity) {
        return TestServers.stub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private static RevokeRequest revoke(String lock, long token) {
        return RevokeRequest.newBuilder().setLock(lock).setToken(token).build();
    }
}

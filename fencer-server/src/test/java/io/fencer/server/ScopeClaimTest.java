package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ScopeInfo;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who may create a scope: only the current holder of the lock it binds, and, on a server without an ACL, only a
 * binding to the lock of the scope's own name. The squat it stops: an attacker creating a scope before its owner,
 * bound to a lock of the attacker's, so that the owner's writes are refused for good. And on the store beside a
 * lock service, no scope's first write under a grant that service superseded.
 */
class ScopeClaimTest {
    private static final long TTL_MILLIS = 60_000;

    @TempDir
    Path dir;
    private FencerServer server;
    private FencerStoreServer storeServer;
    private ManagedChannel channel;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
        if (storeServer != null) {
            storeServer.close();
        }
    }

    @Test
    void createScope_squatWithoutTheOwnersGrant_isRefusedAndTheOwnersFirstWriteSucceeds() throws Exception {
        startHostedStore();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
        TestSession attacker = openSession(locks, TTL_MILLIS);
        FencingToken attackersLock = acquire(locks, attacker, "attacker/lock", 0).getToken();

        ErrorDetail bindToOwnLock = failure(() -> store.createScope(CreateScopeRequest.newBuilder()
                .setScope("orders").setLock("attacker/lock").setSequencer(attackersLock.getSequencer()).build()));
        ErrorDetail withoutGrant = failure(() -> store.createScope(CreateScopeRequest.newBuilder()
                .setScope("orders").setPolicy(Policy.POLICY_STRICT).build()));
        ErrorDetail withForgedToken = failure(() -> store.createScope(CreateScopeRequest.newBuilder()
                .setScope("orders").setSequencer(Sequencer.format(new io.fencer.core.FencingToken("orders", 1)))
                .build()));
        TestSession owner = openSession(locks, TTL_MILLIS);
        FencingToken ownersGrant = acquire(locks, owner, "orders", 0).getToken();
        WriteResponse ownersWrite = store.write(StoreServiceTest.StoreTesting.put("orders",
                ownersGrant.getSequencer(), "k", "v"));

        assertThat(bindToOwnLock.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(bindToOwnLock.getLock()).isEqualTo("orders");
        assertThat(bindToOwnLock.getWhy()).contains("scope 'orders'", "lock 'attacker/lock'", "has none");
        assertThat(withoutGrant.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(withoutGrant.getLock()).isEqualTo("orders");
        assertThat(withoutGrant.getPresentedToken()).isZero();
        assertThat(withoutGrant.getMessage()).contains("CreateScope of scope 'orders'", "no token of lock 'orders'");
        assertThat(withForgedToken.getReason()).as("nobody holds orders: a made-up token is no grant")
                .isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(ownersWrite.getAccepted()).isEqualTo(ownersGrant.getValue());
        assertThat(store.fence(FenceRequest.newBuilder().setScope("orders").build()).getLock())
                .isEqualTo("orders");
    }

    @Test
    void createScope_withTheCurrentGrant_createsAndAReleasedGrantNoLonger() throws Exception {
        startHostedStore();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
        TestSession session = openSession(locks, TTL_MILLIS);
        FencingToken old = acquire(locks, session, "ledger", 0).getToken();
        release(locks, session, old);
        FencingToken current = acquire(locks, session, "ledger", 0).getToken();

        ErrorDetail stale = failure(() -> store.createScope(claim("ledger", old)));
        ErrorDetail otherLocks = failure(() -> store.createScope(claim("ledger",
                acquire(locks, session, "elsewhere", 0).getToken())));
        ScopeInfo created = store.createScope(claim("ledger", current));
        ScopeInfo again = store.createScope(claim("ledger", current));

        assertThat(stale.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(stale.getPresentedToken()).isEqualTo(old.getValue());
        assertThat(stale.getCurrentToken()).isEqualTo(current.getValue());
        assertThat(otherLocks.getReason()).isEqualTo(Reason.REASON_SCOPE_MISMATCH);
        assertThat(created.getExists()).isTrue();
        assertThat(created.getPolicy()).isEqualTo(Policy.POLICY_STRICT);
        assertThat(again).as("idempotent for the same binding").isEqualTo(created);
    }

    @Test
    void firstWrite_underAGrantTheLockServiceSuperseded_isRefusedStaleAndTheHoldersWriteLands() throws Exception {
        startHostedStore();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
        TestSession paused = openSession(locks, TTL_MILLIS);
        TestSession next = openSession(locks, TTL_MILLIS);
        FencingToken ended = acquire(locks, paused, "solo", 0).getToken();
        release(locks, paused, ended); // nobody took "solo" since: its last grant is over, not superseded
        FencingToken superseded = acquire(locks, paused, "orders", 0).getToken();
        release(locks, paused, superseded); // as a lease that ran out while its holder was paused
        FencingToken current = acquire(locks, next, "orders", 0).getToken();

        ErrorDetail write = failure(() -> store.write(StoreServiceTest.StoreTesting.put("orders",
                superseded.getSequencer(), "k", "stale")));
        ErrorDetail unit = failure(() -> store.beginUnit(BeginUnitRequest.newBuilder().setScope("orders")
                .setSequencer(superseded.getSequencer()).setTimeoutMillis(10_000).build()));
        WriteResponse endedWrite = store.write(StoreServiceTest.StoreTesting.put("solo", ended.getSequencer(), "k",
                "v"));
        WriteResponse holdersWrite = store.write(StoreServiceTest.StoreTesting.put("orders",
                current.getSequencer(), "k", "current"));

        StoreServiceTest.assertStale(write, "orders", superseded.getValue(), current.getValue());
        assertThat(write.getWhy()).contains("accepted no token yet", "superseded", "lock 'orders' is at token "
                + current.getValue());
        assertThat(write.getMessage()).contains("stale token orders#" + superseded.getValue(), "(policy AT_LEAST)");
        StoreServiceTest.assertStale(unit, "orders", superseded.getValue(), current.getValue());
        assertThat(endedWrite.getAccepted()).isEqualTo(ended.getValue());
        assertThat(holdersWrite.getAccepted()).as("the stale writes took nothing").isEqualTo(current.getValue());
        assertThat(holdersWrite.getRevision()).isEqualTo(1);
    }

    @Test
    void firstWrite_toAScopeBoundToAnotherLock_underAGrantOfThatLockSuperseded_isRefusedStale() throws Exception {
        Path acl = dir.resolve("fencer.acl");
        Files.writeString(acl, "ops admin *\n"); // binding a scope to another lock needs admin under an ACL
        server = FencerServer.start(TestServers.singlePeer(dir.resolve("data"), new ManualTicker()).withAcl(acl),
                TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel).withInterceptors(TestIdentities.as("ops"));
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel)
                .withInterceptors(TestIdentities.as("ops"));
        TestServers.awaitServingAs(server, channel, "ops");
        TestSession paused = openSession(locks, TTL_MILLIS);
        TestSession next = openSession(locks, TTL_MILLIS);
        FencingToken superseded = acquire(locks, paused, "scheduler", 0).getToken();
        store.createScope(CreateScopeRequest.newBuilder().setScope("queue").setLock("scheduler")
                .setSequencer(superseded.getSequencer()).build());
        release(locks, paused, superseded); // as a lease that ran out while its holder was paused
        FencingToken current = acquire(locks, next, "scheduler", 0).getToken();

        ErrorDetail write = failure(() -> store.write(StoreServiceTest.StoreTesting.put("queue",
                superseded.getSequencer(), "k", "stale")));
        WriteResponse holdersWrite = store.write(StoreServiceTest.StoreTesting.put("queue", current.getSequencer(),
                "k", "current"));

        StoreServiceTest.assertStale(write, "queue", superseded.getValue(), current.getValue());
        assertThat(write.getWhy()).contains("accepted no token yet", "lock 'scheduler' is at token "
                + current.getValue());
        assertThat(holdersWrite.getAccepted()).as("the stale write took nothing").isEqualTo(current.getValue());
        assertThat(holdersWrite.getRevision()).isEqualTo(1);
    }

    @Test
    void firstWrite_underASupersededGrantOnAStandaloneStore_isAcceptedForItHasNoLockService() throws Exception {
        // The control: the same write where no lock service can say the grant is over lands, as the fence allows.
        startHostedStore();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        TestSession session = openSession(locks, TTL_MILLIS);
        FencingToken superseded = acquire(locks, session, "orders", 0).getToken();
        release(locks, session, superseded);
        acquire(locks, session, "orders", 0);
        storeServer = FencerStoreServer.start(StoreServerConfig.defaults(dir.resolve("standalone")).withPorts(0, -1));
        ManagedChannel standalone = TestServers.channel(storeServer.port());
        try {
            WriteResponse write = StoreServiceTest.StoreTesting.stub(standalone).write(StoreServiceTest.StoreTesting
                    .put("orders", superseded.getSequencer(), "k", "stale"));

            assertThat(write.getAccepted()).isEqualTo(superseded.getValue());
        } finally {
            TestServers.close(standalone);
        }
    }

    @Test
    void createScope_newScopeWithInvisibleCharacters_isRefusedNamingTheCodePoint() throws Exception {
        startHostedStore();
        FencingToken grant = acquire(TestServers.stub(channel), openSession(TestServers.stub(channel), TTL_MILLIS),
                "plain", 0).getToken();

        ErrorDetail refused = failure(() -> StoreServiceTest.StoreTesting.stub(channel).write(
                StoreServiceTest.StoreTesting.put("or\u200Bders", grant.getSequencer(), "k", "v")));

        assertThat(refused.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(refused.getField()).isEqualTo("scope");
        assertThat(refused.getMessage()).contains("U+200B", "position 2");
    }

    @Test
    void createScope_onAStandaloneStoreWithKeys_needsAValidSignature() throws Exception {
        TokenKeys keys = TokenKeys.generate("k1");
        storeServer = FencerStoreServer.start(StoreServerConfig.defaults(dir).withPorts(0, -1).withTokenKeys(keys));
        channel = TestServers.channel(storeServer.port());
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
        io.fencer.core.FencingToken token = new io.fencer.core.FencingToken("jobs", 7);

        ErrorDetail unsigned = failure(() -> store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setSequencer(Sequencer.format(token)).build()));
        ErrorDetail forged = failure(() -> store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setSequencer(Sequencer.format(token, TokenKeys.generate("k1"))).build()));
        ErrorDetail withoutGrant = failure(() -> store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .build()));
        ScopeInfo created = store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setSequencer(Sequencer.format(token, keys)).build());

        assertThat(unsigned.getReason()).isEqualTo(Reason.REASON_BAD_TOKEN_SIGNATURE);
        assertThat(forged.getReason()).isEqualTo(Reason.REASON_BAD_TOKEN_SIGNATURE);
        assertThat(withoutGrant.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(created.getExists()).isTrue();
    }

    @Test
    void createScope_onAStandaloneStoreWithoutAnAcl_bindsOnlyTheScopesOwnLock() throws Exception {
        storeServer = FencerStoreServer.start(StoreServerConfig.defaults(dir).withPorts(0, -1));
        channel = TestServers.channel(storeServer.port());
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);

        ErrorDetail otherLock = failure(() -> store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setLock("mine").setSequencer(Sequencer.format(new io.fencer.core.FencingToken("mine", 3)))
                .build()));
        ScopeInfo own = store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setSequencer(Sequencer.format(new io.fencer.core.FencingToken("jobs", 3))).build());

        assertThat(otherLock.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(own.getLock()).isEqualTo("jobs");
    }

    private static CreateScopeRequest claim(String scope, FencingToken grant) {
        return CreateScopeRequest.newBuilder().setScope(scope).setPolicy(Policy.POLICY_STRICT)
                .setSequencer(grant.getSequencer()).build();
    }

    private void startHostedStore() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dir, new ManualTicker()));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
    }
}

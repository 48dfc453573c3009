package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.fencer.store.ReadResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replicated store of three peers in this JVM: writes go through the lock group's log to every replica, the
 * accepted token survives the leader's loss, followers send callers to the leader, a scope's first write under a
 * grant the group superseded is refused, and a restarted peer rebuilds its replica from the snapshot and the log.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ReplicatedStoreTest {
    @TempDir
    Path dataRoot;

    @AutoClose
    private PeerGroup group;

    @Test
    void write_onTheLeader_reachesEveryReplicaAndItsTokenStaysAcceptedAfterTheLeaderIsLost() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        WriteResponse first = store(leader).write(write("orders", "total", "42", 5));
        assertThat(first.getAccepted()).isEqualTo(5);
        for (String peer : group.running()) {
            assertThat(group.server(peer).store().replicated()).as("peer %s serves the replicated store", peer)
                    .isTrue();
            await().atMost(Duration.ofSeconds(30)).until(() -> "42".equals(localValue(peer, "orders", "total")));
        }

        group.stop(leader);
        String successor = group.awaitLeader();
        assertThat(successor).isNotEqualTo(leader);
        ErrorDetail stale = TestServers.failure(() -> store(successor).write(write("orders", "total", "7", 4)));
        assertThat(stale.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(stale.getCurrentToken()).isEqualTo(5);
        GetResponse read = store(successor).get(GetRequest.newBuilder().setScope("orders")
                .setKey(ByteString.copyFromUtf8("total")).build());
        assertThat(read.getValue().toStringUtf8()).isEqualTo("42");
        assertThat(store(successor).write(write("orders", "total", "43", 6)).getRevision()).isEqualTo(2);
    }

    @Test
    void firstWrite_underAGrantTheGroupSuperseded_isRefusedStaleOnTheLeaderAndTakesNothing() throws Exception {
        Path acl = dataRoot.resolve("fencer.acl");
        Files.writeString(acl, "ops admin *\n"); // binding a scope to another lock needs admin under an ACL
        group = new PeerGroup(dataRoot, 3, config -> config.withAcl(acl), true).startFounders();
        String leader = group.awaitLeader();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(group.channel(leader))
                .withInterceptors(TestIdentities.as("ops"));
        TestServers.TestSession paused = TestServers.openSession(locks, 60_000);
        io.fencer.api.v1.FencingToken superseded = TestServers.acquire(locks, paused, "orders", 0).getToken();
        opsStore(leader).createScope(CreateScopeRequest.newBuilder().setScope("queue").setLock("orders")
                .setSequencer(superseded.getSequencer()).build());
        TestServers.release(locks, paused, superseded); // as a lease that ran out while its holder was paused
        io.fencer.api.v1.FencingToken current = TestServers.acquire(locks, TestServers.openSession(locks, 60_000),
                "orders", 0).getToken();

        ErrorDetail stale = TestServers.failure(() -> opsStore(leader).write(StoreServiceTest.StoreTesting.put(
                "orders", superseded.getSequencer(), "total", "stale")));
        ErrorDetail staleBound = TestServers.failure(() -> opsStore(leader).write(StoreServiceTest.StoreTesting.put(
                "queue", superseded.getSequencer(), "next", "stale")));
        WriteResponse holders = opsStore(leader).write(StoreServiceTest.StoreTesting.put("orders",
                current.getSequencer(), "total", "42"));
        WriteResponse holdersBound = opsStore(leader).write(StoreServiceTest.StoreTesting.put("queue",
                current.getSequencer(), "next", "7"));

        StoreServiceTest.assertStale(stale, "orders", superseded.getValue(), current.getValue());
        assertThat(stale.getWhy()).contains("accepted no token yet", "lock 'orders' is at token " + current.getValue());
        StoreServiceTest.assertStale(staleBound, "queue", superseded.getValue(), current.getValue());
        assertThat(holders.getRevision()).as("the stale write took nothing").isEqualTo(1);
        assertThat(holdersBound.getRevision()).as("nor the one to the scope bound to the lock").isEqualTo(1);
    }

    @Test
    void write_toAFollower_isRefusedNotLeaderNamingTheLeaderAndTakesNothing() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        String follower = group.aFollower(leader);
        ErrorDetail refused = TestServers.failure(() -> store(follower).write(write("orders", "k", "v", 3)));
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_NOT_LEADER);
        assertThat(refused.getLeaderAddress()).isEqualTo(group.member(leader).clientAddress());
        ErrorDetail read = TestServers.failure(() -> store(follower).get(GetRequest.newBuilder().setScope("orders")
                .setKey(ByteString.copyFromUtf8("k")).build()));
        assertThat(read.getReason()).isEqualTo(Reason.REASON_NOT_LEADER);
        assertThat(store(leader).get(GetRequest.newBuilder().setScope("orders").setKey(ByteString.copyFromUtf8("k"))
                .build()).getFound()).as("the refused write took nothing").isFalse();
    }

    @Test
    void restart_ofAFollower_rebuildsItsReplicaFromTheSnapshotAndTheLog() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        store(leader).write(write("orders", "before", "1", 2));
        String follower = group.aFollower(leader);
        await().atMost(Duration.ofSeconds(30)).until(() -> "1".equals(localValue(follower, "orders", "before")));
        long snapshotIndex = group.server(follower).takeSnapshot();
        assertThat(snapshotIndex).isPositive();
        group.stop(follower);
        assertThat(Files.isDirectory(dataRoot.resolve(follower).resolve("store"))).as("no single-node store")
                .isFalse();
        store(leader).write(write("orders", "after", "2", 3)); // committed by the two others while it is down
        group.start(follower);
        // the replica was emptied on start: what it holds came from its snapshot (before) and the leader's log (after)
        await().atMost(Duration.ofSeconds(60)).until(() -> "1".equals(localValue(follower, "orders", "before"))
                && "2".equals(localValue(follower, "orders", "after")));
        assertThat(group.server(follower).store().engine().accepted("orders")).isEqualTo(3);
    }

    /**
     * A peer rebuilds its replica at every start, through a restore into {@code DIR/store-replica.restoring}; a crash
     * (kill -9, power loss) during that rebuild leaves the directory behind. The next start must rebuild again, as
     * the replica is only ever derived from the snapshot and the log: before, it refused to start ("an earlier
     * restore was interrupted"), so one crash during a start kept the peer down until an operator deleted it.
     */
    @Test
    void restart_afterACrashWhileItsReplicaWasRebuilt_rebuildsItAndServes() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        store(leader).write(write("orders", "before", "1", 2));
        String follower = group.aFollower(leader);
        await().atMost(Duration.ofSeconds(30)).until(() -> "1".equals(localValue(follower, "orders", "before")));
        assertThat(group.server(follower).takeSnapshot()).isPositive();
        group.stop(follower);
        Path cutShort = dataRoot.resolve(follower).resolve("store-replica.restoring");
        Files.createDirectories(cutShort);
        Files.writeString(cutShort.resolve("000004.sst"), "half of a rebuild");
        Files.writeString(dataRoot.resolve(follower).resolve("store-snapshot1234.fencerbk"), "half of a copy");

        group.start(follower);

        await().atMost(Duration.ofSeconds(60)).until(() -> "1".equals(localValue(follower, "orders", "before")));
        assertThat(cutShort).as("the rebuild cut short is gone").doesNotExist();
        assertThat(dataRoot.resolve(follower).resolve("store-snapshot1234.fencerbk")).as("so is its copy")
                .doesNotExist();
    }

    @Test
    void unit_committedOnTheLeader_isAppliedWholeOnEveryReplicaAndHoldsItsScopeWhileOpen() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        String sequencer = Sequencer.format(new FencingToken("orders", 4));
        BeginUnitResponse begun = store(leader).beginUnit(BeginUnitRequest.newBuilder().setScope("orders")
                .setSequencer(sequencer).setTimeoutMillis(30_000).build());
        store(leader).unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(put("a", "1")).addOps(put("b", "2")).build());
        ErrorDetail held = TestServers.failure(() -> store(leader).write(write("orders", "c", "3", 4)));
        assertThat(held.getReason()).as("the same token may not write while its unit holds the scope")
                .isEqualTo(Reason.REASON_LIMIT_EXCEEDED);

        WriteResponse committed = store(leader).commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(begun.getUnitId()).build());

        assertThat(committed.getOpsApplied()).isEqualTo(2);
        assertThat(committed.getAccepted()).isEqualTo(4);
        for (String peer : group.running()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> "1".equals(localValue(peer, "orders", "a"))
                    && "2".equals(localValue(peer, "orders", "b")));
        }
        assertThat(store(leader).commitUnit(CommitUnitRequest.newBuilder().setUnitId(begun.getUnitId()).build()))
                .as("a retried commit answers the first result").isEqualTo(committed);
    }

    /**
     * While a unit is open its leader refuses a lower token's write or unit on the scope, as a single node does (its
     * unit raises the scope's fence at begin). Before, the replicated store took that write until the unit's commit
     * raised the fence, so a superseded holder's write could land between a read-modify-write's reads and its commit;
     * and a lower token's unit took the open one's place in the leader's table.
     */
    @Test
    void write_lowerTokenWhileAUnitHoldsItsScope_isRefusedStaleAndTheUnitCommits() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        store(leader).write(write("orders", "count", "10", 3));
        BeginUnitResponse begun = beginUnit(leader, "orders", 30_000);

        ErrorDetail stale = TestServers.failure(() -> store(leader).write(write("orders", "count", "11", 3)));
        ErrorDetail staleUnit = TestServers.failure(() -> store(leader).beginUnit(BeginUnitRequest.newBuilder()
                .setScope("orders").setSequencer(Sequencer.format(new FencingToken("orders", 3)))
                .setTimeoutMillis(30_000).build()));
        store(leader).unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(put("count", "11")).build());
        WriteResponse committed = store(leader).commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(begun.getUnitId()).build());

        assertThat(stale.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(stale.getMessage()).contains("orders#3", "open unit " + begun.getUnitId(), "orders#4");
        assertThat(staleUnit.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(committed.getOpsApplied()).isEqualTo(1);
        assertThat(committed.getAccepted()).isEqualTo(4);
        assertThat(localValue(leader, "orders", "count")).isEqualTo("11");
    }

    @Test
    void unit_openWhenItsLeaderIsLost_isUnknownToTheNewLeaderAndNoneOfItsOpsApplied() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        BeginUnitResponse begun = store(leader).beginUnit(BeginUnitRequest.newBuilder().setScope("orders")
                .setSequencer(Sequencer.format(new FencingToken("orders", 4))).setTimeoutMillis(60_000).build());
        store(leader).unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(put("a", "1")).build());

        group.stop(leader);
        String successor = group.awaitLeader();

        ErrorDetail gone = TestServers.failure(() -> store(successor).commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(begun.getUnitId()).build()));
        assertThat(gone.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(gone.getMessage()).contains("unknown");
        assertThat(store(successor).get(GetRequest.newBuilder().setScope("orders").setKey(ByteString.copyFromUtf8("a"))
                .build()).getFound()).as("none of the unit's ops was applied").isFalse();
    }

    /**
     * Regression: the leader, which holds the replicated store's units, let any identity with {@code write} on the
     * scope that knew a unit's id write into it, commit it or abort it.
     */
    @Test
    void unitCalls_onTheLeaderByAnotherIdentity_areRefusedAndTheOwnersUnitCommits() throws Exception {
        Path acl = dataRoot.resolve("fencer.acl");
        Files.writeString(acl, "ops admin *\nwriter write orders\nother write orders\n"); // ops: the group's checks
        group = new PeerGroup(dataRoot, 3, config -> config.withAcl(acl), true).startFounders();
        String leader = group.awaitLeader();
        StoreGrpc.StoreBlockingStub writer = store(leader).withInterceptors(TestIdentities.as("writer"));
        StoreGrpc.StoreBlockingStub other = store(leader).withInterceptors(TestIdentities.as("other"));
        String unit = writer.beginUnit(BeginUnitRequest.newBuilder().setScope("orders")
                .setSequencer(Sequencer.format(new FencingToken("orders", 4))).setTimeoutMillis(30_000).build())
                .getUnitId();
        writer.unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit).addOps(put("a", "1")).build());

        ErrorDetail write = TestServers.failure(() -> other.unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit)
                .addOps(put("b", "2")).build()));
        ErrorDetail commit = TestServers.failure(() -> other.commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(unit).build()));
        ErrorDetail abort = TestServers.failure(() -> other.abortUnit(io.fencer.api.v1.AbortUnitRequest.newBuilder()
                .setUnitId(unit).build()));
        WriteResponse committed = writer.commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build());

        for (ErrorDetail refused : new ErrorDetail[] {write, commit, abort}) {
            assertThat(refused.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
            assertThat(refused.getIdentity()).isEqualTo("other");
            assertThat(refused.getLock()).isEqualTo(unit);
        }
        assertThat(committed.getOpsApplied()).as("the owner's op alone").isEqualTo(1);
    }

    /**
     * Units whose deadline passed on the leader no longer count toward {@code unitsOpenMax}: they were kept in the
     * leader's table until another call touched their scope, so units abandoned on enough scopes refused every new
     * unit on any other scope for as long as that peer led. Their clients are told they timed out, as a single
     * node tells them.
     */
    @Test
    void beginUnit_afterUnitsOnOtherScopesPassedTheirDeadline_isNotRefusedForThem() throws Exception {
        io.fencer.core.ManualTicker ticker = new io.fencer.core.ManualTicker();
        group = new PeerGroup(dataRoot, 3, config -> config.withStore(io.fencer.store.StoreOptions.defaults()
                .withUnitsOpenMax(2).withTicker(ticker)), false).startFounders();
        String leader = group.awaitLeader();
        String abandoned = beginUnit(leader, "first", 1_000).getUnitId();
        beginUnit(leader, "second", 1_000);
        ticker.advance(Duration.ofSeconds(2));

        BeginUnitResponse begun = beginUnit(leader, "third", 30_000);

        assertThat(begun.getUnitId()).isNotEmpty();
        ErrorDetail expired = TestServers.failure(() -> store(leader).commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(abandoned).build()));
        assertThat(expired.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(expired.getLimit()).isEqualTo("unitTimeout");
        assertThat(expired.getMessage()).contains("not committed within its timeout", "nothing was applied");
    }

    private BeginUnitResponse beginUnit(String peer, String scope, long timeoutMillis) {
        return store(peer).beginUnit(BeginUnitRequest.newBuilder().setScope(scope)
                .setSequencer(Sequencer.format(new FencingToken(scope, 4))).setTimeoutMillis(timeoutMillis).build());
    }

    /**
     * Writes to a scope while its unit's commit waits for the log are answered, and so is the commit: the commit once
     * held its unit's lock while it waited and then took the leader's table of units to leave it, while such a write
     * held that table and waited for the unit's lock, so both hung, and every later write and unit on the leader
     * behind them.
     */
    @Test
    void commitUnit_whileWritesToItsScopeArrive_answersTheCommitAndEveryWrite() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
        String leader = group.awaitLeader();
        String sequencer = Sequencer.format(new FencingToken("busy", 4));
        for (int round = 0; round < 20; round++) {
            String unit = store(leader).beginUnit(BeginUnitRequest.newBuilder().setScope("busy")
                    .setSequencer(sequencer).setTimeoutMillis(30_000).build()).getUnitId();
            store(leader).unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit).addOps(Op.newBuilder()
                    .setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8("big"))
                            .setValue(ByteString.copyFrom(new byte[512 * 1024])))).build());

            CompletableFuture<WriteResponse> commit = CompletableFuture.supplyAsync(() -> store(leader)
                    .commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build()));
            while (!commit.isDone()) {
                Status.Code code = codeOf(() -> store(leader).withDeadlineAfter(10, TimeUnit.SECONDS)
                        .write(write("busy", "w", "x", 4)));
                assertThat(code).as("a write while the unit commits: applied, or refused while the unit holds the"
                        + " scope").isIn(Status.Code.OK, Status.Code.RESOURCE_EXHAUSTED);
            }

            assertThat(commit.get(10, TimeUnit.SECONDS).getOpsApplied()).isEqualTo(1);
        }
    }

    private static Status.Code codeOf(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    private static Op put(String key, String value) {
        return Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                .setValue(ByteString.copyFromUtf8(value))).build();
    }

    private StoreGrpc.StoreBlockingStub opsStore(String peer) {
        return store(peer).withInterceptors(TestIdentities.as("ops"));
    }

    private StoreGrpc.StoreBlockingStub store(String peer) {
        return StoreGrpc.newBlockingStub(group.channel(peer)).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private String localValue(String peer, String scope, String key) {
        FencerServer server = group.server(peer);
        if (server == null || server.store() == null) {
            return null;
        }
        try {
            ReadResult read = server.store().engine().get(scope, key.getBytes(StandardCharsets.UTF_8), null);
            return read.present() ? new String(read.value(), StandardCharsets.UTF_8) : null;
        } catch (RuntimeException e) {
            return null; // the replica is being replaced
        }
    }

    private static WriteRequest write(String scope, String key, String value, long token) {
        return WriteRequest.newBuilder().setScope(scope)
                .setSequencer(Sequencer.format(new FencingToken(scope, token)))
                .addOps(Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                        .setValue(ByteString.copyFromUtf8(value)))).build();
    }
}

package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ImportScopesRequest;
import io.fencer.api.v1.ImportScopesResponse;
import io.fencer.api.v1.ImportedKey;
import io.fencer.api.v1.ImportedScopeOutcome;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.rpc.TestIdentities;
import io.fencer.store.ImportedScope;
import io.fencer.store.ReadResult;
import io.fencer.store.StoreBackup;
import io.fencer.store.StoreBackupFile;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Moving a single-node store into the replicated store of three peers in this JVM: a peer whose data directory holds
 * one with a scope refuses to start, naming the import (one without a scope, as every peer of the previous release
 * left, is no obstacle); the store moved away and imported keeps every key and accepted token on
 * every replica; a rerun skips; a scope the group holds differently is refused; only an admin may import. The founder
 * of a grown group of one restarts into the replicated store from its own snapshot, unless it passed over store
 * entries before it.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ReplicatedStoreImportTest {
    private static final String ACL = "ops admin *\nwriter write *\n";

    @TempDir
    Path dataRoot;

    @AutoClose
    private PeerGroup group;

    @Test
    void import_ofAPeersMovedSingleNodeStore_keepsEveryKeyAndFenceOnEveryReplicaAndARerunSkips() throws Exception {
        Path acl = acl();
        group = new PeerGroup(dataRoot, 3, config -> config.withAcl(acl), true);
        String kept = group.id(1);
        Path single = dataRoot.resolve(kept).resolve("store");
        try (StoreEngine old = StoreEngine.open(single, StoreOptions.defaults())) {
            old.write("orders", sequencer("orders", 5), List.of(put("total", "42")), null);
            old.write("orders", sequencer("orders", 7), List.of(put("count", "3")), null);
            old.createScope("jobs", "leader", FencePolicy.STRICT);
            old.write("jobs", sequencer("leader", 12), List.of(put("owner", "a")), null);
            old.createScope("empty", "empty", FencePolicy.AT_LEAST);
        }
        String upgraded = group.id(2); // as every peer of the previous release left it: a store without a scope
        StoreEngine.open(dataRoot.resolve(upgraded).resolve("store"), StoreOptions.defaults()).close();

        // the rule against mixed groups: the peer refuses to start rather than serve a store its peers do not have
        assertThatThrownBy(() -> group.start(kept)).hasStackTraceContaining(single.toString())
                .hasStackTraceContaining("fencer store import");
        assertThat(group.running()).isEmpty();
        Path moved = dataRoot.resolve(kept).resolve("store.single");
        Files.move(single, moved);
        group.startFounders();
        String leader = group.awaitLeader();
        assertThat(group.server(upgraded).store().replicated()).as("a store without a scope holds nothing to lose")
                .isTrue();
        ImportScopesRequest request = requestOf(backupOf(moved));

        ImportScopesResponse first = store(leader, "ops").importScopes(request);

        assertThat(first.getOutcomesList()).extracting(ImportedScopeOutcome::getKind)
                .containsOnly(ImportedScopeOutcome.Kind.IMPORTED).hasSize(3);
        assertThat(value(leader, "orders", "total")).isEqualTo("42");
        assertThat(value(leader, "jobs", "owner")).isEqualTo("a");
        assertThat(store(leader, "ops").fence(FenceRequest.newBuilder().setScope("jobs").build()))
                .satisfies(jobs -> {
                    assertThat(jobs.getLock()).isEqualTo("leader");
                    assertThat(jobs.getPolicy()).isEqualTo(Policy.POLICY_STRICT);
                    assertThat(jobs.getAccepted()).isEqualTo(12);
                });
        for (String peer : group.running()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> "3".equals(localValue(peer, "orders", "count")));
        }
        ErrorDetail stale = TestServers.failure(() -> store(leader, "writer").write(write("orders", 6)));
        assertThat(stale.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(stale.getCurrentToken()).isEqualTo(7);

        ImportScopesResponse rerun = store(leader, "ops").importScopes(request);

        assertThat(rerun.getOutcomesList()).extracting(ImportedScopeOutcome::getKind)
                .containsOnly(ImportedScopeOutcome.Kind.SKIPPED).hasSize(3);
        assertThat(store(leader, "ops").fence(FenceRequest.newBuilder().setScope("orders").build()).getRevision())
                .as("nothing imported twice").isEqualTo(2);
    }

    @Test
    void import_ofAConflictingScopeByANonAdminOrOverTheLimits_isRefusedAndWritesNothingOfIt() throws Exception {
        Path acl = acl();
        group = new PeerGroup(dataRoot, 3, config -> config.withAcl(acl), true).startFounders();
        String leader = group.awaitLeader();
        store(leader, "writer").write(write("orders", 4)); // the group's own scope, revision 1
        ImportScopesRequest request = ImportScopesRequest.newBuilder()
                .addScopes(scope("orders", 9, "total", "imported"))
                .addScopes(scope("stock", 3, "apples", "10")).build();

        ErrorDetail denied = TestServers.failure(() -> store(leader, "writer").importScopes(request));
        assertThat(denied.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(denied.getMessage()).contains("writer").contains("admin");
        assertThat(store(leader, "ops").fence(FenceRequest.newBuilder().setScope("stock").build()).getExists())
                .as("the refused import wrote nothing").isFalse();

        ImportScopesResponse response = store(leader, "ops").importScopes(request);

        ImportedScopeOutcome orders = response.getOutcomes(0);
        assertThat(orders.getScope()).isEqualTo("orders");
        assertThat(orders.getKind()).isEqualTo(ImportedScopeOutcome.Kind.CONFLICT);
        assertThat(orders.getDetail()).contains("'orders'").contains("key");
        assertThat(value(leader, "orders", "total")).as("the group's value kept").isEqualTo("v4");
        assertThat(store(leader, "ops").fence(FenceRequest.newBuilder().setScope("orders").build()).getAccepted())
                .isEqualTo(4);
        assertThat(response.getOutcomes(1).getKind()).as("the other scope imported")
                .isEqualTo(ImportedScopeOutcome.Kind.IMPORTED);
        assertThat(value(leader, "stock", "apples")).isEqualTo("10");
        assertOverTheLimitsRefused(leader);
    }

    /** Checks that requests over the limits are refused whole, naming the limit and the value. */
    private void assertOverTheLimitsRefused(String leader) {
        ImportScopesRequest.Builder many = ImportScopesRequest.newBuilder();
        for (int i = 0; i < 1_001; i++) {
            many.addScopes(scope("s" + i, 1, "k", "v"));
        }
        ImportScopesRequest twice = ImportScopesRequest.newBuilder().addScopes(scope("a", 1, "k", "v"))
                .addScopes(scope("a", 1, "k", "v")).build();
        ImportScopesRequest aboveItsFence = ImportScopesRequest.newBuilder().addScopes(scope("b", 1, "k", "v")
                .toBuilder().setKeys(0, ImportedKey.newBuilder().setKey(ByteString.copyFromUtf8("k"))
                        .setWrittenBy(2))).build();

        ErrorDetail tooMany = TestServers.failure(() -> store(leader, "ops").importScopes(many.build()));
        ErrorDetail duplicate = TestServers.failure(() -> store(leader, "ops").importScopes(twice));
        ErrorDetail written = TestServers.failure(() -> store(leader, "ops").importScopes(aboveItsFence));

        assertThat(tooMany.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(tooMany.getMessage()).contains("1001").contains("1000");
        assertThat(duplicate.getMessage()).contains("'a'").contains("twice");
        assertThat(written.getMessage()).contains("token 2").contains("[1, 1]");
        assertThat(store(leader, "ops").fence(FenceRequest.newBuilder().setScope("a").build()).getExists()).isFalse();
    }

    @Test
    void storeCalls_toAPeerKeepingItsSingleNodeStoreOnceItsGroupGrew_areRefusedNamingTheImport() throws Exception {
        group = new PeerGroup(dataRoot, 1, config -> config, false).startFounders();
        String founder = group.awaitLeader();
        StoreGrpc.StoreBlockingStub store = StoreGrpc.newBlockingStub(group.channel(founder))
                .withDeadlineAfter(30, TimeUnit.SECONDS);
        store.write(write("orders", 3)); // a group of one serves its single-node store
        assertThat(group.server(founder).store().replicated()).isFalse();
        PeerGroup.Member joiner = group.newJoiner(2);
        group.start(joiner.id());

        group.add(founder, joiner);

        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> TestServers.failure(
                () -> store.fence(FenceRequest.newBuilder().setScope("orders").build())) != null);
        ErrorDetail write = TestServers.failure(() -> store.write(write("orders", 4)));
        assertThat(write.getReason()).isEqualTo(Reason.REASON_UNAVAILABLE);
        assertThat(write.getMessage()).contains("2 peers").contains("fencer store import")
                .contains(dataRoot.resolve(founder).resolve("store").toString());
        assertThat(group.server(founder).store().engine().accepted("orders")).as("the refused write took nothing")
                .isEqualTo(3);
    }

    /**
     * The founder of a grown group of one restarts as its docs say (its single-node store moved away, --peers naming
     * the group) from its own snapshot. Taken while it kept a single-node store and before any store entry reached the
     * log, that snapshot says the replicated store was empty, and the founder catches up from it and the log. Once it
     * passed over a store entry without a replica, its next snapshot cannot say, and the restart is refused.
     */
    @Test
    void restart_ofAGrownGroupsFounder_startsFromItsSnapshotWhenItSawNoStoreEntryElseIsRefused() throws Exception {
        group = new PeerGroup(dataRoot, 1, config -> config, false).startFounders();
        String founder = group.awaitLeader();
        store(founder).write(write("orders", 3));
        group.server(founder).takeSnapshot(); // before any store entry: the replicated store is empty
        List<String> ids = new ArrayList<>(List.of(founder));
        for (int i = 2; i <= 3; i++) {
            PeerGroup.Member joiner = group.newJoiner(i);
            group.start(joiner.id());
            group.add(founder, joiner);
            group.awaitCaughtUp(founder, joiner.id());
            group.promote(founder, joiner.id());
            ids.add(joiner.id());
        }
        group.stop(founder);
        String leader = group.awaitLeader();
        store(leader).write(write("jobs", 5)); // the log's first store entry, after the founder's snapshot
        Path store = dataRoot.resolve(founder).resolve("store");
        Files.move(store, store.resolveSibling("store.single"));

        group.startNaming(founder, ids);

        await().atMost(Duration.ofSeconds(60)).until(() -> "v5".equals(localValue(founder, "jobs", "total")));
        assertThat(group.server(founder).store().replicated()).isTrue();
        assertThat(localValue(founder, "orders", "total")).as("the single-node store stays out until imported")
                .isNull();

        // Passed over: restarted with its single-node store again, the founder applies a store entry without a replica.
        group.stop(founder);
        Files.move(store.resolveSibling("store.single"), store);
        group.start(founder);
        store(leader).write(write("jobs", 6));
        await().atMost(Duration.ofSeconds(60)).until(() -> group.server(founder).appliedIndex()
                >= group.server(leader).appliedIndex());
        long passedOver = group.server(founder).takeSnapshot();
        group.stop(founder);
        Files.move(store, store.resolveSibling("store.single"));

        assertThatThrownBy(() -> group.startNaming(founder, ids)).hasStackTraceContaining("holds no replicated store");
        // In the same JVM, as an embedding application would retry: the refused start closed the replica it opened.
        assertThatThrownBy(() -> group.startNaming(founder, ids)).as("tried again, refused for the same reason")
                .hasStackTraceContaining("holds no replicated store");

        // Alone again (the others removed), the founder's next snapshot says the store is empty: a peer added then
        // starts from it, which it could not from the snapshot above.
        Files.move(store.resolveSibling("store.single"), store);
        group.start(founder);
        for (String other : ids.subList(1, ids.size())) {
            String via = group.awaitLeader();
            group.remove(via, other);
            group.stop(other);
        }
        assertThat(group.awaitLeader()).isEqualTo(founder);
        long snapshot = group.snapshotAbove(founder, passedOver);
        PeerGroup.Member next = group.newJoiner(ids.size() + 1);
        group.start(next.id());
        group.add(founder, next);
        group.awaitCaughtUp(founder, next.id());
        await().atMost(Duration.ofSeconds(60)).until(() -> group.server(next.id()).appliedIndex() > snapshot);
        assertThat(group.server(next.id()).notInGroup()).isNull();
        assertThat(localValue(next.id(), "jobs", "total")).as("the store the founder never held").isNull();
    }

    private Path acl() throws IOException {
        Path file = dataRoot.resolve("acl").resolve("fencer.acl");
        if (!Files.exists(file)) {
            Files.createDirectories(file.getParent());
            Files.writeString(file, ACL);
        }
        return file;
    }

    private Path backupOf(Path directory) throws IOException {
        Path file = dataRoot.resolve("single.fencerbk");
        try (StoreEngine engine = StoreEngine.open(directory, StoreOptions.defaults());
             StoreBackup backup = engine.openBackup(0);
             OutputStream out = Files.newOutputStream(file)) {
            for (byte[] piece = backup.next(1 << 20); piece != null; piece = backup.next(1 << 20)) {
                out.write(piece);
            }
        }
        return file;
    }

    /** The request fencer store import makes of a backup's scopes. */
    private static ImportScopesRequest requestOf(Path backup) throws IOException {
        ImportScopesRequest.Builder request = ImportScopesRequest.newBuilder();
        StoreBackupFile.readScopes(backup, Long.MAX_VALUE, (scope, keyBytes, whole) -> {
            io.fencer.api.v1.ImportedScope.Builder wire = io.fencer.api.v1.ImportedScope.newBuilder()
                    .setScope(scope.scope()).setLock(scope.lock()).setAccepted(scope.accepted())
                    .setRevision(scope.revision()).setPolicy(scope.policy() == FencePolicy.STRICT
                            ? Policy.POLICY_STRICT : Policy.POLICY_AT_LEAST);
            for (ImportedScope.Key key : scope.keys()) {
                wire.addKeys(ImportedKey.newBuilder().setKey(ByteString.copyFrom(key.key()))
                        .setValue(ByteString.copyFrom(key.value())).setWrittenBy(key.writtenBy()));
            }
            request.addScopes(wire);
        });
        return request.build();
    }

    private static io.fencer.api.v1.ImportedScope scope(String scope, long token, String key, String value) {
        return io.fencer.api.v1.ImportedScope.newBuilder().setScope(scope).setAccepted(token).setRevision(1)
                .addKeys(ImportedKey.newBuilder().setKey(ByteString.copyFromUtf8(key))
                        .setValue(ByteString.copyFromUtf8(value)).setWrittenBy(token)).build();
    }

    /**
     * Returns a stub of peer {@code peer}'s store without an identity, its deadline 30 s from now: a stub is made per
     * call, since a deadline runs from the stub's making.
     */
    private StoreGrpc.StoreBlockingStub store(String peer) {
        return StoreGrpc.newBlockingStub(group.channel(peer)).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private StoreGrpc.StoreBlockingStub store(String peer, String identity) {
        return StoreGrpc.newBlockingStub(group.channel(peer)).withInterceptors(TestIdentities.as(identity))
                .withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private String value(String peer, String scope, String key) {
        GetResponse read = store(peer, "ops").get(GetRequest.newBuilder().setScope(scope)
                .setKey(ByteString.copyFromUtf8(key)).build());
        return read.getFound() ? read.getValue().toStringUtf8() : null;
    }

    private String localValue(String peer, String scope, String key) {
        FencerServer server = group.server(peer);
        try {
            ReadResult read = server.store().engine().get(scope, key.getBytes(StandardCharsets.UTF_8), null);
            return read.present() ? new String(read.value(), StandardCharsets.UTF_8) : null;
        } catch (RuntimeException e) {
            return null; // the replica is being replaced
        }
    }

    private static String sequencer(String lock, long token) {
        return Sequencer.format(new FencingToken(lock, token));
    }

    private static io.fencer.store.Op put(String key, String value) {
        return io.fencer.store.Op.put(key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }

    private static WriteRequest write(String scope, long token) {
        return WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer(scope, token))
                .addOps(Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8("total"))
                        .setValue(ByteString.copyFromUtf8("v" + token)))).build();
    }
}

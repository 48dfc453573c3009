package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.sequencer;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencePolicy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;

/**
 * Invariant 4 where a kill -9 test cannot look: the page cache survives a SIGKILL, so {@code StoreEngineCrashTest}
 * passes just as well when the store acknowledges writes before their WAL is synced; only a power loss would tell.
 * This test asks RocksDB itself, through its statistics ({@link TickerType#WAL_FILE_SYNCED}), whether a WAL sync
 * happened between the moment the committer took a batch and the acknowledgement of each write in it, and whether
 * the fence records written alone were synced. Its control, in the same test, runs the same workload and the same
 * check on a store whose synced writes are made unsynced ({@link UnsyncedWrites}) and asserts the check catches
 * every acknowledgement, while a read-back after a reopen sees nothing wrong.
 */
class StoreEngineWalSyncTest {
    private static final int WRITES = 400;
    private static final int SCOPES = 4;
    private static final long WAIT_SECONDS = 60;

    @TempDir
    Path dir;

    /**
     * What one run of the workload saw.
     *
     * @param acknowledged the writes and unit commits acknowledged as applied
     * @param applied the writes the apply listener saw, inside the guards, before their acknowledgement
     * @param unsynced the applied writes ({@code scope#token}) with no WAL sync since their batch was taken
     * @param syncs the WAL syncs RocksDB counted during the workload
     * @param batches the engine's batch writes during the workload
     * @param fencesSynced the fence records written alone (create scope, begin unit) followed by a WAL sync
     */
    private record Run(int acknowledged, int applied, List<String> unsynced, long syncs, long batches,
            int fencesSynced) {}

    @Test
    void write_everyAcknowledgedWrite_followsAWalSyncOfItsBatchAndTheControlWithoutSyncIsCaught() throws Exception {
        Run synced = run(dir.resolve("synced"), SyncedWrites.ROCKSDB);
        Run control = run(dir.resolve("control"), new UnsyncedWrites());
        for (Run run : List.of(synced, control)) {
            System.out.printf("%s: %d acknowledged, %d batches, %d WAL syncs, %d acknowledged unsynced%n",
                    run == synced ? "synced store" : "control", run.acknowledged(), run.batches(), run.syncs(),
                    run.unsynced().size());
        }

        assertThat(synced.acknowledged()).isEqualTo(WRITES + 1);
        assertThat(synced.applied()).as("every acknowledged write was seen applied").isEqualTo(WRITES + 1);
        assertThat(synced.unsynced()).as("writes acknowledged with no WAL sync since their batch was taken")
                .isEmpty();
        assertThat(synced.batches()).isPositive();
        assertThat(synced.syncs()).as("a WAL sync for every batch written").isGreaterThanOrEqualTo(synced.batches());
        assertThat(synced.fencesSynced()).as("create scope and begin unit synced their fence").isEqualTo(2);

        assertThat(control.acknowledged()).isEqualTo(WRITES + 1);
        assertThat(control.syncs()).as("the control never syncs").isZero();
        assertThat(control.unsynced()).as("the check catches every write the control acknowledged unsynced")
                .hasSize(control.applied()).hasSize(WRITES + 1);
        assertThat(control.fencesSynced()).isZero();
        try (StoreEngine reopened = StoreEngine.open(dir.resolve("control"), StoreOptions.defaults())) {
            for (int i = 0; i < WRITES; i++) {
                assertThat(reopened.get(scope(i), bytes("k" + i), null).present())
                        .as("a read-back after a reopen cannot tell the control from a synced store").isTrue();
            }
        }
    }

    /** Runs the workload on a new store in {@code directory} whose synced writes {@code syncedWrites} makes. */
    private static Run run(Path directory, SyncedWrites syncedWrites) throws Exception {
        RocksLibrary.load(); // before a Statistics, whose class would load the library with RocksDB's own loader
        try (Statistics statistics = new Statistics()) {
            StoreEngine store = StoreEngine.open(directory, StoreOptions.defaults(), syncedWrites, statistics);
            try {
                return workload(store, new WalSyncAudit(store, statistics));
            } finally {
                store.close();
            }
        }
    }

    /**
     * Queues {@value #WRITES} writes over {@value #SCOPES} scopes at once (the committer takes them in batches of
     * several), then creates a scope and commits a unit, each alone. No other synced write runs meanwhile, so every
     * WAL sync counted belongs to the write being checked.
     */
    private static Run workload(StoreEngine store, WalSyncAudit audit) throws Exception {
        long syncsBefore = audit.syncs();
        long batchesBefore = store.batchesWritten();
        List<CompletableFuture<WriteResult>> writes = new ArrayList<>();
        for (int i = 0; i < WRITES; i++) {
            writes.add(store.writeAsync(scope(i), sequencer(scope(i), i / SCOPES + 1),
                    List.of(Op.put(bytes("k" + i), bytes("v" + i))), i % 2 == 0 ? "req-" + i : null));
        }
        int acknowledged = 0;
        for (CompletableFuture<WriteResult> write : writes) {
            acknowledged += write.get(WAIT_SECONDS, TimeUnit.SECONDS).replayed() ? 0 : 1;
        }
        long syncs = audit.syncs() - syncsBefore;
        long batches = store.batchesWritten() - batchesBefore;
        int fencesSynced = audit.syncedAlone(() -> store.createScope("created", "created", FencePolicy.STRICT));
        Unit[] unit = new Unit[1];
        fencesSynced += audit.syncedAlone(() -> unit[0] = store.begin("unit", sequencer("unit", 1),
                Duration.ofSeconds(WAIT_SECONDS)));
        unit[0].put(bytes("k"), bytes("from the unit"));
        audit.beforeWriteAlone("unit");
        acknowledged += unit[0].commit().replayed() ? 0 : 1;
        return new Run(acknowledged, audit.applied(), audit.unsynced(), syncs, batches, fencesSynced);
    }

    private static String scope(int write) {
        return "scope-" + write % SCOPES;
    }

    /**
     * Checks, through the engine's own hooks, that RocksDB synced its WAL between the moment a write's batch was
     * taken ({@link StoreEngine.GroupListener}, before admission and before the batch is written) and the moment
     * the write is applied ({@link StoreEngine.ApplyListener}, after the batch is written, before any write of it
     * is acknowledged). Both hooks run on the committer's thread for batches, one batch after another.
     */
    private static final class WalSyncAudit {
        private final Statistics statistics;
        private final Map<String, Long> syncsWhenTaken = new ConcurrentHashMap<>();
        private final AtomicInteger applied = new AtomicInteger();
        private final List<String> unsynced = Collections.synchronizedList(new ArrayList<>());

        WalSyncAudit(StoreEngine store, Statistics statistics) {
            this.statistics = statistics;
            store.groupListener((scope, writes) -> syncsWhenTaken.put(scope, syncs()));
            store.applyListener(this::applied);
        }

        /** Returns the WAL syncs RocksDB has made since the store opened. */
        long syncs() {
            return statistics.getTickerCount(TickerType.WAL_FILE_SYNCED);
        }

        /** Marks the start of a write that takes no batch (a unit's commit); call just before it. */
        void beforeWriteAlone(String scope) {
            syncsWhenTaken.put(scope, syncs());
        }

        /** Runs a request that writes one fence record alone; returns 1 when a WAL sync followed, else 0. */
        int syncedAlone(Runnable request) {
            long before = syncs();
            request.run();
            return syncs() > before ? 1 : 0;
        }

        int applied() {
            return applied.get();
        }

        List<String> unsynced() {
            synchronized (unsynced) {
                return List.copyOf(unsynced);
            }
        }

        private void applied(String scope, long token, long acceptedBefore) {
            applied.incrementAndGet();
            Long before = syncsWhenTaken.get(scope);
            if (before == null || syncs() <= before) {
                unsynced.add(scope + "#" + token);
            }
        }
    }
}

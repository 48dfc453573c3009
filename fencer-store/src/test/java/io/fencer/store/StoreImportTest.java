package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.StaleTokenException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;

/**
 * Importing whole scopes of a backup into another store ({@link StoreEngine#importScope}): the round trip keeps every
 * key and accepted token, a rerun skips, a different scope is refused whole, and an accepted token is never lowered.
 */
class StoreImportTest {
    @TempDir
    Path dir;
    private StoreEngine source;
    private StoreEngine target;

    @BeforeEach
    void open() {
        source = StoreEngine.open(dir.resolve("source"), StoreOptions.defaults());
        target = StoreEngine.open(dir.resolve("target"), StoreOptions.defaults());
    }

    @AfterEach
    void close() {
        source.close();
        target.close();
    }

    @Test
    void importScope_ofEveryScopeOfABackup_keepsKeysAndAcceptedTokensAndRefusesOlderTokens() throws IOException {
        source.write("orders", sequencer("orders", 7), put("total", "42"), null);
        source.write("orders", sequencer("orders", 9), put("bin", "x"), "retry-1");
        source.createScope("jobs", "leader", FencePolicy.STRICT);
        source.write("jobs", sequencer("leader", 3), put("owner", "a"), null);
        source.createScope("empty", "empty", FencePolicy.AT_LEAST);

        List<ImportOutcome> outcomes = new ArrayList<>();
        for (ImportedScope scope : scopesOf(backup())) {
            outcomes.add(target.importScope(scope));
        }

        assertThat(outcomes).extracting(ImportOutcome::kind).containsOnly(ImportOutcome.Kind.IMPORTED).hasSize(3);
        for (String scope : List.of("orders", "jobs", "empty")) {
            assertThat(target.scope(scope)).isEqualTo(source.scope(scope));
        }
        ReadResult total = target.get("orders", bytes("total"), null);
        assertThat(text(total.value())).isEqualTo("42");
        assertThat(total.writtenBy()).isEqualTo(7);
        assertThat(text(target.get("jobs", bytes("owner"), null).value())).isEqualTo("a");
        assertThatThrownBy(() -> target.write("orders", sequencer("orders", 8), put("total", "0"), null))
                .isInstanceOf(StaleTokenException.class);
        assertThatThrownBy(() -> target.write("jobs", sequencer("leader", 3), put("owner", "b"), null))
                .as("STRICT kept").isInstanceOf(StaleTokenException.class);
    }

    @Test
    void importScope_rerunOfAnIdenticalScope_isSkippedAndRaisesButNeverLowersTheAcceptedToken() throws IOException {
        source.write("orders", sequencer("orders", 7), put("total", "42"), null);
        ImportedScope orders = scopesOf(backup()).get(0);
        assertThat(target.importScope(orders).kind()).isEqualTo(ImportOutcome.Kind.IMPORTED);

        ImportOutcome lower = target.importScope(orders.withAccepted(7 - 2 + 1)); // written by 7: 6 is refused
        ImportOutcome same = target.importScope(orders);
        ImportOutcome higher = target.importScope(orders.withAccepted(12));
        ImportOutcome lowerAgain = target.importScope(orders);

        assertThat(lower.kind()).isEqualTo(ImportOutcome.Kind.REFUSED); // a key written above the accepted token
        assertThat(same.kind()).isEqualTo(ImportOutcome.Kind.SKIPPED);
        assertThat(same.accepted()).isEqualTo(7);
        assertThat(higher.kind()).isEqualTo(ImportOutcome.Kind.SKIPPED);
        assertThat(higher.accepted()).isEqualTo(12);
        assertThat(lowerAgain.kind()).isEqualTo(ImportOutcome.Kind.SKIPPED);
        assertThat(lowerAgain.accepted()).as("never lowered").isEqualTo(12);
        assertThat(target.scope("orders").accepted()).isEqualTo(12);
        assertThat(target.scope("orders").revision()).isEqualTo(1);
    }

    @Test
    void importScope_ofAScopeHeldDifferently_isRefusedNamingWhatDiffersAndWritesNothing() throws IOException {
        source.write("orders", sequencer("orders", 7), put("total", "42"), null);
        ImportedScope orders = scopesOf(backup()).get(0);
        target.write("orders", sequencer("orders", 3), put("total", "other"), null); // same revision, other value

        ImportOutcome outcome = target.importScope(orders);

        assertThat(outcome.kind()).isEqualTo(ImportOutcome.Kind.CONFLICT);
        assertThat(outcome.detail()).contains("'orders'").contains("key");
        assertThat(text(target.get("orders", bytes("total"), null).value())).isEqualTo("other");
        assertThat(target.scope("orders").accepted()).isEqualTo(3);
        ImportOutcome bound = target.importScope(new ImportedScope("orders", "elsewhere", FencePolicy.AT_LEAST, 7, 1,
                orders.keys()));
        assertThat(bound.kind()).isEqualTo(ImportOutcome.Kind.CONFLICT);
        assertThat(bound.detail()).contains("lock 'orders'").contains("'elsewhere'");
    }

    /**
     * Regression: an import of many scopes synced RocksDB's log once a scope, so a request of a thousand scopes
     * outlasted a client's attempt on a slow disk and its retry reported every scope "skipped". The control half
     * shows the statistics count syncs at all: importing one scope at a time syncs once each.
     */
    @Test
    void importScopes_ofManyNewScopes_syncsTheLogOnceAfterTheLastAndKeepsThemAfterAReopen() {
        int count = 200;
        List<ImportedScope> many = new ArrayList<>();
        List<ImportedScope> oneByOne = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            many.add(new ImportedScope("s" + i, "s" + i, FencePolicy.AT_LEAST, 5, 1,
                    List.of(new ImportedScope.Key(bytes("k"), bytes("v" + i), 5))));
            oneByOne.add(new ImportedScope("t" + i, "t" + i, FencePolicy.AT_LEAST, 5, 1, List.of()));
        }
        Path directory = dir.resolve("counted");
        RocksLibrary.load(); // before a Statistics, whose class would load the library with RocksDB's own loader
        long manySyncs;
        long oneByOneSyncs;
        try (Statistics statistics = new Statistics();
                StoreEngine counted = StoreEngine.open(directory, StoreOptions.defaults(), SyncedWrites.ROCKSDB,
                        statistics)) {
            long before = statistics.getTickerCount(TickerType.WAL_FILE_SYNCED);
            List<ImportOutcome> outcomes = counted.importScopes(many);
            manySyncs = statistics.getTickerCount(TickerType.WAL_FILE_SYNCED) - before;
            assertThat(outcomes).extracting(ImportOutcome::kind).containsOnly(ImportOutcome.Kind.IMPORTED)
                    .hasSize(count);
            before = statistics.getTickerCount(TickerType.WAL_FILE_SYNCED);
            oneByOne.stream().limit(20).forEach(counted::importScope);
            oneByOneSyncs = statistics.getTickerCount(TickerType.WAL_FILE_SYNCED) - before;
        }

        assertThat(manySyncs).as("WAL syncs for %d scopes imported at once", count).isEqualTo(1);
        assertThat(oneByOneSyncs).as("control: WAL syncs for 20 scopes imported one at a time").isEqualTo(20);
        try (StoreEngine reopened = StoreEngine.open(directory, StoreOptions.defaults())) {
            assertThat(text(reopened.get("s" + (count - 1), bytes("k"), null).value())).isEqualTo("v" + (count - 1));
            assertThat(reopened.scope("s0").accepted()).isEqualTo(5);
        }
    }

    @Test
    void importScope_overTheStoresLimits_isRefusedNamingTheLimitAndWritesNothing() {
        ImportedScope longKey = new ImportedScope("orders", "orders", FencePolicy.AT_LEAST, 5, 1,
                List.of(new ImportedScope.Key(new byte[StoreOptions.defaults().keyBytesMax() + 1], bytes("v"), 5)));
        ImportedScope twice = new ImportedScope("orders", "orders", FencePolicy.AT_LEAST, 5, 2,
                List.of(new ImportedScope.Key(bytes("k"), bytes("v"), 5), new ImportedScope.Key(bytes("k"),
                        bytes("w"), 5)));

        ImportOutcome tooLong = target.importScope(longKey);
        ImportOutcome duplicate = target.importScope(twice);

        assertThat(tooLong.kind()).isEqualTo(ImportOutcome.Kind.REFUSED);
        assertThat(tooLong.detail()).contains(Integer.toString(StoreOptions.defaults().keyBytesMax() + 1))
                .contains(Integer.toString(StoreOptions.defaults().keyBytesMax()));
        assertThat(duplicate.kind()).isEqualTo(ImportOutcome.Kind.REFUSED);
        assertThat(duplicate.detail()).contains("twice");
        assertThat(target.scope("orders").exists()).isFalse();
    }

    @Test
    void readScopes_ofAScopeOverTheBound_handsItOnWithItsSizeAndNoKeys() throws IOException {
        source.write("big", sequencer("big", 2), put("k", "x".repeat(1000)), null);
        source.write("small", sequencer("small", 2), put("k", "y"), null);
        List<String> seen = new ArrayList<>();

        StoreBackupFile.readScopes(backup(), 500, (scope, keyBytes, whole) -> seen.add(scope.scope() + " "
                + keyBytes + " " + whole + " " + scope.keys().size()));

        assertThat(seen).containsExactlyInAnyOrder("big 1001 false 0", "small 2 true 1");
    }

    private Path backup() throws IOException {
        Path file = Files.createTempFile(dir, "store", ".fbk");
        try (StoreBackup backup = source.openBackup(0)) {
            try (var out = Files.newOutputStream(file)) {
                for (byte[] piece = backup.next(1 << 20); piece != null; piece = backup.next(1 << 20)) {
                    out.write(piece);
                }
            }
        }
        return file;
    }

    private static List<ImportedScope> scopesOf(Path file) throws IOException {
        List<ImportedScope> scopes = new ArrayList<>();
        StoreBackupFile.readScopes(file, Long.MAX_VALUE, (scope, keyBytes, whole) -> scopes.add(scope));
        return scopes;
    }
}

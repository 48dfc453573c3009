package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.FlushOptions;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;

/** The store's RocksDB options, read back from the options file RocksDB writes, and what they must not change. */
class StoreDatabaseTest {
    private static final String HINT_OPTION = "memtable_insert_with_hint_prefix_extractor";
    private static final int KEYS = 64;
    private static final int VERSIONS = 3_000;

    @TempDir
    Path dir;

    @Test
    void open_rewrittenFamilies_insertWithAHintAndTheIdempotencyFamilyWithout() throws Exception {
        StoreDatabase database = StoreDatabase.open(dir, SyncedWrites.ROCKSDB, null);
        database.close(() -> {});

        Map<String, String> hints = optionByFamily(dir, HINT_OPTION);

        String hint = "rocksdb.CappedPrefix." + StoreDatabase.INSERT_HINT_PREFIX_BYTES;
        assertThat(hints).containsEntry("data", hint).containsEntry("fence", hint);
        assertThat(hints.get("idem")).as("unique keys keep the plain search").isIn("nullptr", "");
        assertThat(optionByFamily(dir, "write_buffer_size"))
                .containsEntry("data", Long.toString(StoreDatabase.MEMTABLE_BYTES))
                .containsEntry("idem", Long.toString(StoreDatabase.MEMTABLE_BYTES));
    }

    /**
     * The hint only chooses where a search starts: every version stays in the memtable, so a snapshot still reads
     * the versions of its moment, across flushes, unlike an update in place.
     */
    @Test
    void snapshot_keysRewrittenWithTheHintAcrossFlushes_readsTheVersionsOfItsMoment() throws Exception {
        StoreDatabase database = StoreDatabase.open(dir, SyncedWrites.ROCKSDB, null);
        Snapshot middle = null;
        database.enter();
        try {
            for (int version = 0; version < VERSIONS; version++) {
                try (WriteBatch batch = new WriteBatch()) {
                    for (int key = 0; key < KEYS; key++) {
                        batch.put(database.fenceFamily(), bytes("scope-" + key), bytes("v" + version));
                        batch.put(database.dataFamily(), bytes("scope-" + key + "/k"), bytes("v" + version));
                    }
                    database.writeUnsynced(batch);
                }
                if (version == VERSIONS / 2) {
                    middle = database.snapshot();
                }
                if (version % 1_000 == 999) {
                    try (FlushOptions wait = new FlushOptions().setWaitForFlush(true)) {
                        database.flush(wait);
                    }
                }
            }
            assertThat(read(database, null)).as("the latest versions").hasSize(2 * KEYS)
                    .allSatisfy((key, value) -> assertThat(value).isEqualTo("v" + (VERSIONS - 1)));
            try (ReadOptions atMiddle = new ReadOptions().setSnapshot(middle)) {
                assertThat(read(database, atMiddle)).as("the versions at the snapshot").hasSize(2 * KEYS)
                        .allSatisfy((key, value) -> assertThat(value).isEqualTo("v" + VERSIONS / 2));
            }
            database.release(middle);
        } finally {
            database.exit();
            database.close(() -> {});
        }
    }

    /** Every record of the fence and data families, read at {@code options}'s snapshot, or the latest if null. */
    private static Map<String, String> read(StoreDatabase database, ReadOptions options) {
        Map<String, String> values = new HashMap<>();
        for (var family : List.of(database.fenceFamily(), database.dataFamily())) {
            try (RocksIterator iterator = options == null ? database.newIterator(family)
                    : database.newIterator(family, options)) {
                for (iterator.seekToFirst(); iterator.isValid(); iterator.next()) {
                    values.put(text(iterator.key()), text(iterator.value()));
                }
            }
        }
        return values;
    }

    /** One option's value in each column family of the newest options file: {@code [CFOptions "name"]} sections. */
    private static Map<String, String> optionByFamily(Path dir, String option) throws IOException {
        Path newest;
        try (Stream<Path> files = Files.list(dir)) {
            newest = files.filter(file -> file.getFileName().toString().startsWith("OPTIONS-"))
                    .max((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString())).orElseThrow();
        }
        Map<String, String> values = new HashMap<>();
        String family = null;
        for (String line : Files.readAllLines(newest)) {
            String trimmed = line.strip();
            if (trimmed.startsWith("[CFOptions \"")) {
                family = trimmed.substring("[CFOptions \"".length(), trimmed.length() - 2);
            } else if (trimmed.startsWith("[")) {
                family = null;
            } else if (family != null && trimmed.startsWith(option + "=")) {
                values.put(family, trimmed.substring(option.length() + 1));
            }
        }
        assertThat(values).as("families in %s", newest).containsKeys("default", "data", "fence", "idem");
        return values;
    }
}

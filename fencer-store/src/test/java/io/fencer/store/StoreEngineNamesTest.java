package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.InvalidArgumentException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A new scope's name must not hold invisible or text-reordering characters (two scopes must not look alike); a
 * scope kept from before that rule still loads and takes writes.
 */
class StoreEngineNamesTest {
    /** A name as it may have been kept before the rule: "ab" with a zero-width space between. */
    private static final String OLD_NAME = "a\u200Bb";

    @TempDir
    Path dir;

    @Test
    void writeBeginAndCreateScope_ofANewScopeWithHiddenCharacters_areRefusedNamingTheCodePoint() {
        try (StoreEngine store = StoreEngine.open(dir, StoreOptions.defaults())) {
            String bidi = "or\u202Eders";

            assertThatThrownBy(() -> store.write(bidi, sequencer(bidi, 1), put("k", "v"), null))
                    .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                        assertThat(e.field()).isEqualTo("scope");
                        assertThat(e.getMessage()).contains("U+202E", "a bidirectional control", "position 2");
                    });
            assertThatThrownBy(() -> store.begin(OLD_NAME, sequencer(OLD_NAME, 1), Duration.ofSeconds(5)))
                    .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("U+200B");
            assertThatThrownBy(() -> store.createScope("\uFEFFjobs", "\uFEFFjobs", FencePolicy.STRICT))
                    .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("U+FEFF");
            assertThat(store.scope(bidi).exists()).as("nothing was created").isFalse();
        }
    }

    @Test
    void open_ofAScopeKeptBeforeTheRule_loadsAndTakesWritesAndUnits() throws Exception {
        StoreDatabase database = StoreDatabase.open(dir, SyncedWrites.ROCKSDB, null);
        try {
            database.putSynced(database.fenceFamily(), StoreCodec.fenceKey(OLD_NAME),
                    StoreCodec.fenceValue(OLD_NAME, FencePolicy.AT_LEAST, 4, 1));
        } finally {
            database.close(() -> { });
        }

        try (StoreEngine store = StoreEngine.open(dir, StoreOptions.defaults())) {
            WriteResult written = store.write(OLD_NAME, sequencer(OLD_NAME, 5), put("k", "v"), null);
            Unit unit = store.begin(OLD_NAME, sequencer(OLD_NAME, 6), Duration.ofSeconds(5));
            unit.add(Op.put(bytes("u"), bytes("w")));
            unit.commit();

            assertThat(written.accepted()).isEqualTo(5);
            assertThat(text(store.get(OLD_NAME, bytes("u"), null).value())).isEqualTo("w");
            assertThat(store.createScope(OLD_NAME, OLD_NAME, FencePolicy.AT_LEAST).exists())
                    .as("its existing binding is returned").isTrue();
        }
    }
}

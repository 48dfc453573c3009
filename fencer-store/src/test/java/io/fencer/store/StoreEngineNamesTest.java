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

    /**
     * The rule holds while a read of the scope has left its temporary placeholder (as {@link StoreEngine#scope}
     * does while it holds the scope's guard): the check was made only for a name absent from the table, so a write
     * or unit arriving during such a read created the scope, and on one replica only when the read ran there.
     */
    @Test
    void writeAndBegin_ofANewScopeWithHiddenCharacters_whileAReadHoldsItsPlaceholder_areRefused() {
        try (StoreEngine store = StoreEngine.open(dir, StoreOptions.defaults())) {
            ScopeState read = store.scopes().lock(OLD_NAME);
            java.util.concurrent.CompletableFuture<Unit> begun;
            try {
                assertThatThrownBy(() -> store.writeAsync(OLD_NAME, sequencer(OLD_NAME, 1), put("k", "v"), null))
                        .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("U+200B");
                begun = java.util.concurrent.CompletableFuture.supplyAsync(() -> store.begin(OLD_NAME,
                        sequencer(OLD_NAME, 2), Duration.ofSeconds(5)));
                // refused at once, or (unchecked) waiting for the guard the read holds
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                        .until(() -> begun.isDone() || read.guard.hasQueuedThreads());
            } finally {
                store.scopes().unlock(read);
            }

            assertThatThrownBy(() -> begun.get(10, java.util.concurrent.TimeUnit.SECONDS))
                    .hasCauseInstanceOf(InvalidArgumentException.class).hasMessageContaining("U+200B");
            assertThat(store.scope(OLD_NAME).exists()).as("nothing was created").isFalse();
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

package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.ErrorReason;
import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.StaleTokenException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Shared-mode (reader) tokens at the store: fenced reads accepted, writes refused with MODE_MISMATCH. */
class StoreEngineModeTest {
    @TempDir
    Path dir;
    private StoreEngine store;

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir, StoreOptions.defaults());
    }

    @AfterEach
    void close() {
        store.close();
    }

    private static String shared(String lock, long value) {
        return new FencingToken(lock, value, LockMode.SHARED).sequencer();
    }

    @Test
    void write_sharedToken_isModeMismatchAndAdvancesNothing() {
        store.write("orders", sequencer("orders", 3), put("k", "from 3"), null);

        assertThatThrownBy(() -> store.write("orders", shared("orders", 5), put("k", "from 5"), null))
                .isInstanceOfSatisfying(ModeMismatchException.class, e -> {
                    assertThat(e.reason()).isEqualTo(ErrorReason.MODE_MISMATCH);
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.presented()).isEqualTo(5);
                    assertThat(e.mode()).isEqualTo(LockMode.SHARED);
                });
        assertThat(store.accepted("orders")).isEqualTo(3);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 3");
    }

    @Test
    void begin_sharedToken_isModeMismatch() {
        assertThatThrownBy(() -> store.begin("orders", shared("orders", 5), Duration.ofSeconds(5)))
                .isInstanceOf(ModeMismatchException.class);
        assertThat(store.accepted("orders")).isEqualTo(FencingToken.NONE);
    }

    @Test
    void get_sharedToken_readsUntilALaterExclusiveGrantHasWritten() {
        store.write("orders", sequencer("orders", 3), put("k", "from 3"), null);
        ReadResult read = store.get("orders", bytes("k"), shared("orders", 4));
        assertThat(text(read.value())).isEqualTo("from 3");

        store.write("orders", sequencer("orders", 6), put("k", "from 6"), null);
        assertThatThrownBy(() -> store.get("orders", bytes("k"), shared("orders", 4)))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(6));
        assertThat(text(store.get("orders", bytes("k"), shared("orders", 7)).value())).isEqualTo("from 6");
    }
}

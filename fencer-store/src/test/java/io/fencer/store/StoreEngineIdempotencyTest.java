package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.ManualTicker;
import io.fencer.core.StaleTokenException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksDBException;

/**
 * Invariant 8: a retry with the same idempotency key, token and ops returns the first result, applied once; the
 * same key and token with other ops is refused and applies nothing.
 */
class StoreEngineIdempotencyTest {
    @TempDir
    Path dir;
    private final ManualTicker ticker = new ManualTicker();
    private StoreEngine store;

    @AfterEach
    void close() {
        store.close();
    }

    private void open(StoreOptions options) {
        store = StoreEngine.open(dir, options.withTicker(ticker));
    }

    @Test
    void write_retrySameKeyAndToken_returnsFirstResultAppliedOnce() {
        open(StoreOptions.defaults());
        WriteResult first = store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1");

        WriteResult retry = store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1");

        assertThat(first.replayed()).isFalse();
        assertThat(retry.replayed()).isTrue();
        assertThat(retry).isEqualTo(first.asReplay());
        assertThat(store.scope("orders").revision()).as("applied once").isEqualTo(1);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("first");
        WriteResult other = store.write("orders", sequencer("orders", 4), put("k", "second"), "req-2");
        assertThat(other.replayed()).isFalse();
        assertThat(other.revision()).isEqualTo(2);
    }

    @Test
    void write_retryWithSupersededToken_isRefusedAsStale() {
        open(StoreOptions.defaults());
        store.write("orders", sequencer("orders", 4), put("k", "from 4"), "req-1");
        store.write("orders", sequencer("orders", 5), put("k", "from 5"), "req-2");

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("k", "from 4"), "req-1"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.presented()).isEqualTo(4);
                    assertThat(e.accepted()).isEqualTo(5);
                });
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 5");
    }

    @Test
    void write_sameKeyWithHigherToken_isANewWrite() {
        open(StoreOptions.defaults());
        store.write("orders", sequencer("orders", 4), put("k", "from 4"), "req-1");

        WriteResult higher = store.write("orders", sequencer("orders", 5), put("k", "from 5"), "req-1");

        assertThat(higher.replayed()).isFalse();
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 5");
        assertThat(store.write("orders", sequencer("orders", 5), put("k", "from 5"), "req-1").replayed()).isTrue();
    }

    @Test
    void write_strictScopeRetry_replaysInsteadOfRefusing() {
        open(StoreOptions.defaults());
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        WriteResult first = store.write("ledger", sequencer("ledger", 4), put("k", "v"), "req-1");

        assertThat(store.write("ledger", sequencer("ledger", 4), put("k", "v"), "req-1")).isEqualTo(first.asReplay());
        assertThatThrownBy(() -> store.write("ledger", sequencer("ledger", 4), put("k", "v"), "req-2"))
                .isInstanceOf(StaleTokenException.class);
    }

    @Test
    void write_retryAfterReopen_stillReplays() {
        open(StoreOptions.defaults());
        WriteResult first = store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1");
        store.close();
        open(StoreOptions.defaults());

        assertThat(store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1"))
                .isEqualTo(first.asReplay());
        assertThat(store.idempotencyEntries()).isEqualTo(1);
    }

    @Test
    void write_sameKeyAndTokenWithOtherValue_isRefusedNamingScopeAndKeyAndAppliesNothing() {
        open(StoreOptions.defaults());
        WriteResult first = store.write("orders", sequencer("orders", 4), put("k", "secret-first"), "req-1");

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("k", "secret-other"), "req-1"))
                .isInstanceOfSatisfying(IdempotencyMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.idempotencyKey()).isEqualTo("req-1");
                    assertThat(e.token()).isEqualTo(4);
                    assertThat(e.reason()).isEqualTo(ErrorReason.IDEMPOTENCY_MISMATCH);
                })
                .hasMessageContaining("'orders'").hasMessageContaining("'req-1'")
                .hasMessageNotContaining("secret-other").hasMessageNotContaining("secret-first");
        assertThat(store.scope("orders").revision()).as("nothing applied").isEqualTo(1);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("secret-first");
        assertThat(store.write("orders", sequencer("orders", 4), put("k", "secret-first"), "req-1"))
                .as("the first result still answers the true retry").isEqualTo(first.asReplay());
    }

    @Test
    void write_sameKeyAndTokenWithOpsReorderedOrOfAnotherKind_isRefused() {
        open(StoreOptions.defaults());
        Op putA = Op.put(bytes("a"), bytes("1"));
        Op putB = Op.put(bytes("b"), bytes("2"));
        store.write("orders", sequencer("orders", 4), List.of(putA, putB), "req-1");
        store.write("orders", sequencer("orders", 4), List.of(Op.delete(bytes("c"))), "req-2");

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), List.of(putB, putA), "req-1"))
                .as("same ops in another order").isInstanceOf(IdempotencyMismatchException.class);
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), List.of(putA), "req-1"))
                .as("fewer ops").isInstanceOf(IdempotencyMismatchException.class);
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("c", ""), "req-2"))
                .as("a put where a delete was").isInstanceOf(IdempotencyMismatchException.class);
        assertThat(store.write("orders", sequencer("orders", 4), List.of(putA, putB), "req-1").replayed()).isTrue();
        assertThat(store.scope("orders").revision()).isEqualTo(2);
    }

    @Test
    void write_otherOpsAfterReopen_isRefusedByTheDigestOnDisk() {
        open(StoreOptions.defaults());
        WriteResult first = store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1");
        store.close();
        open(StoreOptions.defaults());

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("k", "other"), "req-1"))
                .isInstanceOf(IdempotencyMismatchException.class);
        assertThat(store.write("orders", sequencer("orders", 4), put("k", "first"), "req-1"))
                .isEqualTo(first.asReplay());
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("first");
    }

    @Test
    void write_otherOpsWithSupersededToken_isRefusedAsStale() {
        open(StoreOptions.defaults());
        store.write("orders", sequencer("orders", 4), put("k", "from 4"), "req-1");
        store.write("orders", sequencer("orders", 5), put("k", "from 5"), null);

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("k", "other"), "req-1"))
                .isInstanceOf(StaleTokenException.class);
    }

    @Test
    void write_recordWrittenBeforeDigestsWereKept_readsAfterUpgradeAndMatchesAnyRetry() {
        open(StoreOptions.defaults());
        store.write("orders", sequencer("orders", 4), put("k", "first"), null);
        putRecordOfTheLayoutBeforeDigests("orders", "req-1", 4, 4, 1, 1, 1);
        store.close();
        open(StoreOptions.defaults());

        WriteResult replay = store.write("orders", sequencer("orders", 4), put("k", "other ops"), "req-1");
        WriteResult upgraded = store.write("orders", sequencer("orders", 4), put("k", "second"), "req-2");

        assertThat(replay).as("no digest: treated as matching")
                .isEqualTo(new WriteResult("orders", 4, 4, 1, 1, true));
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("second");
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("k", "third"), "req-2"))
                .as("records written since carry a digest").isInstanceOf(IdempotencyMismatchException.class);
        store.close();
        open(StoreOptions.defaults());
        assertThat(store.idempotencyEntries()).isEqualTo(2);
        assertThat(store.write("orders", sequencer("orders", 4), put("k", "any"), "req-1")).isEqualTo(replay);
        assertThat(store.write("orders", sequencer("orders", 4), put("k", "second"), "req-2"))
                .isEqualTo(upgraded.asReplay());
    }

    /**
     * Puts an idem record as builds before the ops digest wrote it (version 1, no digest), synced, into the open
     * store's column family: what an upgraded store finds on disk.
     */
    private void putRecordOfTheLayoutBeforeDigests(String scope, String idempotencyKey, long token, long accepted,
            long revision, int opsApplied, long sequence) {
        byte[] value = ByteBuffer.allocate(1 + Long.BYTES * 4 + Integer.BYTES).put((byte) 1).putLong(token)
                .putLong(accepted).putLong(revision).putInt(opsApplied).putLong(sequence).array();
        StoreDatabase database = store.database();
        database.enter();
        try {
            database.putSynced(database.idempotencyFamily(), StoreCodec.idempotencyKey(scope, idempotencyKey), value);
        } catch (RocksDBException e) {
            throw new AssertionError(e);
        } finally {
            database.exit();
        }
    }

    @Test
    void write_keysAreScopedPerScope() {
        open(StoreOptions.defaults());
        store.write("a", sequencer("a", 1), put("k", "a"), "req-1");

        assertThat(store.write("b", sequencer("b", 1), put("k", "b"), "req-1").replayed()).isFalse();
    }

    @Test
    void write_beyondEntriesMax_evictsOldestFirst() {
        open(StoreOptions.defaults().withIdempotencyEntriesMax(3));
        for (int i = 1; i <= 5; i++) {
            store.write("orders", sequencer("orders", 1), put("k", "v" + i), "req-" + i);
            assertThat(store.idempotencyEntries()).isLessThanOrEqualTo(3);
        }

        assertThat(store.write("orders", sequencer("orders", 1), put("k", "v5"), "req-5").replayed()).isTrue();
        assertThat(store.write("orders", sequencer("orders", 1), put("k", "again"), "req-1").replayed())
                .as("the oldest record was evicted, so this retry applies").isFalse();
        store.close();
        open(StoreOptions.defaults().withIdempotencyEntriesMax(3));
        assertThat(store.idempotencyEntries()).as("evictions are on disk too").isLessThanOrEqualTo(3);
    }

    @Test
    void write_recordOlderThanAgeMax_isForgottenAndSwept() {
        open(StoreOptions.defaults().withIdempotencyAgeMax(Duration.ofMinutes(5)));
        store.write("orders", sequencer("orders", 1), put("k", "first"), "req-1");
        store.write("orders", sequencer("orders", 1), put("k", "second"), "req-2");
        ticker.advance(Duration.ofMinutes(3));
        store.write("orders", sequencer("orders", 1), put("k", "third"), "req-3");
        ticker.advance(Duration.ofMinutes(2).plusNanos(1));

        assertThat(store.write("orders", sequencer("orders", 1), put("k", "retry"), "req-1").replayed()).isFalse();
        assertThat(store.sweepIdempotency()).isEqualTo(1); // req-2; req-1 was rewritten just now
        assertThat(store.idempotencyEntries()).isEqualTo(2);
        assertThat(store.write("orders", sequencer("orders", 1), put("k", "third"), "req-3").replayed()).isTrue();
        store.close();
        open(StoreOptions.defaults());
        assertThat(store.idempotencyEntries()).isEqualTo(2);
    }
}

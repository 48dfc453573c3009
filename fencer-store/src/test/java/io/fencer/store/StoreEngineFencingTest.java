package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fence at the store: the resource keeps the highest token it accepted and refuses older ones. */
class StoreEngineFencingTest {
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

    @Test
    void write_lowerTokenAfterHigher_isRefusedWithAcceptedHigher() {
        WriteResult second = store.write("orders", sequencer("orders", 32), put("k", "from 32"), null);
        assertThat(second.accepted()).isEqualTo(32);

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 31), put("k", "from 31"), null))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.presented()).isEqualTo(31);
                    assertThat(e.accepted()).isEqualTo(32);
                })
                .hasMessageContaining("orders#31").hasMessageContaining("orders#32");
        ReadResult read = store.get("orders", bytes("k"), null);
        assertThat(text(read.value())).isEqualTo("from 32");
        assertThat(read.writtenBy()).isEqualTo(32);
        assertThat(read.accepted()).isEqualTo(32);
        assertThat(store.accepted("orders")).isEqualTo(32);
    }

    @Test
    void write_afterCloseAndReopen_stillRefusesOlderToken() {
        store.write("orders", sequencer("orders", 32), put("k", "from 32"), null);
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());

        assertThat(store.accepted("orders")).isEqualTo(32);
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 31), put("k", "from 31"), null))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(32));
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 32");
        assertThat(store.write("orders", sequencer("orders", 33), put("k", "from 33"), null).revision()).isEqualTo(2);
    }

    @Test
    void write_strictPolicy_refusesSecondWriteWithSameToken() {
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        store.write("ledger", sequencer("ledger", 5), put("k", "first"), null);

        assertThatThrownBy(() -> store.write("ledger", sequencer("ledger", 5), put("k", "second"), null))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.presented()).isEqualTo(5);
                    assertThat(e.accepted()).isEqualTo(5);
                })
                .hasMessageContaining("STRICT");
        assertThat(text(store.get("ledger", bytes("k"), null).value())).isEqualTo("first");
        store.write("ledger", sequencer("ledger", 6), put("k", "third"), null);
        assertThat(text(store.get("ledger", bytes("k"), null).value())).isEqualTo("third");
    }

    @Test
    void write_strictPolicy_survivesReopen() {
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        store.write("ledger", sequencer("ledger", 5), put("k", "first"), null);
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());

        assertThat(store.scope("ledger").policy()).isEqualTo(FencePolicy.STRICT);
        assertThatThrownBy(() -> store.write("ledger", sequencer("ledger", 5), put("k", "second"), null))
                .isInstanceOf(StaleTokenException.class);
    }

    @Test
    void write_atLeastPolicy_admitsSameTokenAgain() {
        store.write("orders", sequencer("orders", 5), put("k", "first"), null);
        WriteResult again = store.write("orders", sequencer("orders", 5), put("k", "second"), null);

        assertThat(again.accepted()).isEqualTo(5);
        assertThat(again.revision()).isEqualTo(2);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("second");
    }

    @Test
    void write_putsAndDeletes_applyTogetherWithWriterToken() {
        store.write("orders", sequencer("orders", 1), List.of(Op.put(bytes("a"), bytes("1")),
                Op.put(bytes("b"), bytes("2"))), null);
        WriteResult result = store.write("orders", sequencer("orders", 2), List.of(Op.delete(bytes("a")),
                Op.put(bytes("c"), bytes("3")), Op.delete(bytes("never-there"))), null);

        assertThat(result.opsApplied()).isEqualTo(3);
        assertThat(store.get("orders", bytes("a"), null).present()).isFalse();
        assertThat(store.get("orders", bytes("a"), null).writtenBy()).isZero();
        assertThat(store.get("orders", bytes("b"), null).writtenBy()).isEqualTo(1);
        assertThat(store.get("orders", bytes("c"), null).writtenBy()).isEqualTo(2);
        assertThat(store.get("orders", bytes("b"), null).accepted()).isEqualTo(2);
    }

    @Test
    void get_withStaleSequencer_isRefusedAndCurrentOneReads() {
        store.write("orders", sequencer("orders", 7), put("k", "v"), null);

        assertThatThrownBy(() -> store.get("orders", bytes("k"), sequencer("orders", 6)))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(7));
        assertThat(text(store.get("orders", bytes("k"), sequencer("orders", 7)).value())).isEqualTo("v");
        assertThat(store.get("orders", bytes("k"), sequencer("orders", 9)).accepted())
                .as("a read never raises the fence").isEqualTo(7);
        assertThat(store.accepted("orders")).isEqualTo(7);
    }

    @Test
    void get_strictScopeWithCurrentToken_readsOwnWrite() {
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        store.write("ledger", sequencer("ledger", 3), put("k", "v"), null);

        assertThat(text(store.get("ledger", bytes("k"), sequencer("ledger", 3)).value())).isEqualTo("v");
    }

    @Test
    void get_unknownScopeOrKey_isAbsentWithNoAcceptedToken() {
        ReadResult read = store.get("nothing", bytes("k"), sequencer("nothing", 1));
        assertThat(read.present()).isFalse();
        assertThat(read.accepted()).isZero();
        assertThat(store.scope("nothing").exists()).isFalse();
        assertThat(store.accepted("nothing")).isZero();
    }

    @Test
    void createScope_boundToAnotherLock_admitsThatLockOnly() {
        store.createScope("eu-orders", "orders", FencePolicy.AT_LEAST);

        store.write("eu-orders", sequencer("orders", 4), put("k", "v"), null);
        assertThatThrownBy(() -> store.write("eu-orders", sequencer("eu-orders", 99), put("k", "x"), null))
                .isInstanceOfSatisfying(ScopeMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("eu-orders");
                    assertThat(e.tokenLock()).isEqualTo("eu-orders");
                });
        assertThatThrownBy(() -> store.get("eu-orders", bytes("k"), sequencer("eu-orders", 99)))
                .isInstanceOf(ScopeMismatchException.class);
        ScopeInfo info = store.scope("eu-orders");
        assertThat(info.lock()).isEqualTo("orders");
        assertThat(info.accepted()).isEqualTo(4);
        assertThat(info.revision()).isEqualTo(1);
    }

    @Test
    void binding_isEmptyUntilAFenceRecordHoldsIt_thenTheLockAlsoAfterReopen() {
        assertThatThrownBy(() -> store.write("refused", sequencer("elsewhere", 1), put("k", "v"), null))
                .isInstanceOf(ScopeMismatchException.class);
        store.createScope("eu-orders", "orders", FencePolicy.AT_LEAST);
        store.write("plain", sequencer("plain", 1), put("k", "v"), null);

        Optional<String> never = store.binding("never");
        Optional<String> refused = store.binding("refused");
        Optional<String> created = store.binding("eu-orders");
        Optional<String> written = store.binding("plain");
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());

        assertThat(never).isEmpty();
        assertThat(refused).as("a refused first write leaves no binding").isEmpty();
        assertThat(created).contains("orders");
        assertThat(written).contains("plain");
        assertThat(store.binding("eu-orders")).contains("orders");
        assertThat(store.binding("plain")).contains("plain");
    }

    @Test
    void createScope_existingWithOtherBinding_isRefusedAndSameBindingIsIdempotent() {
        store.write("orders", sequencer("orders", 1), put("k", "v"), null);

        assertThat(store.createScope("orders", "orders", FencePolicy.AT_LEAST).accepted()).isEqualTo(1);
        assertThatThrownBy(() -> store.createScope("orders", "payments", FencePolicy.AT_LEAST))
                .isInstanceOf(io.fencer.core.InvalidArgumentException.class)
                .hasMessageContaining("already bound to lock 'orders'");
        assertThatThrownBy(() -> store.createScope("orders", "orders", FencePolicy.STRICT))
                .isInstanceOf(io.fencer.core.InvalidArgumentException.class).hasMessageContaining("STRICT");
    }

    @Test
    void write_beyondScopesMax_isRefusedAndRefusedWritesCreateNoScope() {
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults().withScopesMax(2));
        store.write("a", sequencer("a", 1), put("k", "v"), null);
        assertThatThrownBy(() -> store.write("b", sequencer("x", 1), put("k", "v"), null))
                .isInstanceOf(ScopeMismatchException.class);
        store.write("b", sequencer("b", 1), put("k", "v"), null);

        assertThatThrownBy(() -> store.write("c", sequencer("c", 1), put("k", "v"), null))
                .isInstanceOfSatisfying(LimitExceededException.class, e -> {
                    assertThat(e.limit()).isEqualTo("scopesMax");
                    assertThat(e.limitValue()).isEqualTo(2);
                })
                .hasMessageContaining("scope 'c'");
        assertThat(store.scope("c").exists()).isFalse();
        store.write("a", sequencer("a", 2), put("k", "v"), null); // existing scopes still take writes
    }
}

package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ManualTicker;
import io.fencer.core.StaleTokenException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Invariant 7: a unit is checked once, holds its scope, and applies entirely or not at all. */
class StoreEngineUnitTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    private final ManualTicker ticker = new ManualTicker();
    private StoreEngine store;

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir, StoreOptions.defaults().withTicker(ticker));
        store.write("orders", sequencer("orders", 1), put("a", "before"), null);
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    void commit_appliesEveryBufferedOpAtOnce() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("unit a"));
        unit.put(bytes("b"), bytes("unit b"));
        unit.delete(bytes("a"));
        unit.put(bytes("c"), bytes("unit c"));
        assertThat(text(store.get("orders", bytes("a"), null).value())).as("nothing visible before commit")
                .isEqualTo("before");
        assertThat(store.get("orders", bytes("b"), null).present()).isFalse();

        WriteResult result = unit.commit();

        assertThat(result.opsApplied()).isEqualTo(4);
        assertThat(result.token()).isEqualTo(2);
        assertThat(store.get("orders", bytes("a"), null).present()).isFalse();
        assertThat(text(store.get("orders", bytes("b"), null).value())).isEqualTo("unit b");
        assertThat(store.get("orders", bytes("c"), null).writtenBy()).isEqualTo(2);
        assertThat(unit.state()).isEqualTo(Unit.State.COMMITTED);
        assertThat(unit.commit()).as("a repeated commit returns the same result").isEqualTo(result);
        assertThat(store.unit(unit.id())).isEmpty();
        assertThat(store.scope("orders").openUnitId()).isNull();
    }

    @Test
    void commit_afterPreemptionByHigherWrite_appliesNothingAndNamesPreemptingToken() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("unit a"));
        unit.put(bytes("b"), bytes("unit b"));

        store.write("orders", sequencer("orders", 3), put("c", "from 3"), null);

        assertThat(unit.state()).isEqualTo(Unit.State.PREEMPTED);
        assertThatThrownBy(unit::commit).isInstanceOfSatisfying(StaleTokenException.class, e -> {
            assertThat(e.presented()).isEqualTo(2);
            assertThat(e.accepted()).isEqualTo(3);
        }).hasMessageContaining("orders#3");
        assertThatThrownBy(() -> unit.put(bytes("d"), bytes("late"))).isInstanceOf(StaleTokenException.class);
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        assertThat(store.get("orders", bytes("b"), null).present()).isFalse();
        assertThat(text(store.get("orders", bytes("c"), null).value())).isEqualTo("from 3");
        assertThat(store.accepted("orders")).isEqualTo(3);
        assertThat(store.unitsOpen()).isZero();
    }

    @Test
    void begin_higherToken_preemptsOpenUnit() {
        Unit lower = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        lower.put(bytes("a"), bytes("lower"));
        Unit higher = store.begin("orders", sequencer("orders", 3), TIMEOUT);
        higher.put(bytes("b"), bytes("higher"));

        assertThatThrownBy(lower::commit).isInstanceOf(StaleTokenException.class).hasMessageContaining("orders#3");
        higher.commit();
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        assertThat(text(store.get("orders", bytes("b"), null).value())).isEqualTo("higher");
    }

    @Test
    void openUnit_refusesEqualTokenAsBusyAndLowerAsStale() {
        Unit unit = store.begin("orders", sequencer("orders", 5), TIMEOUT);

        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 5), put("x", "y"), null))
                .isInstanceOfSatisfying(LimitExceededException.class,
                        e -> assertThat(e.limit()).isEqualTo("unitsPerScopeMax"))
                .hasMessageContaining(unit.id()).hasMessageContaining("orders#5");
        assertThatThrownBy(() -> store.begin("orders", sequencer("orders", 5), TIMEOUT))
                .isInstanceOf(LimitExceededException.class);
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 4), put("x", "y"), null))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(5));
        assertThat(unit.state()).isEqualTo(Unit.State.OPEN);
        assertThat(store.scope("orders").openUnitId()).isEqualTo(unit.id());
        assertThat(store.unit(unit.id())).containsSame(unit);
        assertThat(store.get("orders", bytes("x"), null).present()).isFalse();
    }

    @Test
    void begin_raisesAcceptedDurably_soLowerTokensStayRefusedAfterRestart() {
        store.begin("orders", sequencer("orders", 8), TIMEOUT).put(bytes("a"), bytes("never committed"));
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults().withTicker(ticker));

        assertThat(store.unitsOpen()).isZero();
        assertThat(store.accepted("orders")).isEqualTo(8);
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 7), put("a", "x"), null))
                .isInstanceOf(StaleTokenException.class);
        store.write("orders", sequencer("orders", 8), put("a", "after"), null);
    }

    @Test
    void expireUnits_abandonedUnitPastDeadline_isAbortedAndScopeReleased() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("abandoned"));
        ticker.advance(TIMEOUT.minusMillis(1));
        assertThat(store.expireUnits()).isZero();
        assertThat(unit.state()).isEqualTo(Unit.State.OPEN);

        ticker.advance(Duration.ofMillis(1));
        assertThat(store.expireUnits()).isEqualTo(1);

        assertThat(unit.state()).isEqualTo(Unit.State.EXPIRED);
        assertThat(store.unit(unit.id())).isEmpty();
        assertThatThrownBy(unit::commit).isInstanceOfSatisfying(LimitExceededException.class,
                e -> assertThat(e.limit()).isEqualTo("unitTimeout")).hasMessageContaining("PT10S");
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        store.write("orders", sequencer("orders", 2), put("a", "same holder, plain write"), null);
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("same holder, plain write");
    }

    @Test
    void commit_pastDeadlineBeforeSweep_isRefusedAndAppliesNothing() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("late"));
        ticker.advance(TIMEOUT);

        assertThatThrownBy(unit::commit).isInstanceOf(LimitExceededException.class);
        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        assertThat(store.unitsOpen()).isZero();
    }

    /**
     * Regression: an op added past the unit's deadline was taken until the sweep ended the unit, though its commit could
     * only be refused; the caller learned of the timeout only at the commit.
     */
    @Test
    void add_pastDeadlineBeforeSweep_isRefusedNamingTheTimeout() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("in time"));
        ticker.advance(TIMEOUT);

        assertThatThrownBy(() -> unit.put(bytes("b"), bytes("late"))).isInstanceOfSatisfying(
                LimitExceededException.class, e -> assertThat(e.limit()).isEqualTo("unitTimeout"))
                .hasMessageContaining("not committed within its timeout");
        assertThatThrownBy(unit::commit).isInstanceOf(LimitExceededException.class);
        assertThat(store.unitsOpen()).isZero();
    }

    @Test
    void abort_appliesNothingAndReleasesScope() {
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("aborted"));
        unit.abort();
        unit.abort();

        assertThat(text(store.get("orders", bytes("a"), null).value())).isEqualTo("before");
        assertThatThrownBy(unit::commit).isInstanceOf(InvalidArgumentException.class).hasMessageContaining("aborted");
        store.write("orders", sequencer("orders", 2), put("a", "after"), null);
        Unit committed = store.begin("orders", sequencer("orders", 3), TIMEOUT);
        committed.put(bytes("z"), bytes("z"));
        committed.commit();
        assertThatThrownBy(committed::abort).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("already committed");
    }

    @Test
    void strictScope_unitConsumesTheGrant() {
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        Unit unit = store.begin("ledger", sequencer("ledger", 4), TIMEOUT);
        unit.put(bytes("k"), bytes("v"));
        unit.commit();

        assertThatThrownBy(() -> store.begin("ledger", sequencer("ledger", 4), TIMEOUT))
                .isInstanceOf(StaleTokenException.class);
        assertThatThrownBy(() -> store.write("ledger", sequencer("ledger", 4), put("k", "again"), null))
                .isInstanceOf(StaleTokenException.class);
        assertThat(text(store.get("ledger", bytes("k"), null).value())).isEqualTo("v");
    }

    @Test
    void add_beyondUnitLimits_isRefusedAndUnitStaysUsable() {
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults().withTicker(ticker).withOpsPerWriteMax(2)
                .withUnitsOpenMax(1));
        Unit unit = store.begin("orders", sequencer("orders", 2), TIMEOUT);
        unit.put(bytes("a"), bytes("1"));
        unit.put(bytes("b"), bytes("2"));

        assertThatThrownBy(() -> unit.put(bytes("c"), bytes("3"))).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("3 ops, more than the opsPerWriteMax of 2");
        assertThatThrownBy(() -> store.begin("other", sequencer("other", 1), TIMEOUT))
                .isInstanceOfSatisfying(LimitExceededException.class,
                        e -> assertThat(e.limit()).isEqualTo("unitsOpenMax"));
        assertThat(store.scope("other").exists()).isFalse();
        assertThat(unit.commit().opsApplied()).isEqualTo(2);
        store.begin("other", sequencer("other", 1), TIMEOUT).abort();
    }
}

package io.fencer.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.store.Op;
import io.fencer.store.StoreOptions;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** A unit held by the leader of the replicated store, on its own: its state by the leader's clock. */
class ReplicatedUnitTest {
    private final ManualTicker ticker = new ManualTicker();

    /**
     * A unit past its deadline reads expired, not open: the service keeps units that read open, so one its client
     * abandoned was kept for as long as its leader led.
     */
    @Test
    void state_pastTheDeadline_isExpired() {
        FencingToken token = new FencingToken("orders", 4);
        ReplicatedUnit unit = new ReplicatedUnit("u1", "orders", Sequencer.format(token), token,
                FencePolicy.AT_LEAST, Duration.ofSeconds(1), ticker, StoreOptions.defaults(), op -> { }, committed -> {
                    throw new AssertionError("an expired unit is not committed");
                });
        unit.add(Op.put(bytes("k"), bytes("v")));
        assertThat(unit.state()).isEqualTo(Unit.State.OPEN);

        ticker.advance(Duration.ofSeconds(1));

        assertThat(unit.state()).isEqualTo(Unit.State.EXPIRED);
        assertThat(unit.ops()).as("its buffered ops let go").isEmpty();
    }

    /**
     * Regression: a unit that ended kept its buffered ops (up to a batch's bytes) for as long as the service
     * remembered it (a minute), so that a retried commit could be answered; only its result is needed for that.
     */
    @Test
    void ops_ofAUnitThatEndedAnyWay_areLetGoAndACommitRetriedGetsTheSameResult() {
        FencingToken token = new FencingToken("orders", 4);
        WriteResult committed = new WriteResult("orders", 4, 4, 9, 1, false);
        ReplicatedUnit done = unit(token, unit -> committed);
        done.add(Op.put(bytes("k"), bytes("v")));
        assertThat(done.ops()).hasSize(1);
        assertThat(done.commit()).isEqualTo(committed);
        assertThat(done.ops()).as("committed").isEmpty();
        assertThat(done.commit()).as("a retried commit").isEqualTo(committed);

        ReplicatedUnit aborted = unit(token, unit -> committed);
        aborted.add(Op.put(bytes("k"), bytes("v")));
        aborted.abort();
        ReplicatedUnit preempted = unit(token, unit -> committed);
        preempted.add(Op.put(bytes("k"), bytes("v")));
        preempted.preempt(5);
        ReplicatedUnit abandoned = unit(token, unit -> committed);
        abandoned.add(Op.put(bytes("k"), bytes("v")));
        abandoned.abandon();

        assertThat(List.of(aborted, preempted, abandoned)).allSatisfy(unit -> assertThat(unit.ops()).isEmpty());
    }

    private ReplicatedUnit unit(FencingToken token, Function<ReplicatedUnit, WriteResult> committer) {
        return new ReplicatedUnit("u1", "orders", Sequencer.format(token), token, FencePolicy.AT_LEAST,
                Duration.ofSeconds(30), ticker, StoreOptions.defaults(), op -> { }, committer);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}

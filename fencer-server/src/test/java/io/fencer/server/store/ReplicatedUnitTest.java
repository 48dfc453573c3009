package io.fencer.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.store.StoreOptions;
import io.fencer.store.Unit;
import java.time.Duration;
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
                Duration.ofSeconds(1), ticker, StoreOptions.defaults(), op -> { }, committed -> {
                    throw new AssertionError("an expired unit is not committed");
                });
        assertThat(unit.state()).isEqualTo(Unit.State.OPEN);

        ticker.advance(Duration.ofSeconds(1));

        assertThat(unit.state()).isEqualTo(Unit.State.EXPIRED);
    }
}

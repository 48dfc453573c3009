package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The linger policy on its own: when a lone command waits for company, and how long. */
class LingerTest {
    @Test
    void lingers_beforeAnyObservation_isFalse() {
        assertThat(new Linger().lingers()).isFalse();
        assertThat(new Linger().windowNanos()).isZero();
    }

    @Test
    void lingers_whenMostLoneCommandsFoundCompany_isTrue() {
        Linger linger = new Linger();
        linger.observeEntry(600_000);
        for (int i = 0; i < 10; i++) {
            linger.observeCompany(true);
        }
        assertThat(linger.lingers()).as("10 of 10: rate 1 - (15/16)^10 < 0.5").isFalse();
        linger.observeCompany(true);
        assertThat(linger.lingers()).as("11 of 11").isTrue();
    }

    @Test
    void lingers_whenLoneCommandsStopFindingCompany_stops() {
        Linger linger = new Linger(1.0, 600_000);
        assertThat(linger.lingers()).isTrue();
        for (int i = 0; i < 10; i++) {
            linger.observeCompany(false);
        }
        assertThat(linger.lingers()).as("ten in vain: rate (15/16)^10 > 0.5").isTrue();
        linger.observeCompany(false);
        assertThat(linger.lingers()).as("eleven in vain: rate (15/16)^11 < 0.5").isFalse();
    }

    @Test
    void lingers_withoutAnEntryLatency_isFalse() {
        assertThat(new Linger(1.0, 0).lingers()).as("a zero window would hold nothing").isFalse();
    }

    @Test
    void windowNanos_isHalfTheEntryLatencyAtMostTheMaximum() {
        assertThat(new Linger(1.0, 600_000).windowNanos()).isEqualTo(300_000);
        assertThat(new Linger(1.0, 10_000_000).windowNanos()).isEqualTo(Linger.WINDOW_NANOS_MAX);
    }

    @Test
    void observeEntry_followsTheRecentLatency() {
        Linger linger = new Linger();
        linger.observeEntry(400_000);
        assertThat(linger.windowNanos()).as("the first entry sets the average").isEqualTo(200_000);
        for (int i = 0; i < 100; i++) {
            linger.observeEntry(1_200_000);
        }
        assertThat(linger.windowNanos()).isBetween(590_000L, 600_000L);
    }

    @Test
    void observeEntry_negativeLatency_isRefused() {
        assertThatThrownBy(() -> new Linger().observeEntry(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1 ns");
    }

    @Test
    void constructor_rateOutsideZeroToOne_isRefused() {
        assertThatThrownBy(() -> new Linger(1.5, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1.5");
    }

    @Test
    void lingers_withAZeroWindowMaximum_isNeverTrue() {
        Linger linger = new Linger(1.0, 600_000, 0);

        assertThat(linger.lingers()).isFalse();
        assertThat(linger.windowNanos()).isZero();
        assertThat(new Linger(1.0, 600_000).lingers()).as("the control: the default maximum lingers").isTrue();
    }

    @Test
    void windowNanos_withAMaximum_isHalfTheEntryLatencyUpToIt() {
        assertThat(new Linger(1.0, 600_000, 5_000_000).windowNanos()).isEqualTo(300_000);
        assertThat(new Linger(1.0, 20_000_000, 5_000_000).windowNanos()).isEqualTo(5_000_000);
        assertThat(new Linger(1.0, 20_000_000).windowNanos()).isEqualTo(Linger.WINDOW_NANOS_MAX);
    }
}

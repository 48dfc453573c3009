package io.fencer.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.workload.Workload;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

class ChaosOptionsTest {
    @Test
    void options_membershipWithOnePeer_isRefusedNamingPeers() {
        assertThatThrownBy(() -> options(1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the membership fault needs --peers 3 or 5, not 1");
    }

    @Test
    void options_membershipWithThreePeers_isAccepted() {
        assertThat(options(3).faults()).contains(Fault.Kind.MEMBERSHIP);
        assertThat(Fault.Kind.ofFlag("membership")).isEqualTo(Fault.Kind.MEMBERSHIP);
        assertThat(Fault.Kind.MEMBERSHIP.network()).isFalse();
    }

    @Test
    void options_clock_defaultsWithinToleranceAndRefusesBadDriftOrJump() {
        ChaosOptions defaults = options(3);
        assertThat(defaults.clockDrift()).isEqualTo(ChaosOptions.CLOCK_DRIFT_DEFAULT).isLessThan(0.01);
        assertThat(defaults.clockJump()).isZero();
        assertThat(defaults.clockFaults()).isFalse();
        assertThat(clock(0.5, Duration.ofSeconds(3)).clockFaults()).isTrue();
        assertThat(Fault.Kind.ofFlag("clock")).isEqualTo(Fault.Kind.CLOCK);

        assertThatThrownBy(() -> clock(0.95, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("clock drift 0.95");
        assertThatThrownBy(() -> clock(-0.01, Duration.ZERO)).hasMessageContaining("clock drift -0.01");
        assertThatThrownBy(() -> clock(0, Duration.ofMinutes(2))).hasMessageContaining("clock jump PT2M");
    }

    private static ChaosOptions clock(double drift, Duration jump) {
        return new ChaosOptions(3, Workload.COUNTER, Duration.ofSeconds(20), 1,
                EnumSet.of(Fault.Kind.CLOCK, Fault.Kind.PAUSE), 1, Duration.ofMillis(100), Duration.ofSeconds(2),
                Duration.ofSeconds(3), true, Path.of("unused"), null, null, null, EnumSet.allOf(Fault.Partition.class),
                false, 1, drift, jump);
    }

    private static ChaosOptions options(int peers) {
        return new ChaosOptions(3, Workload.COUNTER, Duration.ofSeconds(20), 1,
                EnumSet.of(Fault.Kind.MEMBERSHIP, Fault.Kind.KILL_LOCK), peers, Duration.ofMillis(100),
                Duration.ofSeconds(2), Duration.ofSeconds(3), true, Path.of("unused"), null, null, null);
    }
}

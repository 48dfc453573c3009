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

    private static ChaosOptions options(int peers) {
        return new ChaosOptions(3, Workload.COUNTER, Duration.ofSeconds(20), 1,
                EnumSet.of(Fault.Kind.MEMBERSHIP, Fault.Kind.KILL_LOCK), peers, Duration.ofMillis(100),
                Duration.ofSeconds(2), Duration.ofSeconds(3), true, Path.of("unused"), null, null, null);
    }
}

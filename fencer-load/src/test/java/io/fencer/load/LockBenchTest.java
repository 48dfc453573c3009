package io.fencer.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The bench's fencing check and settings, without a server. */
class LockBenchTest {
    @Test
    void tokenLog_strictlyIncreasingValues_hasNoViolation() {
        LockBench.TokenLog log = new LockBench.TokenLog("bench-0");
        log.append(3);
        log.append(4);
        log.append(9);

        assertThat(log.count()).isEqualTo(3);
        assertThat(log.firstViolation()).isNull();
    }

    @Test
    void tokenLog_repeatedValue_reportsTheFirstViolation() {
        LockBench.TokenLog log = new LockBench.TokenLog("bench-0");
        log.append(3);
        log.append(4);
        log.append(4);
        log.append(2);

        assertThat(log.count()).isEqualTo(4);
        assertThat(log.firstViolation()).isEqualTo("lock bench-0: token 4 came after 4 (append #3)");
    }

    @Test
    void tokenLog_stepBack_isAViolation() {
        LockBench.TokenLog log = new LockBench.TokenLog("bench-7");
        log.append(10);
        log.append(9);

        assertThat(log.firstViolation()).isEqualTo("lock bench-7: token 9 came after 10 (append #2)");
    }

    @Test
    void settings_outOfRange_failNamingTheValue() {
        assertThatThrownBy(() -> new LockBench.Settings(0, 1, Duration.ofSeconds(1), Duration.ZERO,
                Duration.ofSeconds(10))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("clients 0 is outside [1, 4096]");
        assertThatThrownBy(() -> new LockBench.Settings(1, 100_001, Duration.ofSeconds(1), Duration.ZERO,
                Duration.ofSeconds(10))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("locks 100001 is outside [1, 100000]");
        assertThatThrownBy(() -> new LockBench.Settings(1, 1, Duration.ZERO, Duration.ZERO,
                Duration.ofSeconds(10))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("duration must be positive");
    }

    @Test
    void settings_permitsOutOfRange_failNamingTheValue() {
        assertThatThrownBy(() -> new LockBench.Settings(1, 1, Duration.ofSeconds(1), Duration.ZERO,
                Duration.ofSeconds(10), LockBench.Mode.SEMAPHORE, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("permits 0 is outside [1, 1000]");
        assertThatThrownBy(() -> new LockBench.Settings(1, 1, Duration.ofSeconds(1), Duration.ZERO,
                Duration.ofSeconds(10), LockBench.Mode.SEMAPHORE, 1_001)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("permits 1001 is outside [1, 1000]");
    }
}

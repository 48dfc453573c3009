package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The bench's fencing check and reports, without a server. */
class LockBenchTest {
    private static final LockBench.Settings SETTINGS = new LockBench.Settings(4, 1, Duration.ofSeconds(2),
            Duration.ZERO, Duration.ofSeconds(10));

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
    void text_violation_saysNoWithTheViolation() {
        LockBench.Result result = new LockBench.Result(SETTINGS, 100, 101, 0, null, 1, 2, 3, 4, 101,
                "lock bench-0: token 4 came after 4 (append #3)");

        assertThat(result.tokensIncreasing()).isFalse();
        assertThat(BenchLockCommand.text(result)).contains("4 clients on 1 lock,")
                .contains("cycles (acquire+release): 100  50.0/s")
                .endsWith("tokens strictly increasing per lock: NO: lock bench-0: token 4 came after 4 (append #3)");
        assertThat(BenchLockCommand.toJson(result).toString()).contains("\"tokensStrictlyIncreasing\":false",
                "\"firstViolation\":\"lock bench-0: token 4 came after 4 (append #3)\"", "\"cyclesPerSecond\":50.000");
    }

    @Test
    void json_noCycles_writesNullLatencies() {
        LockBench.Result result = new LockBench.Result(SETTINGS, 0, 0, 3, "UnavailableException: down",
                Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, null);

        assertThat(BenchLockCommand.toJson(result).toString()).contains(
                "\"cycleLatencyMillis\":{\"p50\":null,\"p99\":null,\"p999\":null,\"max\":null}",
                "\"errors\":3", "\"firstError\":\"UnavailableException: down\"", "\"tokensStrictlyIncreasing\":true");
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
}

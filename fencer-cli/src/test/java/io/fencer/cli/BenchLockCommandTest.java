package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.load.LockBench;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The lock bench's reports (text and JSON), without a server. */
class BenchLockCommandTest {
    private static final LockBench.Settings SETTINGS = new LockBench.Settings(4, 1, Duration.ofSeconds(2),
            Duration.ZERO, Duration.ofSeconds(10));

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
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The store bench's settings and reports, without a server. */
class StoreBenchTest {
    private static final StoreBench.Settings SETTINGS = new StoreBench.Settings(64, 8, 256, Duration.ofSeconds(2),
            Duration.ofSeconds(1));

    @Test
    void text_cleanRun_reportsRateLatencyAndZeroRefusals() {
        StoreBench.Result result = new StoreBench.Result(SETTINGS, 10_000, 0, null, 0, null, 1.5, 4, 9, 12);

        assertThat(BenchStoreCommand.text(result))
                .startsWith("fencer bench store: 64 writers on 8 scopes, 256-byte values, 2s measured after 1s warmup")
                .contains("acknowledged writes: 10000  5000.0/s")
                .contains("write latency ms:    p50 1.500  p99 4.000  p99.9 9.000  max 12.000")
                .contains("stale refusals:      0")
                .endsWith("errors:              0");
    }

    @Test
    void json_staleRefusals_areReportedWithTheFirst() {
        StoreBench.Result result = new StoreBench.Result(SETTINGS, 0, 3, "stale token bench-store-0#4 refused", 1,
                "UnavailableException: down", Double.NaN, Double.NaN, Double.NaN, Double.NaN);

        assertThat(BenchStoreCommand.toJson(result).toString()).contains("\"writers\":64", "\"scopes\":8",
                "\"valueBytes\":256", "\"writes\":0", "\"writesPerSecond\":0.000",
                "\"writeLatencyMillis\":{\"p50\":null,\"p99\":null,\"p999\":null,\"max\":null}", "\"staleRefusals\":3",
                "\"firstStale\":\"stale token bench-store-0#4 refused\"", "\"errors\":1");
    }

    @Test
    void settings_outOfRange_failNamingTheValue() {
        assertThatThrownBy(() -> new StoreBench.Settings(0, 1, 256, Duration.ofSeconds(1), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("writers 0 is outside [1, 4096]");
        assertThatThrownBy(() -> new StoreBench.Settings(1, 10_001, 256, Duration.ofSeconds(1), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("scopes 10001 is outside [1, 10000]");
        assertThatThrownBy(() -> new StoreBench.Settings(1, 1, 2_000_000, Duration.ofSeconds(1), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("value bytes 2000000");
        assertThatThrownBy(() -> new StoreBench.Settings(1, 1, 256, Duration.ZERO, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("duration must be positive");
    }
}

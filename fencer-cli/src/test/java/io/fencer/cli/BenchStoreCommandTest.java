package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.load.StoreBench;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The store bench's reports (text and JSON), without a server. */
class BenchStoreCommandTest {
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
}

package io.fencer.load;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The store bench's settings, without a server. */
class StoreBenchTest {
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

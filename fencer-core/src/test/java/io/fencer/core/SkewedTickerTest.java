package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SkewedTickerTest {
    private static final long SECOND = 1_000_000_000L;

    @TempDir
    Path dir;
    private final ManualTicker host = new ManualTicker();

    @Test
    void nanoTime_noFile_runsWithTheHost() {
        SkewedTicker ticker = new SkewedTicker(dir.resolve("clock"), host);
        long start = ticker.nanoTime();

        host.advance(Duration.ofSeconds(3));

        assertThat(ticker.nanoTime() - start).isEqualTo(3 * SECOND);
    }

    @Test
    void nanoTime_rateChanged_keepsTheTimeSoFarAndRunsAtTheNewRate() throws Exception {
        Path file = dir.resolve("clock");
        SkewedTicker ticker = new SkewedTicker(file, host);
        long start = ticker.nanoTime();
        host.advance(Duration.ofSeconds(2));

        SkewedTicker.write(file, 0, 1.5);
        long atChange = ticker.nanoTime();
        host.advance(Duration.ofSeconds(2));

        assertThat(atChange - start).isEqualTo(2 * SECOND);
        assertThat(ticker.nanoTime() - atChange).isEqualTo(3 * SECOND);
        assertThat(ticker.rate()).isEqualTo(1.5);
    }

    @Test
    void nanoTime_slowRateThenJump_neverGoesBack() throws Exception {
        Path file = dir.resolve("clock");
        SkewedTicker ticker = new SkewedTicker(file, host);
        long start = ticker.nanoTime();
        SkewedTicker.write(file, 0, 0.5);
        host.advance(Duration.ofMillis(10));
        long read = ticker.nanoTime(); // the rate applies from its reading
        host.advance(Duration.ofSeconds(2));
        long slow = ticker.nanoTime();

        SkewedTicker.write(file, 5 * SECOND, 0.5);
        host.advance(Duration.ofMillis(20));
        long jumped = ticker.nanoTime();
        SkewedTicker.write(file, SECOND, 1.0); // a smaller jump total is ignored: the clock never goes back
        host.advance(Duration.ofMillis(20));

        assertThat(read - start).isEqualTo(10_000_000L);
        assertThat(slow - read).isEqualTo(SECOND);
        assertThat(jumped - slow).isEqualTo(5 * SECOND + 10_000_000L);
        assertThat(ticker.nanoTime() - jumped).as("20 ms at the slow rate, read when it ended")
                .isEqualTo(10_000_000L);
    }

    @Test
    void nanoTime_malformedFile_keepsTheClock() throws Exception {
        Path file = dir.resolve("clock");
        SkewedTicker ticker = new SkewedTicker(file, host);
        long start = ticker.nanoTime();

        Files.writeString(file, "fast please\n");
        host.advance(Duration.ofSeconds(1));

        assertThat(ticker.nanoTime() - start).isEqualTo(SECOND);
    }

    @Test
    void nanoTime_readsTheFileAtMostEveryTenMillis() throws Exception {
        Path file = dir.resolve("clock");
        SkewedTicker ticker = new SkewedTicker(file, host);
        long start = ticker.nanoTime();

        SkewedTicker.write(file, SECOND, 1.0);
        host.advance(Duration.ofMillis(5));
        long beforeReading = ticker.nanoTime();
        host.advance(Duration.ofMillis(5));

        assertThat(beforeReading - start).isEqualTo(5_000_000L);
        assertThat(ticker.nanoTime() - start).isEqualTo(SECOND + 10_000_000L);
    }

    @Test
    void write_rateOutOfRange_throws() {
        assertThatThrownBy(() -> SkewedTicker.write(dir.resolve("clock"), 0, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clock rate 0.0");
    }

    @Test
    void fromSystemProperty_unset_isTheSystemTicker() {
        assertThat(System.getProperty(SkewedTicker.CLOCK_FILE_PROPERTY)).isNull();

        assertThat(SkewedTicker.fromSystemProperty()).isNotInstanceOf(SkewedTicker.class);
    }
}

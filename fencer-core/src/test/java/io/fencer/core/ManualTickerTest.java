package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ManualTickerTest {
    private final ManualTicker ticker = new ManualTicker();

    @Test
    void nanoTime_untouched_staysAtTheStart() throws InterruptedException {
        long first = ticker.nanoTime();
        Thread.sleep(5);

        assertThat(ticker.nanoTime()).isEqualTo(first).isEqualTo(ManualTicker.START_NANOS);
        assertThat(ticker.elapsed()).isZero();
    }

    @Test
    void advance_byADuration_movesTheReadingByIt() {
        ticker.advance(Duration.ofSeconds(3));
        ticker.advance(Duration.ofMillis(250));

        assertThat(ticker.nanoTime() - ManualTicker.START_NANOS).isEqualTo(3_250_000_000L);
        assertThat(ticker.elapsed()).isEqualTo(Duration.ofMillis(3_250));
    }

    @Test
    void advance_negative_throwsAndKeepsTheReading() {
        ticker.advance(Duration.ofSeconds(1));

        assertThatThrownBy(() -> ticker.advance(Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("never goes back")
                .hasMessageContaining("PT-0.000000001S");
        assertThat(ticker.elapsed()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void set_forwardAndToTheSameReading_movesTo_sinceStart() {
        ticker.set(Duration.ofSeconds(2));
        ticker.set(Duration.ofSeconds(2));

        assertThat(ticker.elapsed()).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void set_beforeTheCurrentReading_throwsNamingBoth() {
        ticker.advance(Duration.ofSeconds(5));

        assertThatThrownBy(() -> ticker.set(Duration.ofSeconds(4)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT4S").hasMessageContaining("PT5S");
        assertThat(ticker.elapsed()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void advance_fromManyThreads_losesNoStep() throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Thread thread = new Thread(() -> {
                for (int step = 0; step < 1_000; step++) {
                    ticker.advance(Duration.ofNanos(1));
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join();
        }

        assertThat(ticker.elapsed()).isEqualTo(Duration.ofNanos(4_000));
    }
}

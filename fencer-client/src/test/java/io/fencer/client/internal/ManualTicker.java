package io.fencer.client.internal;

import io.fencer.core.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that moves only when the test says so. */
final class ManualTicker implements Ticker {
    private final AtomicLong nanos = new AtomicLong();

    @Override
    public long nanoTime() {
        return nanos.get();
    }

    void advance(Duration duration) {
        nanos.addAndGet(duration.toNanos());
    }

    /** Sets the reading to {@code sinceStart} after the start (readings never go back in the tests). */
    void set(Duration sinceStart) {
        nanos.set(sinceStart.toNanos());
    }
}

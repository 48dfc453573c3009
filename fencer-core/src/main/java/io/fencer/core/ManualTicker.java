package io.fencer.core;

import java.time.Duration;
import java.util.Objects;

/**
 * A {@link Ticker} that moves only when told: a test drives leases, deadlines and expiry by hand instead of sleeping,
 * as {@link java.time.Clock#fixed} stands beside {@link java.time.Clock}. It sits in this module, beside
 * {@code Ticker}, so that code below the server (a store, a resource that takes a {@code Ticker}) can be tested
 * without one.
 *
 * <p>Readings never go back, as {@link System#nanoTime()}'s do not: {@link #advance} refuses a negative duration and
 * {@link #set} a reading before the current one. Thread-safe: a test thread may move it while the code under test
 * reads it on its own threads.
 *
 * <pre>{@code
 * ManualTicker ticker = new ManualTicker();
 * Fence fence = ...;                        // or anything that takes a Ticker
 * ticker.advance(Duration.ofSeconds(30));   // thirty seconds pass at once
 * }</pre>
 */
public final class ManualTicker implements Ticker {
    /**
     * The first reading. Not zero: only differences between readings mean anything, and a reading of zero might be
     * mistaken by the code under test for "never".
     */
    public static final long START_NANOS = 1_000_000_000L;

    private volatile long nanos = START_NANOS;

    /** Returns a ticker reading {@link #START_NANOS}, which moves only by {@link #advance} and {@link #set}. */
    public ManualTicker() {}

    @Override
    public long nanoTime() {
        return nanos;
    }

    /**
     * Moves the reading forward by {@code duration}; zero leaves it where it is.
     *
     * @throws IllegalArgumentException when {@code duration} is negative (readings never go back)
     */
    public synchronized void advance(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative()) {
            throw new IllegalArgumentException("a ticker never goes back: advance by " + duration);
        }
        nanos = Math.addExact(nanos, duration.toNanos());
    }

    /**
     * Sets the reading to {@code sinceStart} after the first reading ({@link #START_NANOS}), for a test that writes
     * its timeline as instants rather than steps.
     *
     * @throws IllegalArgumentException when that reading is before the current one (readings never go back)
     */
    public synchronized void set(Duration sinceStart) {
        Objects.requireNonNull(sinceStart, "sinceStart");
        long reading = Math.addExact(START_NANOS, sinceStart.toNanos());
        if (reading < nanos) {
            throw new IllegalArgumentException("a ticker never goes back: set to " + sinceStart + " after the start, "
                    + "but it reads " + elapsed() + " after the start already");
        }
        nanos = reading;
    }

    /** Returns how far the reading has moved since the first reading. */
    public Duration elapsed() {
        return Duration.ofNanos(nanos - START_NANOS);
    }

    @Override
    public String toString() {
        return "ManualTicker[" + elapsed() + " after the start]";
    }
}

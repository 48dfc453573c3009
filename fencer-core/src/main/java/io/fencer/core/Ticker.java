package io.fencer.core;

/**
 * A source of monotonic time in nanoseconds, injected wherever Fencer measures leases and deadlines so
 * tests can drive time by hand. Only differences between two readings are meaningful.
 */
@FunctionalInterface
public interface Ticker {
    /** Returns the current reading in nanoseconds. */
    long nanoTime();

    /** Returns the ticker of {@link System#nanoTime()}. */
    static Ticker system() {
        return System::nanoTime;
    }
}

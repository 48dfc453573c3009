package io.fencer.chaos.bench;

import java.util.List;
import java.util.Objects;

/**
 * The failover pause of one leader kill, computed from what the grant loop saw: the time from the kill to the
 * first grant answered after the killed leader was gone, and the calls that failed in between.
 *
 * <p>A grant answered before the killed process was known to be gone does not count, even when it was answered
 * after the signal was sent: the old leader may have committed and answered it in its last moments, so it says
 * nothing about the new leader. The pause still runs from the signal, which is when the service's outage began.
 *
 * @param killNanos {@link System#nanoTime()} just before the SIGKILL was sent
 * @param goneNanos {@link System#nanoTime()} once the killed process was seen to have exited
 * @param nextGrantNanos the answer time of the first grant after {@code goneNanos}, or null when none came
 * @param failedCalls the acquires and releases that failed from {@code killNanos} up to that grant (or, without one,
 *     up to the end of the events)
 */
record FailoverPause(long killNanos, long goneNanos, Long nextGrantNanos, int failedCalls) {
    /** What the loop saw, each at its {@link System#nanoTime()}: a grant answered or a call that failed. */
    record Event(long atNanos, boolean granted) {
        static Event grant(long atNanos) {
            return new Event(atNanos, true);
        }

        static Event failure(long atNanos) {
            return new Event(atNanos, false);
        }
    }

    FailoverPause {
        if (goneNanos - killNanos < 0) {
            throw new IllegalArgumentException("the process was gone before it was killed: kill " + killNanos
                    + " ns, gone " + goneNanos + " ns");
        }
        if (failedCalls < 0) {
            throw new IllegalArgumentException("failedCalls " + failedCalls + " is negative");
        }
    }

    /**
     * Computes the pause of the kill at {@code killNanos} (the process seen gone at {@code goneNanos}) from
     * {@code events}, in the order they happened.
     */
    static FailoverPause of(long killNanos, long goneNanos, List<Event> events) {
        Objects.requireNonNull(events, "events");
        int failed = 0;
        for (Event event : events) {
            if (event.atNanos() - killNanos < 0) {
                continue;
            }
            if (!event.granted()) {
                failed++;
            } else if (event.atNanos() - goneNanos > 0) {
                return new FailoverPause(killNanos, goneNanos, event.atNanos(), failed);
            }
        }
        return new FailoverPause(killNanos, goneNanos, null, failed);
    }

    /** Returns whether a grant came after the kill. */
    boolean measured() {
        return nextGrantNanos != null;
    }

    /** Returns the pause in milliseconds, from the kill to the next grant; -1 when no grant came. */
    long pauseMillis() {
        return nextGrantNanos == null ? -1 : (nextGrantNanos - killNanos) / 1_000_000;
    }
}

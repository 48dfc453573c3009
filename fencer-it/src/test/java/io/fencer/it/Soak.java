package io.fencer.it;

import java.time.Duration;

/**
 * The switch between the short chaos runs of CI and their long variants: {@code -Dfencer.soak=true} (docs/testing.md)
 * runs every chaos test with the longer workload it had before CI's were cut to the schedule they need.
 */
final class Soak {
    /** The system property that asks for the long variants. */
    static final String PROPERTY = "fencer.soak";
    /** The tag of the tests only the long tier runs (the parent pom's soak profile). */
    static final String TAG = "soak";

    private Soak() {
    }

    /** Returns whether the long variants were asked for. */
    static boolean on() {
        return Boolean.getBoolean(PROPERTY);
    }

    /** Returns {@code soak} when the long variants were asked for, else {@code ci}. */
    static Duration pick(Duration ci, Duration soak) {
        return on() ? soak : ci;
    }
}

package io.fencer.load;

import java.time.Duration;
import java.util.Objects;

/** The checks every bench's settings make, so each generator states its limits and not how to check them. */
final class SettingsChecks {
    private SettingsChecks() {}

    /** Fails when {@code value} is outside {@code [min, max]}, naming the setting, the value and the range. */
    static void range(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " " + value + " is outside [" + min + ", " + max + "]");
        }
    }

    /** Fails unless {@code duration} is positive and {@code warmup} is not negative. */
    static void window(Duration duration, Duration warmup) {
        Objects.requireNonNull(duration, "duration");
        Objects.requireNonNull(warmup, "warmup");
        if (duration.isZero() || duration.isNegative() || warmup.isNegative()) {
            throw new IllegalArgumentException("duration must be positive and warmup not negative: "
                    + duration + ", " + warmup);
        }
    }
}

package io.fencer.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The command line's duration syntax: a whole number and a unit, {@code 300us}, {@code 500ms}, {@code 10s}, {@code 2m},
 * {@code 1h}; a bare {@code 0} is zero, the same in every unit (the "off" of the options that take it).
 */
final class Durations {
    /** The longest duration accepted anywhere on the command line; longer ones are surely typos. */
    static final Duration DURATION_MAX = Duration.ofDays(7);

    private static final Pattern SYNTAX = Pattern.compile("(\\d{1,12})(us|ms|s|m|h)");

    private Durations() {}

    /**
     * Parses {@code text} as a duration.
     *
     * @throws IllegalArgumentException naming the text when it is not a number and one of the units us, ms, s, m, h, or
     *     when it exceeds {@link #DURATION_MAX}
     */
    static Duration parse(String text) {
        if (text != null && text.trim().equals("0")) {
            return Duration.ZERO;
        }
        Matcher matcher = SYNTAX.matcher(text == null ? "" : text.trim());
        if (!matcher.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a duration: write a whole number and a unit,"
                    + " e.g. 300us, 500ms, 10s, 2m or 1h");
        }
        long amount = Long.parseLong(matcher.group(1));
        Duration duration = switch (matcher.group(2)) {
            case "us" -> Duration.ofNanos(amount * 1_000);
            case "ms" -> Duration.ofMillis(amount);
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(Math.min(amount, DURATION_MAX.toMinutes() + 1));
            case "h" -> Duration.ofHours(Math.min(amount, DURATION_MAX.toHours() + 1));
            default -> throw new IllegalStateException("unit " + matcher.group(2) + " matched but not handled");
        };
        if (duration.compareTo(DURATION_MAX) > 0) {
            throw new IllegalArgumentException("'" + text + "' is longer than the " + DURATION_MAX.toDays()
                    + " days allowed");
        }
        return duration;
    }

    /**
     * Formats {@code duration} in the largest unit that represents it exactly, e.g. {@code 300us}, {@code 1500ms},
     * {@code 2m}; below a microsecond it is cut to microseconds.
     */
    static String format(Duration duration) {
        if (duration.compareTo(Duration.ofDays(1)) < 0 && duration.toNanos() % 1_000_000 != 0) {
            return duration.toNanos() / 1_000 + "us";
        }
        long millis = duration.toMillis();
        if (millis != 0 && millis % 3_600_000 == 0) {
            return millis / 3_600_000 + "h";
        }
        if (millis != 0 && millis % 60_000 == 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1_000 == 0) {
            return millis / 1_000 + "s";
        }
        return millis + "ms";
    }

    /** The picocli converter for options of type {@link Duration}. */
    static final class Converter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * A converter of durations within a range. The range is checked here, as the text is parsed, and not where the
     * value is used: a client library refuses it there with an exception of its own, which made a usage error exit 1
     * and left the option unnamed; picocli names the option and the command exits 2.
     */
    abstract static class Ranged implements ITypeConverter<Duration> {
        private final Duration lowest;
        private final boolean lowestExcluded;
        private final Duration highest;

        Ranged(Duration lowest, boolean lowestExcluded, Duration highest) {
            this.lowest = lowest;
            this.lowestExcluded = lowestExcluded;
            this.highest = highest;
        }

        @Override
        public Duration convert(String value) {
            Duration duration = new Converter().convert(value);
            int belowLowest = duration.compareTo(lowest);
            if (belowLowest < 0 || (lowestExcluded && belowLowest == 0) || duration.compareTo(highest) > 0) {
                throw new TypeConversionException("'" + value + "' is outside " + (lowestExcluded ? "(" : "[")
                        + format(lowest) + ", " + format(highest) + "]");
            }
            return duration;
        }
    }

    /** A session's lease, {@code --ttl}: the client's own bounds, 1 s to 1 h. */
    static final class SessionTtl extends Ranged {
        static final Duration TTL_MIN = Duration.ofSeconds(1);
        static final Duration TTL_MAX = Duration.ofHours(1);

        SessionTtl() {
            super(TTL_MIN, false, TTL_MAX);
        }
    }

    /** The lease of the demo's clients: the chaos harness's bounds for its workers, 1 s to 1 min. */
    static final class DemoTtl extends Ranged {
        DemoTtl() {
            super(Duration.ofSeconds(1), false, Duration.ofMinutes(1));
        }
    }

    /** How long an acquire waits in line, {@code --wait}: 0 (try once) to the protocol's 1 h. */
    static final class Wait extends Ranged {
        static final Duration WAIT_MAX = Duration.ofHours(1);

        Wait() {
            super(Duration.ZERO, false, WAIT_MAX);
        }
    }

    /** How long one call may take, {@code --timeout}: more than 0, at most {@link TimeoutOptions#TIMEOUT_MAX}. */
    static final class Timeout extends Ranged {
        Timeout() {
            super(Duration.ZERO, true, TimeoutOptions.TIMEOUT_MAX);
        }
    }
}

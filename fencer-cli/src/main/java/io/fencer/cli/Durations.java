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
}

package io.fencer.core;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The sequencer: a token's opaque wire form, {@code fencer1.<base64url(lock)>.<value>} (Chubby's name for
 * it). Resources receive it from clients and parse it with {@link #parse(String)}; it is not meant to be
 * read by people ({@link FencingToken#toString()} is).
 */
public final class Sequencer {
    /** The version prefix of the current format. */
    public static final String PREFIX = "fencer1";
    /** The longest sequencer accepted, in characters. */
    public static final int LENGTH_MAX = 512;

    private Sequencer() {}

    /** Formats {@code token} as a sequencer. */
    public static String format(FencingToken token) {
        String lock = Base64.getUrlEncoder().withoutPadding().encodeToString(token.lock().getBytes(StandardCharsets.UTF_8));
        return PREFIX + "." + lock + "." + token.value();
    }

    /**
     * Parses a sequencer.
     *
     * @throws InvalidArgumentException with field "sequencer" and the offending text when it is malformed:
     *     wrong prefix or part count, a lock that is not base64url of a valid name, or a value that is not a
     *     decimal in [1, {@link FencingToken#VALUE_MAX}]
     */
    public static FencingToken parse(String sequencer) {
        if (sequencer == null || sequencer.isEmpty()) {
            throw malformed("", "it is empty");
        }
        if (sequencer.length() > LENGTH_MAX) {
            throw malformed(sequencer, "it is " + sequencer.length() + " characters, more than " + LENGTH_MAX);
        }
        String[] parts = sequencer.split("\\.", -1);
        if (parts.length != 3) {
            throw malformed(sequencer, "expected 3 dot-separated parts, found " + parts.length);
        }
        if (!PREFIX.equals(parts[0])) {
            throw malformed(sequencer, "it does not start with '" + PREFIX + ".'");
        }
        byte[] lockBytes;
        try {
            lockBytes = Base64.getUrlDecoder().decode(parts[1]);
        } catch (IllegalArgumentException e) {
            throw malformed(sequencer, "the lock part is not base64url");
        }
        String lock;
        try {
            lock = LockNames.decode("lock", lockBytes);
        } catch (InvalidArgumentException e) {
            throw malformed(sequencer, e.getMessage());
        }
        return new FencingToken(lock, parseValue(sequencer, parts[2]));
    }

    private static long parseValue(String sequencer, String text) {
        if (text.isEmpty() || text.length() > 19 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw malformed(sequencer, "the value '" + InvalidArgumentException.printable(text)
                    + "' is not a positive decimal");
        }
        long value;
        try {
            value = Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw malformed(sequencer, "the value " + text + " exceeds " + FencingToken.VALUE_MAX);
        }
        if (value < 1 || value > FencingToken.VALUE_MAX) {
            throw malformed(sequencer, "the value " + value + " is outside [1, " + FencingToken.VALUE_MAX + "]");
        }
        return value;
    }

    private static InvalidArgumentException malformed(String sequencer, String why) {
        return new InvalidArgumentException("sequencer", sequencer,
                "malformed sequencer '" + InvalidArgumentException.printable(sequencer) + "': " + why);
    }
}

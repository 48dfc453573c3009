package io.fencer.core;

import java.util.Locale;

/** A request field is malformed or out of range; {@link #field()} and {@link #value()} name it. */
public final class InvalidArgumentException extends FencerException {
    private static final long serialVersionUID = 1L;
    private static final int VALUE_CHARS_MAX = 300;

    private final String field;
    private final String value;

    public InvalidArgumentException(String field, String value, String message) {
        super(message);
        this.field = field;
        this.value = value == null ? "" : truncate(value);
    }

    public String field() {
        return field;
    }

    /** Returns the offending value, truncated to 300 characters. */
    public String value() {
        return value;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.INVALID_ARGUMENT;
    }

    /**
     * Returns {@code text} truncated for messages, with control characters, lone surrogates, format characters (the
     * invisible and bidirectional ones, which would hide or reorder the message around them) and line and paragraph
     * separators escaped (a backslash, {@code u} and four hex digits).
     */
    public static String printable(String text) {
        StringBuilder out = new StringBuilder();
        String shown = truncate(text);
        for (int i = 0; i < shown.length(); i++) {
            char c = shown.charAt(i);
            boolean loneSurrogate = Character.isSurrogate(c) && !(Character.isHighSurrogate(c)
                    && i + 1 < shown.length() && Character.isLowSurrogate(shown.charAt(i + 1)))
                    && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(shown.charAt(i - 1)));
            if (Character.isISOControl(c) || loneSurrogate || Character.getType(c) == Character.FORMAT
                    || c == '\u2028' || c == '\u2029') {
                out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static String truncate(String text) {
        return text.length() <= VALUE_CHARS_MAX ? text : text.substring(0, VALUE_CHARS_MAX) + "...";
    }
}

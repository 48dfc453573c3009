package io.fencer.cli;

import java.util.List;
import java.util.Locale;

/** A minimal JSON writer for the command's {@code --json} output; values are written in the order they are added. */
final class Json {
    private final StringBuilder text = new StringBuilder("{");
    private boolean empty = true;

    /** Returns a new, empty JSON object. */
    static Json object() {
        return new Json();
    }

    Json add(String name, String value) {
        return raw(name, value == null ? "null" : quote(value));
    }

    Json add(String name, long value) {
        return raw(name, Long.toString(value));
    }

    Json add(String name, boolean value) {
        return raw(name, Boolean.toString(value));
    }

    /** Adds a number rounded to three decimals; NaN and infinities, which JSON lacks, become null. */
    Json add(String name, double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return raw(name, "null");
        }
        return raw(name, String.format(Locale.ROOT, "%.3f", value));
    }

    Json add(String name, Json value) {
        return raw(name, value.toString());
    }

    Json addLongs(String name, List<Long> values) {
        return raw(name, array(values));
    }

    /** Adds {@code json}, already encoded, as the value of {@code name}. */
    Json raw(String name, String json) {
        text.append(empty ? "" : ",").append(quote(name)).append(':').append(json);
        empty = false;
        return this;
    }

    @Override
    public String toString() {
        return text + "}";
    }

    /** Returns the JSON array of already encoded {@code values}. */
    static String array(List<?> values) {
        StringBuilder array = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            array.append(i == 0 ? "" : ",").append(values.get(i));
        }
        return array.append(']').toString();
    }

    /** Returns {@code value} as a JSON string literal, escaping quotes, backslashes and control characters. */
    static String quote(String value) {
        StringBuilder out = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}

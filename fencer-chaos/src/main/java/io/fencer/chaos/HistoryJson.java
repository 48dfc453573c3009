package io.fencer.chaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The JSON-lines form of a history: one flat object per {@link HistoryEvent}, for example
 * <pre>{"time_us":1520344,"process":"w2","type":"ok","op":"write","token":17,"value":"41","revision":40}</pre>
 * Fields that are zero or empty are left out. Lines longer than {@link #LINE_CHARS_MAX} are refused when read.
 */
public final class HistoryJson {
    /** The longest line {@link #parse} accepts. */
    public static final int LINE_CHARS_MAX = 64 * 1024;

    private HistoryJson() {
    }

    /** Returns {@code event} as one JSON line (without the line break). */
    public static String format(HistoryEvent event) {
        StringBuilder out = new StringBuilder(128);
        out.append("{\"time_us\":").append(event.timeMicros());
        out.append(",\"process\":").append(quote(event.process()));
        out.append(",\"type\":").append(quote(event.type().name().toLowerCase(Locale.ROOT)));
        out.append(",\"op\":").append(quote(event.op().name().toLowerCase(Locale.ROOT)));
        if (event.token() != 0) {
            out.append(",\"token\":").append(event.token());
        }
        if (!event.value().isEmpty()) {
            out.append(",\"value\":").append(quote(event.value()));
        }
        if (event.revision() != 0) {
            out.append(",\"revision\":").append(event.revision());
        }
        if (!event.target().isEmpty()) {
            out.append(",\"target\":").append(quote(event.target()));
        }
        if (!event.error().isEmpty()) {
            out.append(",\"error\":").append(quote(event.error()));
        }
        return out.append('}').toString();
    }

    /**
     * Parses one line made by {@link #format}.
     *
     * @throws IllegalArgumentException naming the line when it is not such an object
     */
    public static HistoryEvent parse(String line) {
        if (line.length() > LINE_CHARS_MAX) {
            throw new IllegalArgumentException("history line of " + line.length() + " chars exceeds "
                    + LINE_CHARS_MAX);
        }
        Map<String, String> fields = new FlatObjectParser(line).parse();
        try {
            return new HistoryEvent(number(fields, "time_us"), required(fields, "process"),
                    HistoryEvent.Type.valueOf(required(fields, "type").toUpperCase(Locale.ROOT)),
                    HistoryEvent.Op.valueOf(required(fields, "op").toUpperCase(Locale.ROOT)),
                    number(fields, "token"), fields.get("value"), number(fields, "revision"), fields.get("target"),
                    fields.get("error"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad history line: " + e.getMessage() + ": " + line, e);
        }
    }

    /** Reads every line of {@code file}; blank lines are skipped. */
    public static List<HistoryEvent> read(Path file) throws IOException {
        List<HistoryEvent> events = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            while ((line = reader.readLine()) != null) {
                if (!line.isBlank()) {
                    events.add(parse(line));
                }
            }
        }
        return events;
    }

    /** Writes {@code events}, one line each, replacing {@code file}. */
    public static void write(Path file, List<HistoryEvent> events) throws IOException {
        StringBuilder text = new StringBuilder(events.size() * 96);
        for (HistoryEvent event : events) {
            text.append(format(event)).append('\n');
        }
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }

    /** Returns {@code text} as a JSON string literal. */
    static String quote(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    private static String required(Map<String, String> fields, String name) {
        String value = fields.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing field '" + name + "'");
        }
        return value;
    }

    private static long number(Map<String, String> fields, String name) {
        String value = fields.get(name);
        if (value == null) {
            return 0;
        }
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("field '" + name + "' is not an integer: " + value, e);
        }
    }

    /** A parser for one flat JSON object whose values are strings or integers. */
    private static final class FlatObjectParser {
        private final String text;
        private int position;

        FlatObjectParser(String text) {
            this.text = text.strip();
        }

        Map<String, String> parse() {
            Map<String, String> fields = new LinkedHashMap<>();
            expect('{');
            skipSpaces();
            if (peek() == '}') {
                position++;
                return fields;
            }
            while (true) {
                skipSpaces();
                String name = string();
                skipSpaces();
                expect(':');
                skipSpaces();
                fields.put(name, peek() == '"' ? string() : integer());
                skipSpaces();
                char next = next();
                if (next == '}') {
                    break;
                }
                if (next != ',') {
                    throw error("expected ',' or '}'");
                }
            }
            if (position != text.length()) {
                throw error("text after the object");
            }
            return fields;
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char escaped = next();
                switch (escaped) {
                    case '"', '\\', '/' -> out.append(escaped);
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'u' -> out.append(unicodeEscape());
                    default -> throw error("bad escape \\" + escaped);
                }
            }
        }

        private char unicodeEscape() {
            if (position + 4 > text.length()) {
                throw error("short \\u escape");
            }
            try {
                char c = (char) Integer.parseInt(text.substring(position, position + 4), 16);
                position += 4;
                return c;
            } catch (NumberFormatException e) {
                throw error("bad \\u escape");
            }
        }

        private String integer() {
            int start = position;
            if (peek() == '-') {
                position++;
            }
            while (position < text.length() && Character.isDigit(text.charAt(position))) {
                position++;
            }
            if (position == start) {
                throw error("expected a string or an integer");
            }
            return text.substring(start, position);
        }

        private void skipSpaces() {
            while (position < text.length() && Character.isWhitespace(text.charAt(position))) {
                position++;
            }
        }

        private char peek() {
            if (position >= text.length()) {
                throw error("unexpected end");
            }
            return text.charAt(position);
        }

        private char next() {
            char c = peek();
            position++;
            return c;
        }

        private void expect(char wanted) {
            if (next() != wanted) {
                throw error("expected '" + wanted + "'");
            }
        }

        private IllegalArgumentException error(String why) {
            return new IllegalArgumentException(why + " at column " + position);
        }
    }
}

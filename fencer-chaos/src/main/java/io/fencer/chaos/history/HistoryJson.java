package io.fencer.chaos.history;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.JsonWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The JSON-lines form of a history: one flat object per {@link HistoryEvent}, for example
 * <pre>{"time_us":1520344,"process":"w2","type":"ok","op":"write","token":17,"value":"41","revision":40}</pre>
 * Fields that are zero or empty are left out, and members a reader does not know are ignored, so the format grows by
 * adding members: lines of earlier releases read as events with those fields empty (before {@code reason}, a
 * refusal's catalogue reason was not recorded), and earlier releases read these lines without the new members. Lines
 * longer than {@link #LINE_CHARS_MAX} are refused when read.
 * Gson writes and reads the lines; numbers go from and to {@code long}s without passing through a {@code double}.
 */
public final class HistoryJson {
    /** The longest line {@link #parse} accepts. */
    public static final int LINE_CHARS_MAX = 64 * 1024;

    private HistoryJson() {
    }

    /** Returns {@code event} as one JSON line (without the line break). */
    public static String format(HistoryEvent event) {
        StringWriter line = new StringWriter(128);
        try (JsonWriter json = new JsonWriter(line)) { // compact, and no HTML escaping: a plain JsonWriter's defaults
            json.beginObject();
            json.name("time_us").value(event.timeMicros());
            json.name("process").value(event.process());
            json.name("type").value(event.type().name().toLowerCase(Locale.ROOT));
            json.name("op").value(event.op().name().toLowerCase(Locale.ROOT));
            if (event.token() != 0) {
                json.name("token").value(event.token());
            }
            writeUnlessEmpty(json, "value", event.value());
            if (event.revision() != 0) {
                json.name("revision").value(event.revision());
            }
            writeUnlessEmpty(json, "target", event.target());
            writeUnlessEmpty(json, "error", event.error());
            writeUnlessEmpty(json, "reason", event.reason());
            json.endObject();
        } catch (IOException e) {
            throw new UncheckedIOException("a StringWriter does not fail", e);
        }
        return line.toString();
    }

    private static void writeUnlessEmpty(JsonWriter json, String name, String value) throws IOException {
        if (!value.isEmpty()) {
            json.name(name).value(value);
        }
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
        try {
            JsonObject fields = object(line);
            return new HistoryEvent(number(fields, "time_us"), string(fields, "process", true),
                    HistoryEvent.Type.valueOf(string(fields, "type", true).toUpperCase(Locale.ROOT)),
                    HistoryEvent.Op.valueOf(string(fields, "op", true).toUpperCase(Locale.ROOT)),
                    number(fields, "token"), string(fields, "value", false), number(fields, "revision"),
                    string(fields, "target", false), string(fields, "error", false),
                    string(fields, "reason", false));
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

    /** Returns the one JSON object {@code line} holds, read strictly (no comments, no unquoted names). */
    private static JsonObject object(String line) {
        JsonReader reader = new JsonReader(new StringReader(line));
        reader.setStrictness(Strictness.STRICT);
        try {
            JsonElement element = JsonParser.parseReader(reader);
            if (!element.isJsonObject()) {
                throw new IllegalArgumentException("not a JSON object");
            }
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                throw new IllegalArgumentException("text after the object");
            }
            return element.getAsJsonObject();
        } catch (JsonParseException | IOException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** Returns the string field {@code name}; null when it is absent and not {@code required}. */
    private static String string(JsonObject fields, String name, boolean required) {
        JsonElement value = fields.get(name);
        if (value == null) {
            if (required) {
                throw new IllegalArgumentException("missing field '" + name + "'");
            }
            return null;
        }
        if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isString()) {
            throw new IllegalArgumentException("field '" + name + "' is not a string: " + value);
        }
        return value.getAsString();
    }

    /**
     * Returns the integer field {@code name}, 0 when absent. Its digits are parsed as a long: Gson's
     * {@code getAsLong()} would take 1.5 as 1 and wrap numbers beyond 2^63 - 1, and a double would round tokens.
     */
    private static long number(JsonObject fields, String name) {
        JsonElement value = fields.get(name);
        if (value == null) {
            return 0;
        }
        if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isNumber()) {
            throw new IllegalArgumentException("field '" + name + "' is not an integer: " + value);
        }
        try {
            return Long.parseLong(value.getAsString());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("field '" + name + "' is not an integer: " + value, e);
        }
    }
}

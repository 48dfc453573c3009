package io.fencer.server.http;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import io.fencer.core.InvalidArgumentException;
import java.io.IOException;
import java.io.StringReader;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The checks a JSON request passes before protobuf's {@code JsonFormat} turns it into the request's bytes, so that
 * the HTTP port accepts exactly what the gRPC port would: protobuf's JSON parser is lenient where the binary form
 * is strict (it reads a one-element array {@code [30000]} as the number, a number as a string, replaces invalid
 * UTF-8 and passes unpaired surrogates on, which the binary encoder then turns into {@code ?}, so {@code p\ud800q}
 * and {@code p?q} would name the same lock).
 *
 * <p>Refused, each as INVALID_ARGUMENT naming where and what: a body that is not UTF-8 (naming the byte offset), JSON
 * that is not RFC 8259 JSON, a repeated member, a string with an unpaired surrogate, a value of the wrong JSON
 * type for its field (an array, object, string or boolean where a number is due, and so on), a number longer than
 * {@link #NUMBER_CHARS_MAX} characters, and an integer field's value with more than {@link #INTEGER_DIGITS_MAX}
 * digits before or after its point (as {@code 1e99999999} has): each would cost minutes to parse. What proto3's JSON
 * mapping allows stays allowed: a 64-bit (or any) number as a decimal string ({@code "30000"}), an enum by name or
 * number, bytes as base64, null for a default.
 */
final class StrictJson {
    /** The deepest nesting of objects and arrays read; protobuf's own JSON parser stops at 100 too. */
    static final int NESTING_MAX = 100;
    /**
     * The longest number read, as a JSON number or a decimal string, in characters: a 64-bit integer needs 20, a
     * double 24, so this leaves room for any way of writing them. Parsing a longer one costs time that grows with the
     * square of its digits (a megabyte of digits holds a thread for minutes), before protobuf's parser does it again.
     */
    static final int NUMBER_CHARS_MAX = 100;
    /**
     * The most digits before the point of an integer field's value (2^64 has 20), and the most after it: protobuf's
     * parser turns the value into a BigInteger, and {@code 1e99999999} into 10^99999999, for minutes of CPU.
     */
    static final int INTEGER_DIGITS_MAX = 20;
    private static final Map<Descriptor, Map<String, FieldDescriptor>> FIELDS = new ConcurrentHashMap<>();
    private static final Set<String> FLOAT_WORDS = Set.of("NaN", "Infinity", "-Infinity");

    private StrictJson() {}

    /**
     * Returns {@code body} as text, refusing bytes that are not UTF-8: the error names the offset of the first
     * malformed byte (the JDK's decoder also refuses overlong forms and encoded surrogates).
     */
    static String utf8(byte[] body, String what) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(body);
        CharBuffer out = CharBuffer.allocate(body.length); // UTF-8 never decodes to more chars than bytes
        CoderResult result = decoder.decode(in, out, true);
        if (!result.isError()) {
            result = decoder.flush(out);
        }
        if (result.isError()) {
            int offset = in.position();
            int length = Math.min(result.length(), body.length - offset);
            String bytes = "0x" + HexFormat.of().withUpperCase().formatHex(body, offset, offset + length);
            throw new InvalidArgumentException("body", bytes, "the " + what + " body is not valid UTF-8: byte "
                    + bytes + " at offset " + offset + " (JSON bodies are UTF-8; send raw bytes in the binary form, "
                    + "application/proto, or as base64 in a bytes field)");
        }
        return out.flip().toString();
    }

    /**
     * Reads {@code json} as RFC 8259 JSON and checks it against {@code type}: returns normally when protobuf's
     * parser may have it, else throws {@link InvalidArgumentException} naming the member (its path, e.g.
     * {@code ops[0].put.key}) and its value.
     */
    static void check(String json, Descriptor type, String what) {
        JsonElement tree = parse(json, what);
        if (!tree.isJsonObject()) {
            throw new InvalidArgumentException("body", text(tree), "the " + what + " body must be a JSON object of "
                    + type.getFullName() + ", not " + kind(tree));
        }
        checkMessage(tree.getAsJsonObject(), type, "", what);
    }

    private static JsonElement parse(String json, String what) {
        JsonReader reader = new JsonReader(new StringReader(json));
        reader.setStrictness(Strictness.STRICT);
        reader.setNestingLimit(NESTING_MAX);
        try {
            JsonElement tree = read(reader, "", what);
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                throw new InvalidArgumentException("body", "", "the " + what + " body has more after its JSON value, "
                        + "at " + reader.getPath());
            }
            return tree;
        } catch (IOException | IllegalStateException | NumberFormatException e) {
            throw new InvalidArgumentException("body", "", "the " + what + " body is not valid JSON: "
                    + gsonMessage(e));
        }
    }

    /** Returns Gson's sentence without its advice to parse leniently and its link, which are for Java callers. */
    static String gsonMessage(Exception e) {
        String message = String.valueOf(e.getMessage());
        int link = message.indexOf("\nSee ");
        if (link >= 0) {
            message = message.substring(0, link);
        }
        return message.replace("Use JsonReader.setStrictness(Strictness.LENIENT) to accept malformed JSON",
                "malformed JSON");
    }

    /** Reads one value, refusing repeated members and unpaired surrogates in names and strings. */
    private static JsonElement read(JsonReader reader, String path, String what) throws IOException {
        switch (reader.peek()) {
            case BEGIN_OBJECT -> {
                JsonObject object = new JsonObject();
                reader.beginObject();
                while (reader.hasNext()) {
                    String name = reader.nextName();
                    String where = path.isEmpty() ? name : path + "." + name;
                    checkUnicode(name, where, what);
                    if (object.has(name)) {
                        throw new InvalidArgumentException(where, "", "the " + what + " body has the member '"
                                + where + "' twice");
                    }
                    object.add(name, read(reader, where, what));
                }
                reader.endObject();
                return object;
            }
            case BEGIN_ARRAY -> {
                JsonArray array = new JsonArray();
                reader.beginArray();
                while (reader.hasNext()) {
                    array.add(read(reader, path + "[" + array.size() + "]", what));
                }
                reader.endArray();
                return array;
            }
            case STRING -> {
                String value = reader.nextString();
                checkUnicode(value, path, what);
                return new JsonPrimitive(value);
            }
            case NUMBER -> {
                String number = reader.nextString();
                checkLength(number, path, what);
                return new JsonPrimitive(new BigDecimal(number));
            }
            case BOOLEAN -> {
                return new JsonPrimitive(reader.nextBoolean());
            }
            case NULL -> {
                reader.nextNull();
                return JsonNull.INSTANCE;
            }
            default -> throw new IllegalStateException("unexpected " + reader.peek() + " at " + reader.getPath());
        }
    }

    /** Refuses a string with a surrogate that is not half of a pair: it names no Unicode character. */
    private static void checkUnicode(String text, String where, String what) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++; // a pair
            } else if (Character.isSurrogate(c)) {
                String escaped = escapeSurrogates(text);
                throw new InvalidArgumentException(where.isEmpty() ? "body" : where, escaped, "the " + what
                        + " body's " + (where.isEmpty() ? "value" : "'" + where + "'") + " has an unpaired surrogate "
                        + String.format(Locale.ROOT, "\\u%04x", (int) c) + " at character " + i + " (" + escaped
                        + "): strings must be Unicode text");
            }
        }
    }

    private static String escapeSurrogates(String text) {
        StringBuilder escaped = new StringBuilder();
        text.chars().forEach(c -> escaped.append(Character.isSurrogate((char) c) ? String.format(Locale.ROOT, "\\u%04x", c)
                : String.valueOf((char) c)));
        return escaped.toString();
    }

    private static void checkMessage(JsonObject object, Descriptor type, String path, String what) {
        Map<String, FieldDescriptor> fields = FIELDS.computeIfAbsent(type, StrictJson::fieldsByName);
        for (Map.Entry<String, JsonElement> member : object.entrySet()) {
            FieldDescriptor field = fields.get(member.getKey());
            JsonElement value = member.getValue();
            if (field == null || value.isJsonNull()) {
                continue; // an unknown member is protobuf's parser's to refuse, naming it; null is the default
            }
            String where = path.isEmpty() ? member.getKey() : path + "." + member.getKey();
            if (field.isMapField()) {
                FieldDescriptor mapValue = field.getMessageType().findFieldByName("value");
                JsonObject entries = expect(value.isJsonObject(), value, where, "a JSON object", what)
                        .getAsJsonObject();
                entries.entrySet().forEach(entry -> checkValue(mapValue, entry.getValue(),
                        where + "." + entry.getKey(), what));
            } else if (field.isRepeated()) {
                JsonArray elements = expect(value.isJsonArray(), value, where, "a JSON array", what).getAsJsonArray();
                for (int i = 0; i < elements.size(); i++) {
                    checkValue(field, elements.get(i), where + "[" + i + "]", what);
                }
            } else {
                checkValue(field, value, where, what);
            }
        }
    }

    private static Map<String, FieldDescriptor> fieldsByName(Descriptor type) {
        Map<String, FieldDescriptor> fields = new HashMap<>();
        for (FieldDescriptor field : type.getFields()) {
            fields.put(field.getName(), field); // proto3 JSON accepts the field's own name and its JSON name
            fields.put(field.getJsonName(), field);
        }
        return Map.copyOf(fields);
    }

    /** Checks one value (a singular field's, or one element of a repeated field) against the field's type. */
    private static void checkValue(FieldDescriptor field, JsonElement value, String where, String what) {
        if (value.isJsonNull()) {
            return;
        }
        switch (field.getJavaType()) {
            case INT, LONG, FLOAT, DOUBLE -> checkNumber(field, value, where, what);
            case BOOLEAN -> expect(isBoolean(value), value, where, "true or false", what);
            case STRING -> expect(isString(value), value, where, "a JSON string", what);
            case BYTE_STRING -> expect(isString(value), value, where, "a JSON string of base64", what);
            case ENUM -> expect(isString(value) || isNumber(value), value, where,
                    "an enum name (a JSON string) or number", what);
            case MESSAGE -> {
                if (!field.getMessageType().getFile().getPackage().equals("google.protobuf")) {
                    // Well-known types have JSON forms of their own (a Duration is "1.5s"): protobuf checks those.
                    expect(value.isJsonObject(), value, where, "a JSON object", what);
                    checkMessage(value.getAsJsonObject(), field.getMessageType(), where, what);
                }
            }
            default -> throw new IllegalStateException("unknown field type " + field.getJavaType());
        }
    }

    /** A number field takes a JSON number or a decimal string (proto3 JSON writes 64-bit numbers as strings). */
    private static void checkNumber(FieldDescriptor field, JsonElement value, String where, String what) {
        expect(isNumber(value) || isString(value), value, where, "a JSON number", what);
        boolean floating = field.getJavaType() == FieldDescriptor.JavaType.FLOAT
                || field.getJavaType() == FieldDescriptor.JavaType.DOUBLE;
        BigDecimal number = isNumber(value) ? value.getAsBigDecimal() : null;
        if (isString(value)) {
            String text = value.getAsString();
            checkLength(text, where, what);
            try {
                number = new BigDecimal(text);
                expect(!text.isEmpty() && !Character.isWhitespace(text.charAt(0)), value, where,
                        "a JSON number (or a string of one)", what);
            } catch (NumberFormatException e) {
                expect(floating && FLOAT_WORDS.contains(text), value, where, "a JSON number (or a string of one)",
                        what);
            }
        }
        // Within NUMBER_CHARS_MAX characters, precision() is cheap and an exponent alone can make a value huge.
        if (number != null && !floating && (number.precision() - (long) number.scale() > INTEGER_DIGITS_MAX
                || number.scale() > INTEGER_DIGITS_MAX)) {
            throw new InvalidArgumentException(where, text(value), "the " + what + " field '" + where + "' must be "
                    + "an integer of at most " + INTEGER_DIGITS_MAX + " digits (and as many after a point), not "
                    + text(value));
        }
    }

    /** Refuses a number (or a string read as one) longer than {@link #NUMBER_CHARS_MAX}, naming where it is. */
    private static void checkLength(String number, String where, String what) {
        if (number.length() > NUMBER_CHARS_MAX) {
            String shown = number.substring(0, Math.min(number.length(), 20)) + "...";
            throw new InvalidArgumentException(where.isEmpty() ? "body" : where, shown, "the " + what + " body's "
                    + (where.isEmpty() ? "value" : "'" + where + "'") + " is a number of " + number.length()
                    + " characters (" + shown + "): numbers have at most " + NUMBER_CHARS_MAX);
        }
    }

    private static JsonElement expect(boolean ok, JsonElement value, String where, String expected, String what) {
        if (!ok) {
            throw new InvalidArgumentException(where, text(value), "the " + what + " field '" + where + "' must be "
                    + expected + ", not " + kind(value) + " " + text(value));
        }
        return value;
    }

    private static boolean isNumber(JsonElement value) {
        return value.isJsonPrimitive() && value.getAsJsonPrimitive().isNumber();
    }

    private static boolean isString(JsonElement value) {
        return value.isJsonPrimitive() && value.getAsJsonPrimitive().isString();
    }

    private static boolean isBoolean(JsonElement value) {
        return value.isJsonPrimitive() && value.getAsJsonPrimitive().isBoolean();
    }

    private static String kind(JsonElement value) {
        if (value.isJsonArray()) {
            return "an array";
        }
        if (value.isJsonObject()) {
            return "an object";
        }
        if (value.isJsonNull()) {
            return "null";
        }
        return isString(value) ? "a string" : isNumber(value) ? "a number" : "a boolean";
    }

    /** Returns a value as JSON text, at most 100 characters of it. */
    private static String text(JsonElement value) {
        String text = value.toString();
        return text.length() <= 100 ? text : text.substring(0, 97) + "...";
    }
}

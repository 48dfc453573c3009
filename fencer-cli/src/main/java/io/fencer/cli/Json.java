package io.fencer.cli;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Locale;

/**
 * A JSON object of the command's {@code --json} output, on one line, its members in the order they are added.
 * Gson writes it: strings escaped by JSON's rules only (no HTML escaping, the output is read in a terminal),
 * members whose value is absent written as {@code null}, and longs written from their digits, never through a
 * {@code double}.
 *
 * <p>Every object written at the top ({@link #toString}, and each object of an {@link #array}) starts with the
 * version of the output's shapes, {@code "format": 1}, written here alone so that no command can leave it out.
 * Members may be added within a version; one that changes meaning or goes raises it (docs/cli.md).
 */
final class Json {
    /** Writes compact JSON; nulls are kept because the output's shape does not depend on the values. */
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
    /** The member that carries {@link #FORMAT}: a name that no command's output uses for anything else. */
    static final String FORMAT_MEMBER = "format";
    /** The version of every {@code --json} shape. */
    static final int FORMAT = 1;

    private final JsonObject members = new JsonObject();

    private Json() {
    }

    /** Returns a new, empty JSON object. */
    static Json object() {
        return new Json();
    }

    /** Adds a string, or {@code null} when {@code value} is null. */
    Json add(String name, String value) {
        members.addProperty(name, value);
        return this;
    }

    Json add(String name, long value) {
        members.addProperty(name, value);
        return this;
    }

    /** Adds a long, or {@code null} when {@code value} is null. */
    Json add(String name, Long value) {
        members.add(name, value == null ? JsonNull.INSTANCE : new JsonPrimitive(value));
        return this;
    }

    /**
     * Adds {@code value} read as an unsigned 64-bit number (up to 2^64 - 1, as session ids are), or {@code null}
     * when {@code value} is null.
     */
    Json addUnsigned(String name, Long value) {
        members.add(name, value == null ? JsonNull.INSTANCE
                : new JsonPrimitive(new BigInteger(Long.toUnsignedString(value))));
        return this;
    }

    Json add(String name, boolean value) {
        members.addProperty(name, value);
        return this;
    }

    /** Adds a number rounded to three decimals; NaN and infinities, which JSON lacks, become null. */
    Json add(String name, double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            members.add(name, JsonNull.INSTANCE);
        } else {
            // a BigDecimal keeps the three decimals ("1.000"), which a double would write as "1.0"
            members.add(name, new JsonPrimitive(new BigDecimal(String.format(Locale.ROOT, "%.3f", value))));
        }
        return this;
    }

    /** Adds a copy of {@code value}, so that adding to {@code value} later leaves this object as it is. */
    Json add(String name, Json value) {
        members.add(name, value.members.deepCopy());
        return this;
    }

    /** Adds an array of objects. */
    Json addObjects(String name, List<Json> values) {
        JsonArray array = new JsonArray(values.size());
        values.forEach(value -> array.add(value.members.deepCopy()));
        members.add(name, array);
        return this;
    }

    Json addLongs(String name, List<Long> values) {
        JsonArray array = new JsonArray(values.size());
        values.forEach(array::add);
        members.add(name, array);
        return this;
    }

    /** Returns the object on one line, as the command writes it: {@link #FORMAT_MEMBER} first. */
    @Override
    public String toString() {
        return GSON.toJson(versioned());
    }

    /** Returns the JSON array of {@code values}, on one line, each with {@link #FORMAT_MEMBER} first. */
    static String array(List<Json> values) {
        JsonArray array = new JsonArray(values.size());
        values.forEach(value -> array.add(value.versioned()));
        return GSON.toJson(array);
    }

    /** Returns a copy of the members after the version member. */
    private JsonObject versioned() {
        if (members.has(FORMAT_MEMBER)) {
            // a reader would take it for the version, and one of them would overwrite the other
            throw new IllegalStateException("a top-level member is named '" + FORMAT_MEMBER + "', as the version is");
        }
        JsonObject versioned = new JsonObject();
        versioned.addProperty(FORMAT_MEMBER, FORMAT);
        members.entrySet().forEach(member -> versioned.add(member.getKey(), member.getValue().deepCopy()));
        return versioned;
    }

    /** Returns {@code value} as a JSON string literal, escaped as the output's strings are. */
    static String quote(String value) {
        return GSON.toJson(new JsonPrimitive(value));
    }
}

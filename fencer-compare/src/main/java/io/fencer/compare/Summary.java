package io.fencer.compare;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.util.Locale;

/**
 * The summary of a run: the text and the JSON of {@code fencer bench store}, field for field, the version of the
 * shape first ({@code "format": 1}, as every {@code --json} output of {@code fencer} starts; docs/cli.md).
 */
final class Summary {
    /** Compact JSON on one line; nulls kept, so the shape never depends on the values. */
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
    /** The member that carries {@link #FORMAT}, the name {@code fencer}'s JSON gives it. */
    static final String FORMAT_MEMBER = "format";
    /**
     * The version of the summary's shape: that of {@code fencer bench store --json}, whose members it has, so that a
     * reader of the two (the comparison's table) checks one version.
     */
    static final int FORMAT = 1;

    private Summary() {}

    /** Returns the JSON object, with the names and order of {@code fencer bench store --json}. */
    static String json(EtcdFencedWrites.Result result) {
        EtcdFencedWrites.Settings settings = result.settings();
        JsonObject latency = new JsonObject();
        latency.add("p50", number(result.writeMillisP50()));
        latency.add("p99", number(result.writeMillisP99()));
        latency.add("p999", number(result.writeMillisP999()));
        latency.add("max", number(result.writeMillisMax()));
        JsonObject json = new JsonObject();
        json.addProperty(FORMAT_MEMBER, FORMAT);
        json.addProperty("writers", settings.writers());
        json.addProperty("scopes", settings.scopes());
        json.addProperty("valueBytes", settings.valueBytes());
        json.addProperty("durationMillis", settings.duration().toMillis());
        json.addProperty("warmupMillis", settings.warmup().toMillis());
        json.addProperty("writes", result.writes());
        json.add("writesPerSecond", number(result.writesPerSecond()));
        json.add("writeLatencyMillis", latency);
        json.addProperty("staleRefusals", result.staleRefusals());
        json.addProperty("firstStale", result.firstStale());
        json.addProperty("errors", result.errors());
        json.addProperty("firstError", result.firstError());
        return GSON.toJson(json);
    }

    /** Returns the human summary, in the layout of {@code fencer bench store}'s. */
    static String text(EtcdFencedWrites.Result result) {
        EtcdFencedWrites.Settings settings = result.settings();
        String newline = System.lineSeparator();
        return String.format(Locale.ROOT, "etcd fenced writes: %d writers on %d scope%s, %d-byte values, %d ms"
                        + " measured after %d ms warmup%n", settings.writers(), settings.scopes(),
                settings.scopes() == 1 ? "" : "s", settings.valueBytes(), settings.duration().toMillis(),
                settings.warmup().toMillis())
                + String.format(Locale.ROOT, "committed writes:    %d  %.1f/s%n", result.writes(),
                        result.writesPerSecond())
                + String.format(Locale.ROOT, "write latency ms:    p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f%n",
                        result.writeMillisP50(), result.writeMillisP99(), result.writeMillisP999(),
                        result.writeMillisMax())
                + "stale refusals:      " + result.staleRefusals()
                + (result.firstStale() == null ? "" : " (first: " + result.firstStale() + ")") + newline
                + "errors:              " + result.errors()
                + (result.firstError() == null ? "" : " (first: " + result.firstError() + ")");
    }

    /** A number rounded to three decimals, as Fencer writes them; NaN and infinities, which JSON lacks, as null. */
    private static com.google.gson.JsonElement number(double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return JsonNull.INSTANCE;
        }
        return new JsonPrimitive(new BigDecimal(String.format(Locale.ROOT, "%.3f", value)));
    }
}

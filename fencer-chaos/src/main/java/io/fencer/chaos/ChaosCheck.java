package io.fencer.chaos;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Checker;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Checks a saved chaos run again: every checker of {@link Checker} over the run's {@code history.jsonl}, with the
 * workload its {@code run.json} names, printed as the run printed it. A checker change that stops finding the
 * violations of a saved control run shows here, and the project keeps a few such runs as test fixtures.
 *
 * <p>A run directory holds {@link #HISTORY_FILE} and {@link #RUN_FILE} (written by every {@link ChaosRun}); a
 * history file alone is checked as the counter workload unless told otherwise.
 */
public final class ChaosCheck {
    /** The merged history of a run, one event a line. */
    public static final String HISTORY_FILE = "history.jsonl";
    /** The settings a history must be checked with, as the run's summary JSON. */
    public static final String RUN_FILE = "run.json";
    /** The largest run.json read: a summary is a few kilobytes; anything far larger is not one. */
    static final long RUN_FILE_BYTES_MAX = 1 << 20;

    /** What a saved run is checked with. */
    public record Settings(Workload workload, int permits, boolean fencing) {
        public Settings {
            if (permits < 1) {
                throw new IllegalArgumentException("permits must be at least 1: " + permits);
            }
        }
    }

    private ChaosCheck() {
    }

    /**
     * Checks the run at {@code path} (a run directory, or a history file), as the workload and permits of
     * {@code override} if not null, else of the run's own settings; prints the verdict on {@code out} and returns the result.
     *
     * @throws IOException when the history or the settings cannot be read, naming the file and the problem
     */
    public static CheckResult check(Path path, Settings override, PrintStream out) throws IOException {
        Path history = Files.isDirectory(path) ? path.resolve(HISTORY_FILE) : path;
        if (!Files.isRegularFile(history)) {
            throw new IOException("no chaos history at " + history + ": give a run directory (with "
                    + HISTORY_FILE + ") or a history file");
        }
        Settings run = settingsOf(history.resolveSibling(RUN_FILE));
        Settings settings = override == null ? run
                : new Settings(override.workload(), override.permits(), run.fencing());
        List<HistoryEvent> events;
        try {
            events = HistoryJson.read(history);
        } catch (IllegalArgumentException e) {
            throw new IOException(history + " is not a chaos history: " + e.getMessage(), e);
        }
        CheckResult result = Checker.check(events, settings.workload(), settings.permits());
        out.println("checked " + events.size() + " events of " + history.toAbsolutePath() + " ("
                + settings.workload().name().toLowerCase(Locale.ROOT)
                + (settings.workload() == Workload.SEMAPHORE ? " of " + settings.permits() + " permits" : "")
                + ", fencing " + (settings.fencing() ? "on" : "OFF") + ")");
        ChaosReports.printVerdict(out, result, settings.fencing());
        return result;
    }

    /** Returns the settings of {@code runFile}, or the counter workload's when the file is absent. */
    static Settings settingsOf(Path runFile) throws IOException {
        if (!Files.exists(runFile)) {
            return new Settings(Workload.COUNTER, 1, true);
        }
        if (Files.size(runFile) > RUN_FILE_BYTES_MAX) {
            throw new IOException(runFile + " has " + Files.size(runFile) + " bytes, more than the "
                    + RUN_FILE_BYTES_MAX + " a run's settings can have");
        }
        try {
            JsonObject run = JsonParser.parseString(Files.readString(runFile, StandardCharsets.UTF_8))
                    .getAsJsonObject();
            checkFormat(run);
            Workload workload = Workload.valueOf(text(run, "workload").toUpperCase(Locale.ROOT));
            JsonElement permits = run.get("permits");
            JsonElement fencing = run.get("fencing");
            return new Settings(workload, permits == null ? 1 : permits.getAsInt(),
                    fencing == null || fencing.getAsBoolean());
        } catch (JsonParseException | IllegalStateException | IllegalArgumentException
                | UnsupportedOperationException e) {
            throw new IOException(runFile + " is not a chaos run's settings: " + e.getMessage(), e);
        }
    }

    /**
     * Refuses settings of a version this release does not know, whose members may mean something else; settings
     * without one were written before summaries had a version, in the shape of version 1.
     */
    private static void checkFormat(JsonObject run) {
        JsonElement format = run.get(ChaosReports.FORMAT_MEMBER);
        if (format != null && !(format.isJsonPrimitive() && format.getAsJsonPrimitive().isNumber()
                && format.getAsInt() == ChaosReports.FORMAT)) {
            throw new IllegalArgumentException("its format is " + format + ", which this release does not know (it"
                    + " reads format " + ChaosReports.FORMAT + ")");
        }
    }

    private static String text(JsonObject run, String name) {
        JsonElement value = run.get(name);
        if (value == null || !value.isJsonPrimitive()) {
            throw new IllegalArgumentException("'" + name + "' is missing");
        }
        return value.getAsString();
    }
}

package io.fencer.chaos;

import com.google.gson.FormattingStyle;
import com.google.gson.stream.JsonWriter;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.report.TimelineReport;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The outputs of a chaos run: the summary JSON, the HTML timeline and the verdict printed at the end. */
final class ChaosReports {
    /** How many violations the printed verdict lists; the report and the history hold them all. */
    private static final int VIOLATIONS_PRINTED = 10;
    /** The member that carries {@link #FORMAT}, first in the summary, as in {@code fencer}'s {@code --json}. */
    static final String FORMAT_MEMBER = "format";
    /**
     * The version of the summary's shape ({@code --summary} and {@code run.json}): members may be added within a
     * version; one that changes meaning or goes raises it, and {@code fencer chaos check} refuses a version it does
     * not know.
     */
    static final int FORMAT = 1;
    /** The summary's layout inside a line: {@code {"a": 1, "b": 2}}. */
    private static final FormattingStyle ONE_LINE = FormattingStyle.COMPACT.withSpaceAfterSeparators(true);

    private ChaosReports() {
    }

    /** Writes the summary JSON and the timeline (HTML page, SVG picture) where the options ask for them. */
    static void write(ChaosOptions options, List<Fault> schedule, List<HistoryEvent> history, CheckResult result,
            Path historyFile) throws IOException {
        String summary = summaryJson(options, schedule, result, historyFile);
        // beside the history, so that 'fencer chaos check DIR' knows the workload the history was made by
        Files.writeString(historyFile.resolveSibling(ChaosCheck.RUN_FILE), summary, StandardCharsets.UTF_8);
        if (options.summaryFile() != null) {
            Files.writeString(options.summaryFile(), summary, StandardCharsets.UTF_8);
        }
        if (options.htmlFile() != null) {
            TimelineReport.write(options.htmlFile(), title(options), facts(options, schedule), history, result);
        }
        if (options.svgFile() != null) {
            TimelineReport.writeSvg(options.svgFile(), title(options), facts(options, schedule), history, result);
        }
    }

    static String title(ChaosOptions options) {
        return "fencer chaos, seed " + options.seed() + (options.fencing() ? "" : " (control: fencing off)");
    }

    static List<String> facts(ChaosOptions options, List<Fault> schedule) {
        List<String> facts = new ArrayList<>();
        facts.add("seed " + options.seed());
        facts.add(options.fencing() ? "fencing on" : "fencing OFF (control)");
        facts.add(options.workers() + " workers, " + options.workload().name().toLowerCase(Locale.ROOT)
                + (options.workload() == Workload.SEMAPHORE ? " of " + options.permits() + " permits" : "") + ", "
                + seconds(options.duration()));
        facts.add(options.peers() + " lock peer" + (options.peers() == 1 ? "" : "s") + ", lease "
                + seconds(options.ttl()) + ", think 0-" + options.thinkMax().toMillis() + " ms");
        facts.add(schedule.size() + " faults: " + String.join(", ", options.faults().stream()
                .map(Fault.Kind::flag).sorted().toList()));
        return facts;
    }

    /**
     * Returns the summary: its version, settings, verdict, violations per check, counts and the fault schedule. One
     * member per line, the checks, the counts and each fault on a line of their own (as {@code docs/chaos-summary.json}
     * shows). The one writer of both {@code run.json} and the {@code --summary} file.
     */
    static String summaryJson(ChaosOptions options, List<Fault> schedule, CheckResult result, Path historyFile) {
        StringWriter text = new StringWriter(1024);
        try (JsonWriter json = new JsonWriter(text)) {
            json.setFormattingStyle(FormattingStyle.PRETTY);
            json.beginObject();
            json.name(FORMAT_MEMBER).value(FORMAT);
            json.name("seed").value(options.seed());
            json.name("fencing").value(options.fencing());
            json.name("workload").value(options.workload().name().toLowerCase(Locale.ROOT));
            json.name("workers").value(options.workers());
            if (options.workload() == Workload.SEMAPHORE) {
                json.name("permits").value(options.permits());
            }
            json.name("peers").value(options.peers());
            json.name("duration_ms").value(options.duration().toMillis());
            json.name("ttl_ms").value(options.ttl().toMillis());
            json.name("valid").value(result.valid());
            json.name("violations").value(result.violationCount());
            json.name("checks");
            oneLineObject(json, result.violationsByCheck());
            json.name("counts");
            oneLineObject(json, result.counts());
            json.name("faults").beginArray();
            for (Fault fault : schedule) {
                beginOneLineObject(json);
                json.name("at_ms").value(fault.atMillis());
                json.name("kind").value(fault.kind().flag());
                json.name("worker").value(fault.worker());
                json.name("duration_ms").value(fault.durationMillis());
                if (fault.partition() != null) {
                    json.name("partition").value(fault.partition().flag());
                }
                endOneLineObject(json);
            }
            json.endArray();
            json.name("history").value(historyFile.toAbsolutePath().toString());
            json.endObject();
        } catch (IOException e) {
            throw new UncheckedIOException("a StringWriter does not fail", e);
        }
        return text.append('\n').toString();
    }

    private static void oneLineObject(JsonWriter json, Map<String, ? extends Number> entries) throws IOException {
        beginOneLineObject(json);
        for (Map.Entry<String, ? extends Number> entry : entries.entrySet()) {
            json.name(entry.getKey()).value(entry.getValue());
        }
        endOneLineObject(json);
    }

    /** Opens an object where the pretty layout puts the next value, then keeps its members on that line. */
    private static void beginOneLineObject(JsonWriter json) throws IOException {
        json.beginObject();
        json.setFormattingStyle(ONE_LINE);
    }

    private static void endOneLineObject(JsonWriter json) throws IOException {
        json.endObject();
        json.setFormattingStyle(FormattingStyle.PRETTY);
    }

    /** Prints the verdict: per-check results, counts, the first violations and where the files are. */
    static void print(PrintStream out, ChaosOptions options, CheckResult result, Path historyFile) {
        out.println();
        printChecks(out, result);
        out.println("history: " + historyFile.toAbsolutePath());
        if (options.htmlFile() != null) {
            out.println("timeline: " + options.htmlFile().toAbsolutePath());
        }
        if (options.svgFile() != null) {
            out.println("picture: " + options.svgFile().toAbsolutePath());
        }
        if (options.summaryFile() != null) {
            out.println("summary: " + options.summaryFile().toAbsolutePath());
        }
        printLastLine(out, result, options.fencing());
    }

    /** Prints what {@link #print} prints of the checks alone: a saved history checked again. */
    static void printVerdict(PrintStream out, CheckResult result, boolean fencing) {
        printChecks(out, result);
        printLastLine(out, result, fencing);
    }

    private static void printChecks(PrintStream out, CheckResult result) {
        out.println("checks:");
        for (Map.Entry<String, Integer> check : result.violationsByCheck().entrySet()) {
            out.printf(Locale.ROOT, "  %-22s %s%n", check.getKey(),
                    check.getValue() == 0 ? "ok" : check.getValue() + " violation(s)");
        }
        out.println("counts: " + result.counts());
        result.violations().stream().limit(VIOLATIONS_PRINTED)
                .forEach(violation -> out.println("  VIOLATION " + violation.check() + ": "
                        + violation.description()));
        if (result.violationCount() > VIOLATIONS_PRINTED) {
            out.println("  ... and " + (result.violationCount() - VIOLATIONS_PRINTED) + " more");
        }
    }

    private static void printLastLine(PrintStream out, CheckResult result, boolean fencing) {
        out.println(result.valid() ? "verdict: 0 violations"
                : "verdict: " + result.violationCount() + " violation(s)"
                        + (fencing ? "" : " -- expected: fencing was off"));
        out.flush();
    }

    /** Returns e.g. {@code "30 s"} or {@code "2.5 s"}. */
    static String seconds(Duration duration) {
        long millis = duration.toMillis();
        return millis % 1000 == 0 ? millis / 1000 + " s" : String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
    }
}

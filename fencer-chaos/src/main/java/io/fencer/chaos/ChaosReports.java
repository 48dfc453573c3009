package io.fencer.chaos;

import java.io.IOException;
import java.io.PrintStream;
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

    private ChaosReports() {
    }

    /** Writes the summary JSON and the timeline (HTML page, SVG picture) where the options ask for them. */
    static void write(ChaosOptions options, List<Fault> schedule, List<HistoryEvent> history, CheckResult result,
            Path historyFile) throws IOException {
        if (options.summaryFile() != null) {
            Files.writeString(options.summaryFile(), summaryJson(options, schedule, result, historyFile),
                    StandardCharsets.UTF_8);
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
        facts.add(options.workers() + " workers, " + options.workload().name().toLowerCase(Locale.ROOT) + ", "
                + seconds(options.duration()));
        facts.add(options.peers() + " lock peer" + (options.peers() == 1 ? "" : "s") + ", lease "
                + seconds(options.ttl()) + ", think 0-" + options.thinkMax().toMillis() + " ms");
        facts.add(schedule.size() + " faults: " + String.join(", ", options.faults().stream()
                .map(Fault.Kind::flag).sorted().toList()));
        return facts;
    }

    /** Returns the summary: settings, verdict, violations per check, counts and the fault schedule. */
    static String summaryJson(ChaosOptions options, List<Fault> schedule, CheckResult result, Path historyFile) {
        StringBuilder json = new StringBuilder(1024);
        json.append("{\n  \"seed\": ").append(options.seed());
        json.append(",\n  \"fencing\": ").append(options.fencing());
        json.append(",\n  \"workload\": ").append(HistoryJson.quote(
                options.workload().name().toLowerCase(Locale.ROOT)));
        json.append(",\n  \"workers\": ").append(options.workers());
        json.append(",\n  \"peers\": ").append(options.peers());
        json.append(",\n  \"duration_ms\": ").append(options.duration().toMillis());
        json.append(",\n  \"ttl_ms\": ").append(options.ttl().toMillis());
        json.append(",\n  \"valid\": ").append(result.valid());
        json.append(",\n  \"violations\": ").append(result.violationCount());
        json.append(",\n  \"checks\": {");
        appendEntries(json, result.violationsByCheck());
        json.append("},\n  \"counts\": {");
        appendEntries(json, result.counts());
        json.append("},\n  \"faults\": [");
        for (int i = 0; i < schedule.size(); i++) {
            Fault fault = schedule.get(i);
            json.append(i == 0 ? "\n    " : ",\n    ").append("{\"at_ms\": ").append(fault.atMillis())
                    .append(", \"kind\": ").append(HistoryJson.quote(fault.kind().flag()))
                    .append(", \"worker\": ").append(fault.worker())
                    .append(", \"duration_ms\": ").append(fault.durationMillis()).append('}');
        }
        json.append(schedule.isEmpty() ? "]" : "\n  ]");
        json.append(",\n  \"history\": ").append(HistoryJson.quote(historyFile.toAbsolutePath().toString()));
        return json.append("\n}\n").toString();
    }

    private static void appendEntries(StringBuilder json, Map<String, ? extends Number> entries) {
        boolean first = true;
        for (Map.Entry<String, ? extends Number> entry : entries.entrySet()) {
            json.append(first ? "" : ", ").append(HistoryJson.quote(entry.getKey())).append(": ")
                    .append(entry.getValue());
            first = false;
        }
    }

    /** Prints the verdict: per-check results, counts, the first violations and where the files are. */
    static void print(PrintStream out, ChaosOptions options, CheckResult result, Path historyFile) {
        out.println();
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
        out.println(result.valid() ? "verdict: 0 violations"
                : "verdict: " + result.violationCount() + " violation(s)"
                        + (options.fencing() ? "" : " -- expected: fencing was off"));
        out.flush();
    }

    /** Returns e.g. {@code "30 s"} or {@code "2.5 s"}. */
    static String seconds(Duration duration) {
        long millis = duration.toMillis();
        return millis % 1000 == 0 ? millis / 1000 + " s" : String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
    }
}

package io.fencer.chaos.report;

import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Violation;
import io.fencer.chaos.history.HistoryEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The report of a chaos run: a timeline picture (SVG) with one lane per process, and an HTML page holding the
 * picture, the checks and the violations. Both are self-contained: no script, no font, image or style sheet
 * fetched from anywhere, so the page opens offline and the picture renders on GitHub.
 *
 * <p>The picture's time 0 is the history's first event; its axis is in seconds. Lanes: the workers
 * ({@code w1} ... {@code wN} in natural order), then the store, then the lock servers. On a worker's lane a light bar
 * is a hold, from the grant ({@code ok acquire}) to the release's completion (or the worker's next acquire, its
 * kill, or the end of the history), with the grant's token written on it when it fits; above it, each write or add
 * is a green tick (acknowledged), an amber cross (refused) or a grey {@code ?} (unknown, including a write whose
 * worker was killed before it completed). A hatched blue span is a pause (SIGSTOP to SIGCONT); a red X is a kill,
 * after which the lane is greyed until its restart (a green triangle); a purple diamond is a lost session. Every
 * violation of the check result is red at its time on its process's lane; those of the final state (process
 * {@code final} or time 0) are listed in a red box below the lanes. Every mark has a hover title with the exact
 * event.
 *
 * <p>Long histories (100,000 events over ten minutes) stay a few megabytes: the width stops growing at 2,400 px,
 * marks that share a pixel column of a lane are drawn as one (the worst outcome, the title counting the rest), and
 * holds closer than a pixel merge into one bar. Holds, faults and violations are never dropped.
 */
public final class TimelineReport {
    /** The most violations the HTML page lists; the rest are counted ("and N more"). */
    static final int LISTED_VIOLATIONS_MAX = 200;

    private TimelineReport() {
    }

    /**
     * Returns the timeline picture as a standalone SVG document.
     *
     * @param title the picture's heading, e.g. {@code "fencer chaos: counter, fencing on"}
     * @param facts short facts shown under the title, e.g. {@code "seed 42"}, {@code "5 workers, counter, 60 s"}
     * @param history the run's events, in time order (sorted here again, stably, to be sure)
     * @param result what the checker found in {@code history}
     */
    public static String svg(String title, List<String> facts, List<HistoryEvent> history, CheckResult result) {
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + picture(title, facts, history, result);
    }

    /**
     * Returns a self-contained HTML page: the picture inline, then the checks with their verdicts, the counts, and
     * the first 200 violations ("and N more"). The arguments are those of {@link #svg}.
     */
    public static String html(String title, List<String> facts, List<HistoryEvent> history, CheckResult result) {
        String picture = picture(title, facts, history, result);
        long originMicros = history.stream().mapToLong(HistoryEvent::timeMicros).min().orElse(0);
        StringBuilder out = new StringBuilder(picture.length() + 16_384);
        out.append("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
                .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
        Markup.escape(out, title).append("</title>\n<style>\n")
                .append("body{font-family:").append(TimelineSvg.SANS).append(";margin:24px;color:#1f2328}\n")
                .append(".picture{overflow-x:auto;border:1px solid #d0d7de;margin:16px 0}\n")
                .append("table{border-collapse:collapse;margin:8px 0 24px}\n")
                .append("th,td{border:1px solid #d0d7de;padding:4px 10px;text-align:left;vertical-align:top}\n")
                .append("th{background:#f6f8fa}\ntd.number{text-align:right;font-variant-numeric:tabular-nums}\n")
                .append(".pass{color:" + TimelineSvg.GREEN + ";font-weight:bold}\n")
                .append(".fail{color:" + TimelineSvg.RED + ";font-weight:bold}\n")
                .append("</style>\n</head>\n<body>\n<h1>");
        Markup.escape(out, title).append("</h1>\n");
        if (!facts.isEmpty()) {
            out.append("<p>");
            Markup.escape(out, String.join(" \u00b7 ", facts)).append("</p>\n");
        }
        int count = result.violationCount();
        out.append("<p class=\"").append(count == 0 ? "pass" : "fail").append("\">").append(count)
                .append(count == 1 ? " violation" : " violations").append("</p>\n");
        out.append("<div class=\"picture\">\n").append(picture).append("</div>\n");
        checks(out, result);
        counts(out, result);
        violations(out, result, originMicros);
        return out.append("</body>\n</html>\n").toString();
    }

    /** Writes {@link #html} to {@code htmlFile} in UTF-8, replacing it. */
    public static void write(Path htmlFile, String title, List<String> facts, List<HistoryEvent> history,
            CheckResult result) throws IOException {
        Objects.requireNonNull(htmlFile, "htmlFile");
        Files.writeString(htmlFile, html(title, facts, history, result), StandardCharsets.UTF_8);
    }

    /** Writes {@link #svg} to {@code svgFile} in UTF-8, replacing it. */
    public static void writeSvg(Path svgFile, String title, List<String> facts, List<HistoryEvent> history,
            CheckResult result) throws IOException {
        Objects.requireNonNull(svgFile, "svgFile");
        Files.writeString(svgFile, svg(title, facts, history, result), StandardCharsets.UTF_8);
    }

    private static String picture(String title, List<String> facts, List<HistoryEvent> history, CheckResult result) {
        Objects.requireNonNull(title, "title");
        Objects.requireNonNull(history, "history");
        Objects.requireNonNull(result, "result");
        List<String> factsCopy = List.copyOf(Objects.requireNonNull(facts, "facts"));
        return TimelineSvg.render(title, factsCopy, Timeline.of(history, result.violations()), result);
    }

    private static void checks(StringBuilder out, CheckResult result) {
        out.append("<h2>Checks</h2>\n<table class=\"checks\">\n<tr><th>check</th><th>violations</th>")
                .append("<th>result</th></tr>\n");
        for (Map.Entry<String, Integer> check : result.violationsByCheck().entrySet()) {
            boolean passed = check.getValue() == 0;
            out.append("<tr><td>");
            Markup.escape(out, check.getKey()).append("</td><td class=\"number\">").append(check.getValue())
                    .append("</td><td class=\"").append(passed ? "pass\">pass" : "fail\">fail")
                    .append("</td></tr>\n");
        }
        out.append("</table>\n");
    }

    private static void counts(StringBuilder out, CheckResult result) {
        out.append("<h2>Counts</h2>\n<table class=\"counts\">\n<tr><th>what</th><th>count</th></tr>\n");
        for (Map.Entry<String, Long> count : result.counts().entrySet()) {
            out.append("<tr><td>");
            Markup.escape(out, count.getKey()).append("</td><td class=\"number\">").append(count.getValue())
                    .append("</td></tr>\n");
        }
        out.append("</table>\n");
    }

    private static void violations(StringBuilder out, CheckResult result, long originMicros) {
        out.append("<h2>Violations</h2>\n");
        List<Violation> violations = result.violations();
        if (violations.isEmpty()) {
            out.append("<p class=\"pass\">None.</p>\n");
            return;
        }
        out.append("<table class=\"violations\">\n<tr><th>time (s)</th><th>process</th><th>token</th>")
                .append("<th>check</th><th>description</th></tr>\n");
        for (Violation violation : violations.subList(0, Math.min(violations.size(), LISTED_VIOLATIONS_MAX))) {
            // Time 0 marks a violation of the final state as a whole, not one at the run's start.
            String time = violation.timeMicros() == 0 ? "end" : Markup.seconds(violation.timeMicros() - originMicros);
            out.append("<tr><td class=\"number\">").append(time).append("</td><td>");
            Markup.escape(out, violation.process()).append("</td><td class=\"number\">")
                    .append(violation.token() == 0 ? "" : Long.toString(violation.token())).append("</td><td>");
            Markup.escape(out, violation.check()).append("</td><td>");
            Markup.escape(out, violation.description()).append("</td></tr>\n");
        }
        out.append("</table>\n");
        if (violations.size() > LISTED_VIOLATIONS_MAX) {
            out.append("<p>and ").append(violations.size() - LISTED_VIOLATIONS_MAX).append(" more</p>\n");
        }
    }
}

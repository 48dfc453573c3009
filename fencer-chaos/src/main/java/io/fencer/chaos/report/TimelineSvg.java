package io.fencer.chaos.report;

import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Violation;
import io.fencer.chaos.report.Timeline.FaultMark;
import io.fencer.chaos.report.Timeline.OutcomeMark;
import io.fencer.chaos.report.Timeline.Span;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleFunction;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The SVG picture of a {@link Timeline}: a header with the verdict, a legend, a time axis in seconds, one lane per
 * process, and a box for the violations that have no place on a lane.
 *
 * <p>The picture stays small for long histories: its width grows with the duration up to
 * {@link #PLOT_WIDTH_MAX_PX}; write outcomes and violations that share a lane's pixel column are drawn as one mark
 * (the worst outcome; the title counts the rest); holds closer than a pixel merge into one bar. When a layer would
 * still exceed its character budget, its columns widen (2, 4, 8 ... pixels) until it fits. Nothing is dropped:
 * every hold, fault and violation still has a visible mark. Styles are presentation attributes on groups, not
 * classes in a style sheet, because the picture is also inlined in an HTML page whose styles it must not touch.
 */
final class TimelineSvg {
    static final int PLOT_WIDTH_MIN_PX = 800;
    static final int PLOT_WIDTH_MAX_PX = 2400;
    static final int PLOT_PX_PER_SECOND = 20;
    /** The most characters the hold bars and their tokens take; above it, holds that share wider columns merge. */
    static final int HOLDS_LAYER_CHARS_MAX = 1_800_000;
    /** The most characters the write outcomes take; above it, outcomes share wider columns. */
    static final int OUTCOMES_LAYER_CHARS_MAX = 1_500_000;
    /** The most characters the violations on lanes take; above it, violations share wider columns. */
    static final int VIOLATIONS_LAYER_CHARS_MAX = 1_200_000;
    /** The most violations listed in the box below the lanes; the HTML report lists them all (up to its cap). */
    static final int BOX_LINES_MAX = 20;
    /** The most violations an aggregated violation mark's title lists. */
    static final int TITLE_VIOLATIONS_MAX = 3;

    static final String SANS = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
    static final String MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
    static final String GREEN = "#1a7f37";
    static final String RED = "#cf222e";
    static final String AMBER = "#d98e04";
    static final String GREY = "#6e7781";
    /** The band of a lane cut off by a partition or on a flaky link. */
    static final String ORANGE = "#fb8f44";

    private static final int LABEL_WIDTH_PX = 100;
    private static final int MARGIN_RIGHT_PX = 24;
    private static final int LANE_HEIGHT_PX = 40;
    private static final int HEADER_HEIGHT_PX = 106;
    private static final int LEGEND_ITEM_WIDTH_PX = 164;
    private static final int LEGEND_ROW_HEIGHT_PX = 24;
    private static final int AXIS_HEIGHT_PX = 30;
    private static final int AXIS_LABEL_SPACING_PX = 70;
    private static final int BOX_LINE_HEIGHT_PX = 16;
    private static final double SANS_CHAR_WIDTH_PX = 6.6;
    private static final double TOKEN_CHAR_WIDTH_PX = 6.2;
    private static final long[] AXIS_STEPS_MICROS = {1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
        500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 15_000_000, 30_000_000, 60_000_000, 120_000_000,
        300_000_000, 600_000_000, 1_200_000_000, 1_800_000_000, 3_600_000_000L};

    private final Timeline timeline;
    private final CheckResult result;
    private final StringBuilder out;
    private final long scaleMicros;
    private final double plotWidthPx;
    private final int widthPx;
    private final Map<String, Integer> laneIndexes = new LinkedHashMap<>();
    private int lanesTopPx;

    private TimelineSvg(Timeline timeline, CheckResult result) {
        this.timeline = timeline;
        this.result = result;
        this.out = new StringBuilder(4096 + timeline.eventCount * 24);
        // A history of one instant still needs a scale; one second keeps its marks apart from the axis labels.
        this.scaleMicros = timeline.durationMicros > 0 ? timeline.durationMicros : 1_000_000;
        double seconds = timeline.durationMicros / 1e6;
        this.plotWidthPx = Math.max(PLOT_WIDTH_MIN_PX, Math.min(PLOT_WIDTH_MAX_PX,
                Math.ceil(seconds * PLOT_PX_PER_SECOND)));
        this.widthPx = LABEL_WIDTH_PX + (int) plotWidthPx + MARGIN_RIGHT_PX;
        for (String lane : timeline.lanes) {
            laneIndexes.put(lane, laneIndexes.size());
        }
    }

    /** Returns the picture as one {@code <svg>} element (no XML declaration, so it can be inlined in HTML). */
    static String render(String title, List<String> facts, Timeline timeline, CheckResult result) {
        return new TimelineSvg(timeline, result).picture(title, facts);
    }

    private String picture(String title, List<String> facts) {
        int legendRows = (int) Math.ceil(legendItems().size() / (double) legendItemsPerRow());
        int axisTopPx = HEADER_HEIGHT_PX + legendRows * LEGEND_ROW_HEIGHT_PX + 8;
        lanesTopPx = axisTopPx + AXIS_HEIGHT_PX;
        int lanesHeightPx = Math.max(1, timeline.lanes.size()) * LANE_HEIGHT_PX;
        int boxTopPx = lanesTopPx + lanesHeightPx + 16;
        int heightPx = boxTopPx + boxHeightPx() + 16;
        out.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(widthPx).append("\" height=\"")
                .append(heightPx).append("\" viewBox=\"0 0 ").append(widthPx).append(' ').append(heightPx)
                .append("\" role=\"img\" font-family=\"").append(SANS).append("\" font-size=\"12\">\n");
        out.append("<title>");
        Markup.escape(out, title).append("</title>\n");
        definitions();
        out.append("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
        header(title, facts);
        legend(HEADER_HEIGHT_PX);
        if (timeline.eventCount == 0) {
            text(out, LABEL_WIDTH_PX, lanesTopPx + 24, "fill=\"" + GREY + "\" font-size=\"14\"",
                    "empty history: no events");
        } else {
            axis(axisTopPx, lanesHeightPx);
            lanes();
        }
        box(boxTopPx);
        return out.append("</svg>\n").toString();
    }

    private void definitions() {
        out.append("<defs>\n")
                .append("<pattern id=\"fr-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
                        + " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#dde7fb\"/>"
                        + "<path d=\"M0 0v6\" stroke=\"#3b6fd6\" stroke-width=\"2\"/></pattern>\n")
                .append("<path id=\"fr-ok\" d=\"M-4 0l3 3 5-6\" fill=\"none\" stroke=\"" + GREEN
                        + "\" stroke-width=\"2\"/>\n")
                .append("<path id=\"fr-refused\" d=\"M-3.5-3.5l7 7m0-7l-7 7\" fill=\"none\" stroke=\"" + AMBER
                        + "\" stroke-width=\"2\"/>\n")
                .append("<g id=\"fr-unknown\"><circle r=\"5\" fill=\"" + GREY + "\"/><text y=\"3.5\""
                        + " text-anchor=\"middle\" font-size=\"9\" font-weight=\"bold\" fill=\"#fff\">?</text></g>\n")
                .append("<path id=\"fr-kill\" d=\"M-6-6l12 12m0-12l-12 12\" stroke=\"" + RED
                        + "\" stroke-width=\"3\" stroke-linecap=\"round\"/>\n")
                .append("<path id=\"fr-restart\" d=\"M-4-6l10 6-10 6z\" fill=\"" + GREEN + "\"/>\n")
                .append("<path id=\"fr-session\" d=\"M0-4l4 4-4 4-4-4z\" fill=\"#8250df\"/>\n")
                .append("<path id=\"fr-member\" d=\"M-2-6h4v4h4v4h-4v4h-4v-4h-4v-4h4z\" fill=\"#3b78c4\"/>\n")
                .append("<g id=\"fr-violation\" fill=\"none\" stroke=\"" + RED + "\" stroke-width=\"2\">"
                        + "<path d=\"M0 14v25\"/><circle cy=\"7\" r=\"6.5\"/></g>\n")
                .append("</defs>\n");
    }

    private void header(String title, List<String> facts) {
        int charsMax = (int) ((widthPx - 32) / SANS_CHAR_WIDTH_PX);
        text(out, 16, 28, "font-size=\"18\" font-weight=\"bold\"", Markup.truncate(title, charsMax * 2 / 3));
        text(out, 16, 50, "fill=\"#444\"", Markup.truncate(String.join(" \u00b7 ", facts), charsMax));
        int count = result.violationCount();
        String verdict = count + (count == 1 ? " violation" : " violations");
        text(out, 16, 76, "font-size=\"16\" font-weight=\"bold\" fill=\"" + (count == 0 ? GREEN : RED) + "\"", verdict);
        out.append("<text x=\"16\" y=\"96\">");
        String separator = "";
        for (Map.Entry<String, Integer> check : result.violationsByCheck().entrySet()) {
            out.append(separator).append("<tspan");
            if (check.getValue() > 0) {
                out.append(" fill=\"" + RED + "\" font-weight=\"bold\"");
            }
            out.append('>');
            Markup.escape(out, check.getKey()).append(": ").append(check.getValue()).append("</tspan>");
            separator = " \u00b7 ";
        }
        out.append("</text>\n");
    }

    /** One legend entry: its sample, drawn centred at (0, 0), and its label. */
    private record LegendItem(String sample, String label) {
    }

    private static List<LegendItem> legendItems() {
        return List.of(
                new LegendItem("<rect x=\"-12\" y=\"-8\" width=\"24\" height=\"16\" fill=\"#b6d4fb\" stroke=\"#3b78c4\""
                        + " stroke-width=\".5\"/><text y=\"4\" text-anchor=\"middle\" font-size=\"10\" font-family=\""
                        + MONO + "\">17</text>", "hold (token)"),
                new LegendItem("<use href=\"#fr-ok\"/>", "write acknowledged"),
                new LegendItem("<use href=\"#fr-refused\"/>", "write refused"),
                new LegendItem("<use href=\"#fr-unknown\"/>", "write unknown"),
                new LegendItem("<rect x=\"-12\" y=\"-8\" width=\"24\" height=\"16\" fill=\"url(#fr-hatch)\"/>",
                        "paused (SIGSTOP)"),
                new LegendItem("<use href=\"#fr-kill\"/>", "killed (SIGKILL)"),
                new LegendItem("<use href=\"#fr-restart\"/>", "restarted"),
                new LegendItem("<rect x=\"-12\" y=\"-8\" width=\"24\" height=\"16\" fill=\"" + GREY
                        + "\" fill-opacity=\".35\"/>", "down (killed)"),
                new LegendItem("<use href=\"#fr-session\"/>", "session lost"),
                new LegendItem("<use href=\"#fr-member\"/>", "peer added / promoted / removed"),
                new LegendItem("<rect x=\"-12\" y=\"-8\" width=\"24\" height=\"16\" fill=\"" + ORANGE
                        + "\" fill-opacity=\".3\"/>", "cut off / flaky"),
                new LegendItem("<g fill=\"none\" stroke=\"" + RED + "\" stroke-width=\"2\"><circle r=\"6.5\"/>"
                        + "<path d=\"M0 7v5\"/></g>", "violation"));
    }

    private int legendItemsPerRow() {
        return Math.max(1, (widthPx - 32) / LEGEND_ITEM_WIDTH_PX);
    }

    private void legend(int topPx) {
        out.append("<g class=\"fr-legend\">\n");
        List<LegendItem> items = legendItems();
        int perRow = legendItemsPerRow();
        for (int i = 0; i < items.size(); i++) {
            int x = 16 + (i % perRow) * LEGEND_ITEM_WIDTH_PX;
            int y = topPx + (i / perRow) * LEGEND_ROW_HEIGHT_PX + 12;
            out.append("<g transform=\"translate(").append(x + 14).append(' ').append(y).append(")\">")
                    .append(items.get(i).sample()).append("</g>");
            text(out, x + 34, y + 4, "fill=\"#333\"", items.get(i).label());
        }
        out.append("</g>\n");
    }

    private void axis(int topPx, int lanesHeightPx) {
        long stepMicros = AXIS_STEPS_MICROS[AXIS_STEPS_MICROS.length - 1];
        for (long candidate : AXIS_STEPS_MICROS) {
            if (candidate * plotWidthPx / scaleMicros >= AXIS_LABEL_SPACING_PX) {
                stepMicros = candidate;
                break;
            }
        }
        out.append("<g class=\"fr-axis\" fill=\"#444\" text-anchor=\"middle\">\n");
        text(out, LABEL_WIDTH_PX - 8, topPx + 16, "text-anchor=\"end\" fill=\"" + GREY + "\"", "seconds");
        StringBuilder grid = new StringBuilder();
        for (long time = 0; time <= scaleMicros; time += stepMicros) {
            double x = x(time);
            out.append("<text x=\"");
            Markup.pixels(out, x).append("\" y=\"").append(topPx + 16).append("\">")
                    .append(BigDecimal.valueOf(time, 6).stripTrailingZeros().toPlainString()).append("</text>");
            grid.append('M');
            Markup.pixels(grid, x).append(' ').append(topPx + 22).append('v')
                    .append(lanesHeightPx + AXIS_HEIGHT_PX - 22);
        }
        out.append("\n<path class=\"fr-grid\" d=\"").append(grid).append("\" stroke=\"#d0d7de\" fill=\"none\"/>\n");
        out.append("</g>\n");
    }

    private void lanes() {
        out.append("<g class=\"fr-lanes\">\n");
        for (String lane : timeline.lanes) {
            int top = laneTop(lane);
            out.append("<rect x=\"").append(LABEL_WIDTH_PX).append("\" y=\"").append(top).append("\" width=\"");
            Markup.pixels(out, plotWidthPx).append("\" height=\"").append(LANE_HEIGHT_PX).append("\" fill=\"")
                    .append(laneIndexes.get(lane) % 2 == 0 ? "#f6f8fa" : "#eef1f4").append("\" fill-opacity=\".7\"/>");
            out.append("<text class=\"fr-lane-label\" x=\"").append(LABEL_WIDTH_PX - 8).append("\" y=\"")
                    .append(top + LANE_HEIGHT_PX / 2 + 4).append("\" text-anchor=\"end\" font-family=\"").append(MONO)
                    .append("\" font-weight=\"bold\">");
            Markup.escape(out, Markup.truncate(lane, 12)).append("</text>\n");
        }
        out.append("</g>\n");
        spans(timeline.cuts, "fr-cuts", "fill=\"" + ORANGE + "\" fill-opacity=\".3\"", 0, LANE_HEIGHT_PX);
        spans(timeline.pauses, "fr-pauses", "fill=\"url(#fr-hatch)\" opacity=\".85\"", 2, LANE_HEIGHT_PX - 4);
        Map<String, List<Span>> holdsByLane = byLane(timeline.holds, Span::lane);
        out.append(withinBudget(columnPx -> holds(holdsByLane, columnPx), HOLDS_LAYER_CHARS_MAX));
        spans(timeline.downs, "fr-downs", "fill=\"" + GREY + "\" fill-opacity=\".35\"", 0, LANE_HEIGHT_PX);
        Map<String, List<OutcomeMark>> outcomesByLane = byLane(timeline.outcomes, OutcomeMark::lane);
        out.append(withinBudget(columnPx -> outcomes(outcomesByLane, columnPx), OUTCOMES_LAYER_CHARS_MAX));
        faults();
        Map<String, List<Violation>> violationsByLane = byLane(timeline.laneViolations, Violation::process);
        out.append(withinBudget(columnPx -> violations(violationsByLane, columnPx), VIOLATIONS_LAYER_CHARS_MAX));
    }

    private void spans(List<Span> spans, String className, String style, int offsetPx, int heightPx) {
        out.append("<g class=\"").append(className).append("\" ").append(style).append(">\n");
        for (Span span : spans) {
            rect(out, x(span.startMicros()), x(span.endMicros()), laneTop(span.lane()) + offsetPx, heightPx, 2);
            out.append("><title>");
            Markup.escape(out, span.title()).append("</title></rect>\n");
        }
        out.append("</g>\n");
    }

    /**
     * Returns {@code layer} drawn with columns of one pixel, or of the fewest pixels (doubling) that keep it within
     * {@code charsMax}: the picture's size stays bounded however many marks the history has.
     */
    private String withinBudget(DoubleFunction<StringBuilder> layer, int charsMax) {
        double columnPx = 1;
        StringBuilder drawn = layer.apply(columnPx);
        while (drawn.length() > charsMax && columnPx < plotWidthPx) {
            columnPx *= 2;
            drawn = layer.apply(columnPx);
        }
        return drawn.toString();
    }

    /** Draws the holds of {@code byLane} as bars with their tokens, merging those that share a column. */
    private StringBuilder holds(Map<String, List<Span>> byLane, double columnPx) {
        StringBuilder drawn = new StringBuilder(timeline.holds.size() * 128);
        StringBuilder tokens = new StringBuilder();
        drawn.append("<g class=\"fr-holds\" fill=\"#b6d4fb\" stroke=\"#3b78c4\" stroke-width=\".5\">\n");
        for (List<Span> bar : holdBars(byLane, columnPx)) {
            Span first = bar.get(0);
            Span last = bar.get(bar.size() - 1);
            double startPx = x(first.startMicros());
            double endPx = Math.max(x(last.endMicros()), startPx + 1);
            int top = laneTop(first.lane());
            rect(drawn, startPx, endPx, top + 13, 16, 1);
            drawn.append("><title>");
            Markup.escape(drawn, bar.size() == 1 ? first.title() : mergedHoldTitle(bar)).append("</title></rect>\n");
            String label = bar.size() == 1 ? Long.toString(first.token())
                    : first.token() + "\u2026" + last.token();
            if (endPx - startPx >= label.length() * TOKEN_CHAR_WIDTH_PX + 4) {
                tokens.append("<text x=\"");
                Markup.pixels(tokens, (startPx + endPx) / 2).append("\" y=\"").append(top + 25).append("\">")
                        .append(label).append("</text>\n");
            }
        }
        return drawn.append("</g>\n<g class=\"fr-tokens\" font-family=\"").append(MONO).append("\" font-size=\"10\"")
                .append(" text-anchor=\"middle\" fill=\"#0b3d91\" pointer-events=\"none\">\n")
                .append(tokens).append("</g>\n");
    }

    /**
     * Returns each lane's holds grouped into bars: a hold joins the bar before it when the gap between them is
     * under a pixel (they would touch anyway) or when both start in the same column of {@code columnPx}.
     */
    private List<List<Span>> holdBars(Map<String, List<Span>> byLane, double columnPx) {
        List<List<Span>> bars = new ArrayList<>();
        for (List<Span> holds : byLane.values()) {
            List<Span> bar = new ArrayList<>();
            for (Span hold : holds) {
                if (!bar.isEmpty() && x(hold.startMicros()) - x(bar.get(bar.size() - 1).endMicros()) >= 1
                        && column(hold.startMicros(), columnPx) != column(bar.get(0).startMicros(), columnPx)) {
                    bars.add(bar);
                    bar = new ArrayList<>();
                }
                bar.add(hold);
            }
            if (!bar.isEmpty()) {
                bars.add(bar);
            }
        }
        return bars;
    }

    private static String mergedHoldTitle(List<Span> bar) {
        Span first = bar.get(0);
        Span last = bar.get(bar.size() - 1);
        return first.lane() + " holds " + bar.size() + " grants, tokens " + first.token() + " to " + last.token()
                + ", from " + Markup.seconds(first.startMicros()) + " s to " + Markup.seconds(last.endMicros())
                + " s (merged: too close to draw apart)";
    }

    /** Draws one mark per lane and column: the worst outcome in it, its title counting the others. */
    private StringBuilder outcomes(Map<String, List<OutcomeMark>> byLane, double columnPx) {
        StringBuilder drawn = new StringBuilder(timeline.outcomes.size() * 112);
        drawn.append("<g class=\"fr-writes\">\n");
        for (List<OutcomeMark> column : columns(byLane, OutcomeMark::timeMicros, columnPx)) {
            OutcomeMark worst = column.get(0);
            int[] counts = new int[Timeline.Outcome.values().length];
            for (OutcomeMark mark : column) {
                counts[mark.outcome().ordinal()]++;
                if (mark.outcome().compareTo(worst.outcome()) > 0) {
                    worst = mark;
                }
            }
            String title = column.size() == 1 ? worst.title() : column.size() + " writes from "
                    + Markup.seconds(column.get(0).timeMicros()) + " s to "
                    + Markup.seconds(column.get(column.size() - 1).timeMicros()) + " s: "
                    + counts[Timeline.Outcome.OK.ordinal()] + " acknowledged, "
                    + counts[Timeline.Outcome.REFUSED.ordinal()] + " refused, "
                    + counts[Timeline.Outcome.UNKNOWN.ordinal()] + " unknown\nworst: " + worst.title();
            String symbol = switch (worst.outcome()) {
                case OK -> "fr-ok";
                case REFUSED -> "fr-refused";
                case UNKNOWN -> "fr-unknown";
            };
            use(drawn, symbol, null, x(worst.timeMicros()), laneTop(worst.lane()) + 7, title);
        }
        return drawn.append("</g>\n");
    }

    private void faults() {
        out.append("<g class=\"fr-faults\">\n");
        for (FaultMark fault : timeline.faults) {
            int top = laneTop(fault.lane());
            double x = x(fault.timeMicros());
            switch (fault.fault()) {
                case KILL -> use(out, "fr-kill", "fr-kill", x, top + 21, fault.title());
                case RESTART -> use(out, "fr-restart", "fr-restart", x, top + 21, fault.title());
                case SESSION_LOST -> use(out, "fr-session", "fr-session-lost", x, top + 34, fault.title());
                case MEMBERSHIP -> use(out, "fr-member", "fr-member", x, top + 34, fault.title());
                default -> throw new IllegalStateException("unhandled fault " + fault.fault());
            }
        }
        out.append("</g>\n");
    }

    /** Draws every violation on a lane in red; those sharing a column share one mark whose title lists them. */
    private StringBuilder violations(Map<String, List<Violation>> byLane, double columnPx) {
        StringBuilder drawn = new StringBuilder(timeline.laneViolations.size() * 256);
        drawn.append("<g class=\"fr-violations\">\n");
        for (List<Violation> column : columns(byLane, violation -> timeline.sinceOrigin(violation.timeMicros()),
                columnPx)) {
            StringBuilder title = new StringBuilder();
            if (column.size() > 1) {
                title.append(column.size()).append(" violations:\n");
            }
            for (int i = 0; i < Math.min(column.size(), TITLE_VIOLATIONS_MAX); i++) {
                title.append(i == 0 ? "" : "\n").append(describe(column.get(i)));
            }
            if (column.size() > TITLE_VIOLATIONS_MAX) {
                title.append("\nand ").append(column.size() - TITLE_VIOLATIONS_MAX).append(" more");
            }
            Violation first = column.get(0);
            use(drawn, "fr-violation", "fr-violation", x(timeline.sinceOrigin(first.timeMicros())),
                    laneTop(first.process()), title.toString());
        }
        return drawn.append("</g>\n");
    }

    private String describe(Violation violation) {
        return Markup.seconds(timeline.sinceOrigin(violation.timeMicros())) + " s " + violation.process()
                + (violation.token() == 0 ? "" : " token=" + violation.token()) + " violates " + violation.check()
                + ": " + Markup.truncate(violation.description(), Timeline.DETAIL_CHARS_MAX);
    }

    private int boxHeightPx() {
        int violations = timeline.boxViolations.size();
        if (violations == 0) {
            return 0;
        }
        int lines = 1 + Math.min(violations, BOX_LINES_MAX) + (violations > BOX_LINES_MAX ? 1 : 0);
        return lines * BOX_LINE_HEIGHT_PX + 12;
    }

    /** Lists the violations without a place on a lane (the final state's, and those at time 0) in a red box. */
    private void box(int topPx) {
        List<Violation> violations = timeline.boxViolations;
        if (violations.isEmpty()) {
            return;
        }
        out.append("<g class=\"fr-final-violations\">\n<rect x=\"16\" y=\"").append(topPx).append("\" width=\"")
                .append(widthPx - 32).append("\" height=\"").append(boxHeightPx())
                .append("\" fill=\"#ffebe9\" stroke=\"" + RED + "\" rx=\"4\"/>\n");
        int charsMax = (int) ((widthPx - 48) / SANS_CHAR_WIDTH_PX);
        int y = topPx + BOX_LINE_HEIGHT_PX + 2;
        text(out, 24, y, "font-weight=\"bold\" fill=\"" + RED + "\"", violations.size()
                + (violations.size() == 1 ? " violation" : " violations") + " of the final state or of no lane");
        for (int i = 0; i < Math.min(violations.size(), BOX_LINES_MAX); i++) {
            Violation violation = violations.get(i);
            y += BOX_LINE_HEIGHT_PX;
            text(out, 24, y, "fill=\"" + RED + "\"", Markup.truncate(violation.check() + ": " + violation.process()
                    + (violation.token() == 0 ? "" : " token " + violation.token()) + ": "
                    + violation.description(), charsMax));
        }
        if (violations.size() > BOX_LINES_MAX) {
            text(out, 24, y + BOX_LINE_HEIGHT_PX, "fill=\"" + RED + "\"",
                    "and " + (violations.size() - BOX_LINES_MAX) + " more (listed in the HTML report)");
        }
        out.append("</g>\n");
    }

    /** Groups each lane's time-ordered {@code items} by column of {@code columnPx}. */
    private <T> List<List<T>> columns(Map<String, List<T>> byLane, ToLongFunction<T> timeMicros, double columnPx) {
        List<List<T>> columns = new ArrayList<>();
        for (List<T> items : byLane.values()) {
            long previousColumn = -1;
            for (T item : items) {
                long column = column(timeMicros.applyAsLong(item), columnPx);
                if (column != previousColumn) {
                    columns.add(new ArrayList<>());
                    previousColumn = column;
                }
                columns.get(columns.size() - 1).add(item);
            }
        }
        return columns;
    }

    private long column(long timeMicros, double columnPx) {
        return (long) ((x(timeMicros) - LABEL_WIDTH_PX) / columnPx);
    }

    private static <T> Map<String, List<T>> byLane(List<T> items, Function<T, String> lane) {
        Map<String, List<T>> byLane = new LinkedHashMap<>();
        for (T item : items) {
            byLane.computeIfAbsent(lane.apply(item), ignored -> new ArrayList<>()).add(item);
        }
        return byLane;
    }

    /** Appends an unclosed {@code <rect} from {@code startPx} to {@code endPx}, at least {@code widthMinPx} wide. */
    private static void rect(StringBuilder to, double startPx, double endPx, int topPx, int heightPx,
            double widthMinPx) {
        to.append("<rect x=\"");
        Markup.pixels(to, startPx).append("\" y=\"").append(topPx).append("\" width=\"");
        Markup.pixels(to, Math.max(widthMinPx, endPx - startPx)).append("\" height=\"").append(heightPx)
                .append('"');
    }

    private static void use(StringBuilder to, String symbol, String className, double xPx, int yPx, String title) {
        to.append("<use href=\"#").append(symbol).append('"');
        if (className != null) {
            to.append(" class=\"").append(className).append('"');
        }
        to.append(" x=\"");
        Markup.pixels(to, xPx).append("\" y=\"").append(yPx).append("\"><title>");
        Markup.escape(to, title).append("</title></use>\n");
    }

    private static void text(StringBuilder to, double xPx, int yPx, String attributes, String text) {
        to.append("<text x=\"");
        Markup.pixels(to, xPx).append("\" y=\"").append(yPx).append("\" ").append(attributes).append('>');
        Markup.escape(to, text).append("</text>\n");
    }

    private int laneTop(String lane) {
        Integer index = laneIndexes.get(lane);
        if (index == null) {
            throw new IllegalStateException("no lane for " + lane);
        }
        return lanesTopPx + index * LANE_HEIGHT_PX;
    }

    /** Returns the x of {@code timeMicros} on the picture's clock, clamped to the plot. */
    private double x(long timeMicros) {
        long clamped = Math.max(0, Math.min(scaleMicros, timeMicros));
        return LABEL_WIDTH_PX + clamped * plotWidthPx / scaleMicros;
    }
}

package io.fencer.chaos.report;

import io.fencer.chaos.check.Violation;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a timeline picture shows of one history, before any layout: the lanes, and on them the holds, pauses, down
 * times, write outcomes, faults and violations, with times in microseconds since the history's first event.
 */
final class Timeline {
    /** The harness: its faults are drawn on their targets' lanes, so it has no lane of its own. */
    static final String NEMESIS = "nemesis";
    /** The final read: its violations concern the end state, so they go to the box below the lanes. */
    static final String FINAL = "final";
    /** The longest value or error a hover title shows; a set's value can hold thousands of elements. */
    static final int DETAIL_CHARS_MAX = 160;

    private static final Pattern WORKER = Pattern.compile("w\\d+");

    /** A write's or an add's outcome, in order of severity (the worst one stands for a crowded pixel column). */
    enum Outcome {
        OK, UNKNOWN, REFUSED
    }

    /** A fault or a note drawn as a single mark. */
    enum Fault {
        KILL, RESTART, SESSION_LOST,
        /** A lock peer added, promoted or removed (the removed peer's process is then killed for good). */
        MEMBERSHIP
    }

    /** Something that lasts on one lane: a hold (with its grant's token), a pause, or a down time. */
    record Span(String lane, long startMicros, long endMicros, long token, String title) {
    }

    /** A write's or an add's outcome on a worker's lane. */
    record OutcomeMark(String lane, long timeMicros, Outcome outcome, String title) {
    }

    /** A kill, a restart or a session loss on the lane it hit. */
    record FaultMark(String lane, long timeMicros, Fault fault, String title) {
    }

    final int eventCount;
    final long originMicros;
    /** From the first event to the last; 0 for an empty history or a single instant. */
    final long durationMicros;
    final List<String> lanes;
    final List<Span> holds = new ArrayList<>();
    final List<Span> pauses = new ArrayList<>();
    final List<Span> downs = new ArrayList<>();
    /** Network faults: the time each lane was cut off by a partition or on a flaky link. */
    final List<Span> cuts = new ArrayList<>();
    final List<OutcomeMark> outcomes = new ArrayList<>();
    final List<FaultMark> faults = new ArrayList<>();
    /** Violations drawn at their time on their process's lane, in time order. */
    final List<Violation> laneViolations = new ArrayList<>();
    /** Violations of the final state, at time 0, or of a process without a lane: listed in the box. */
    final List<Violation> boxViolations = new ArrayList<>();

    private final Set<String> laneSet;
    private final Map<String, HistoryEvent> openGrants = new HashMap<>();
    private final Map<String, HistoryEvent> openPauses = new HashMap<>();
    private final Map<String, HistoryEvent> openKills = new HashMap<>();
    private final Map<String, HistoryEvent> openCuts = new HashMap<>();
    private final Map<String, HistoryEvent> pendingInvocations = new HashMap<>();

    private Timeline(List<HistoryEvent> history) {
        eventCount = history.size();
        originMicros = history.isEmpty() ? 0 : history.get(0).timeMicros();
        durationMicros = history.isEmpty() ? 0 : history.get(history.size() - 1).timeMicros() - originMicros;
        lanes = lanes(history);
        laneSet = new HashSet<>(lanes);
    }

    /** Returns the timeline of {@code history} (sorted here by time, stably) with {@code violations} placed. */
    static Timeline of(List<HistoryEvent> history, List<Violation> violations) {
        List<HistoryEvent> sorted = new ArrayList<>(history);
        sorted.sort(Comparator.comparingLong(HistoryEvent::timeMicros));
        Timeline timeline = new Timeline(sorted);
        for (HistoryEvent event : sorted) {
            timeline.add(event);
        }
        timeline.finish();
        timeline.place(violations);
        return timeline;
    }

    /**
     * Returns the lanes of {@code history}: workers ({@code w1} ... {@code wN}, in natural order), then the store,
     * then the lock servers, then any other process, each taken from the processes and the fault targets.
     */
    static List<String> lanes(List<HistoryEvent> history) {
        Set<String> names = new HashSet<>();
        for (HistoryEvent event : history) {
            if (!event.process().equals(NEMESIS) && !event.process().equals(FINAL)) {
                names.add(event.process());
            }
            for (String target : targets(event)) {
                if (!target.equals(NEMESIS) && !target.equals(FINAL)) {
                    names.add(target);
                }
            }
        }
        List<String> lanes = new ArrayList<>(names);
        lanes.sort(Comparator.comparingInt(Timeline::laneGroup).thenComparing(Timeline::compareNaturally));
        return lanes;
    }

    /** Returns the event's targets: a network fault's are comma-separated, every other event has at most one. */
    static List<String> targets(HistoryEvent event) {
        if (event.target().isEmpty()) {
            return List.of();
        }
        boolean network = event.op() == Op.PARTITION || event.op() == Op.HEAL || event.op() == Op.FLAKY;
        return network ? List.of(event.target().split(",")) : List.of(event.target());
    }

    private static int laneGroup(String lane) {
        if (WORKER.matcher(lane).matches()) {
            return 0;
        }
        if (lane.startsWith("store")) {
            return 1;
        }
        return lane.startsWith("lock-") ? 2 : 3;
    }

    /** Compares names with their digit runs as numbers, so {@code w9} comes before {@code w10}. */
    static int compareNaturally(String left, String right) {
        int i = 0;
        int j = 0;
        while (i < left.length() && j < right.length()) {
            int leftEnd = runEnd(left, i);
            int rightEnd = runEnd(right, j);
            String leftRun = left.substring(i, leftEnd);
            String rightRun = right.substring(j, rightEnd);
            int order = Character.isDigit(left.charAt(i)) && Character.isDigit(right.charAt(j))
                    ? compareDigits(leftRun, rightRun) : leftRun.compareTo(rightRun);
            if (order != 0) {
                return order;
            }
            i = leftEnd;
            j = rightEnd;
        }
        int order = Integer.compare(left.length() - i, right.length() - j);
        return order != 0 ? order : left.compareTo(right);
    }

    private static int runEnd(String text, int start) {
        boolean digits = Character.isDigit(text.charAt(start));
        int end = start + 1;
        while (end < text.length() && Character.isDigit(text.charAt(end)) == digits) {
            end++;
        }
        return end;
    }

    private static int compareDigits(String left, String right) {
        String leftDigits = left.replaceFirst("^0+(?=.)", "");
        String rightDigits = right.replaceFirst("^0+(?=.)", "");
        int order = Integer.compare(leftDigits.length(), rightDigits.length());
        return order != 0 ? order : leftDigits.compareTo(rightDigits);
    }

    private void add(HistoryEvent event) {
        switch (event.type()) {
            case INVOKE -> invoke(event);
            case OK, FAIL, UNKNOWN -> complete(event);
            case INFO -> info(event);
            default -> throw new IllegalStateException("unhandled event type " + event.type());
        }
    }

    private void invoke(HistoryEvent event) {
        if (!laneSet.contains(event.process())) {
            return;
        }
        HistoryEvent unanswered = pendingInvocations.put(event.process(), event);
        if (unanswered != null) {
            unanswered(unanswered, "no completion before the process's next invocation");
        }
        if (event.op() == Op.ACQUIRE) {
            closeHold(event.process(), event.timeMicros(), "ends at the next acquire");
        }
    }

    private void complete(HistoryEvent event) {
        if (!laneSet.contains(event.process())) {
            return;
        }
        HistoryEvent completed = withInvocationDetails(event, pendingInvocations.remove(event.process()));
        switch (event.op()) {
            case ACQUIRE -> {
                if (event.type() == Type.OK) {
                    closeHold(event.process(), event.timeMicros(), "ends at a new grant");
                    openGrants.put(event.process(), completed);
                }
            }
            case RELEASE -> closeHold(event.process(), event.timeMicros(),
                    "release " + event.type().name().toLowerCase(Locale.ROOT)
                            + (event.error().isEmpty() ? "" : ": " + detail(event.error())));
            case WRITE, ADD -> outcomes.add(new OutcomeMark(event.process(), sinceOrigin(event.timeMicros()),
                    outcome(event.type()), describe(completed)));
            default -> {
                // Reads and the final read change nothing in the picture; their values are in the history.
            }
        }
    }

    /** Returns {@code completion} with the token and value of its invocation where it carries none. */
    private static HistoryEvent withInvocationDetails(HistoryEvent completion, HistoryEvent invocation) {
        if (invocation == null || invocation.op() != completion.op()) {
            return completion;
        }
        HistoryEvent filled = completion;
        if (filled.token() == 0) {
            filled = filled.withToken(invocation.token());
        }
        if (filled.value().isEmpty() && completion.op() != Op.READ) {
            filled = filled.withValue(invocation.value());
        }
        return filled;
    }

    private static Outcome outcome(Type type) {
        return switch (type) {
            case OK -> Outcome.OK;
            case FAIL -> Outcome.REFUSED;
            default -> Outcome.UNKNOWN;
        };
    }

    private void info(HistoryEvent event) {
        if (event.op() == Op.PARTITION || event.op() == Op.FLAKY || event.op() == Op.HEAL) {
            for (String target : targets(event)) {
                if (event.op() == Op.HEAL) {
                    closeCut(target, event.timeMicros(), "healed");
                } else if (laneSet.contains(target)) {
                    openCuts.putIfAbsent(target, event);
                }
            }
            return;
        }
        String lane = event.target().isEmpty() ? event.process() : event.target();
        if (!laneSet.contains(lane)) {
            return;
        }
        long time = event.timeMicros();
        switch (event.op()) {
            case PAUSE -> openPauses.putIfAbsent(lane, event);
            case RESUME -> closePause(lane, time, "resumed");
            case KILL -> {
                faults.add(new FaultMark(lane, sinceOrigin(time), Fault.KILL, describe(event)));
                closeHold(lane, time, "ends: the worker was killed");
                closePause(lane, time, "killed while paused");
                HistoryEvent unanswered = pendingInvocations.remove(lane);
                if (unanswered != null) {
                    unanswered(unanswered, "no completion: the process was killed");
                }
                openKills.putIfAbsent(lane, event);
            }
            case RESTART -> {
                faults.add(new FaultMark(lane, sinceOrigin(time), Fault.RESTART, describe(event)));
                closeDown(lane, time, "restarted at " + Markup.seconds(sinceOrigin(time)) + " s");
            }
            case SESSION_LOST -> faults.add(new FaultMark(lane, sinceOrigin(time), Fault.SESSION_LOST,
                    describe(event)));
            case ADD_PEER, PROMOTE_PEER, REMOVE_PEER -> faults.add(new FaultMark(lane, sinceOrigin(time),
                    Fault.MEMBERSHIP, describe(event)));
            default -> {
                // Other notes have no mark of their own.
            }
        }
    }

    /** Records a write or an add that never completed as unknown: it may or may not have been applied. */
    private void unanswered(HistoryEvent invocation, String why) {
        if (invocation.op() == Op.WRITE || invocation.op() == Op.ADD) {
            outcomes.add(new OutcomeMark(invocation.process(), sinceOrigin(invocation.timeMicros()),
                    Outcome.UNKNOWN, describe(invocation) + " (" + why + ": unknown)"));
        }
    }

    private void closeHold(String lane, long endMicros, String how) {
        HistoryEvent grant = openGrants.remove(lane);
        if (grant != null) {
            long start = sinceOrigin(grant.timeMicros());
            long end = sinceOrigin(endMicros);
            holds.add(new Span(lane, start, end, grant.token(), lane + " holds token " + grant.token() + " from "
                    + Markup.seconds(start) + " s to " + Markup.seconds(end) + " s (" + how + ")"));
        }
    }

    private void closePause(String lane, long endMicros, String how) {
        HistoryEvent pause = openPauses.remove(lane);
        if (pause != null) {
            long start = sinceOrigin(pause.timeMicros());
            long end = sinceOrigin(endMicros);
            pauses.add(new Span(lane, start, end, 0, lane + " paused (SIGSTOP) from " + Markup.seconds(start)
                    + " s to " + Markup.seconds(end) + " s (" + how + ")"));
        }
    }

    private void closeCut(String lane, long endMicros, String how) {
        HistoryEvent cut = openCuts.remove(lane);
        if (cut != null) {
            long start = sinceOrigin(cut.timeMicros());
            String what = cut.op() == Op.FLAKY ? "on a flaky link (" + cut.value() + ")" : "cut off (" + cut.value()
                    + ")";
            cuts.add(new Span(lane, start, sinceOrigin(endMicros), 0, lane + " " + detail(what) + " from "
                    + Markup.seconds(start) + " s, " + how + " at " + Markup.seconds(sinceOrigin(endMicros)) + " s"));
        }
    }

    private void closeDown(String lane, long endMicros, String how) {
        HistoryEvent kill = openKills.remove(lane);
        if (kill != null) {
            long start = sinceOrigin(kill.timeMicros());
            downs.add(new Span(lane, start, sinceOrigin(endMicros), 0, lane + " down: killed at "
                    + Markup.seconds(start) + " s, " + how));
        }
    }

    /** Ends what the history left open at its last event. */
    private void finish() {
        long endMicros = originMicros + durationMicros;
        for (String lane : lanes) {
            closeHold(lane, endMicros, "still held at the end of the history");
            closePause(lane, endMicros, "not resumed by the end of the history");
            closeDown(lane, endMicros, "not restarted by the end of the history");
            closeCut(lane, endMicros, "not healed by the end of the history");
            HistoryEvent unanswered = pendingInvocations.remove(lane);
            if (unanswered != null) {
                unanswered(unanswered, "no completion by the end of the history");
            }
        }
    }

    private void place(List<Violation> violations) {
        for (Violation violation : violations) {
            boolean onLane = violation.timeMicros() != 0 && !violation.process().equals(FINAL)
                    && laneSet.contains(violation.process());
            (onLane ? laneViolations : boxViolations).add(violation);
        }
        laneViolations.sort(Comparator.comparingLong(Violation::timeMicros));
    }

    /** Returns {@code timeMicros} on the picture's clock, whose 0 is the first event. */
    long sinceOrigin(long timeMicros) {
        return timeMicros - originMicros;
    }

    /** Returns one event as a hover title shows it: its time on the picture's clock and every field it has. */
    String describe(HistoryEvent event) {
        StringBuilder out = new StringBuilder(96);
        out.append(Markup.seconds(sinceOrigin(event.timeMicros()))).append(" s ").append(event.process())
                .append(' ').append(event.type().name().toLowerCase(Locale.ROOT))
                .append(' ').append(event.op().name().toLowerCase(Locale.ROOT));
        if (!event.target().isEmpty()) {
            out.append(" target=").append(detail(event.target()));
        }
        if (event.token() != 0) {
            out.append(" token=").append(event.token());
        }
        if (!event.value().isEmpty()) {
            out.append(" value=").append(detail(event.value()));
        }
        if (event.revision() != 0) {
            out.append(" revision=").append(event.revision());
        }
        if (!event.error().isEmpty()) {
            out.append(" error=").append(detail(event.error()));
        }
        if (!event.reason().isEmpty()) {
            out.append(" reason=").append(detail(event.reason()));
        }
        return out.toString();
    }

    private static String detail(String text) {
        return Markup.truncate(text, DETAIL_CHARS_MAX);
    }
}

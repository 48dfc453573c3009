package io.fencer.chaos.check;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryJson;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code lease-belief} check: no worker's believed hold overlaps another worker's grant, on the host's
 * monotonic clock, which every process of the run shares.
 *
 * <p>A worker's believed hold of a grant runs from the acquire's ok to the first of: its release (the invoke),
 * the moment it learned its session was lost ({@code lease_lost}, {@code session_lost}), its kill, and the latest
 * local lease end its session promised during the hold ({@code lease} events carrying the grant's token). A grant
 * of another worker that begins (its acquire's ok) inside that interval means the service granted the lock while a
 * holder could still, by its own lease, act unfenced: what a deposed leader acknowledging keepalives causes. A
 * grant with no {@code lease} event (a history from before the check, or an answer that came after the worker's
 * own local lease had ended) is a hold of no length: it finds nothing and is found by nothing.
 */
final class LeaseBeliefCheck {
    /** One believed hold: who, under which token, from the grant to the end of the belief. */
    record Hold(String process, long token, long startMicros, long endMicros, String ending) {
    }

    /** A hold still open while the history is read. */
    private static final class Open {
        final String process;
        final long token;
        final long startMicros;
        long believedEndMicros;

        Open(String process, long token, long startMicros) {
            this.process = process;
            this.token = token;
            this.startMicros = startMicros;
            this.believedEndMicros = startMicros;
        }

        Hold close(long atMicros, String why) {
            if (believedEndMicros <= atMicros) {
                return new Hold(process, token, startMicros, believedEndMicros, "its local lease end");
            }
            return new Hold(process, token, startMicros, atMicros, why);
        }
    }

    private LeaseBeliefCheck() {
    }

    /** Returns the believed holds of {@code history} (sorted by time), in the order they began. */
    static List<Hold> holds(List<HistoryEvent> history) {
        Map<String, Open> open = new HashMap<>();
        List<Hold> holds = new ArrayList<>();
        long lastMicros = 0;
        for (HistoryEvent event : history) {
            lastMicros = event.timeMicros();
            String process = event.process();
            if (event.op() == Op.ACQUIRE && event.type() == Type.OK && event.token() != 0) {
                Open previous = open.put(process, new Open(process, event.token(), event.timeMicros()));
                if (previous != null) {
                    holds.add(previous.close(event.timeMicros(), "its next grant"));
                }
            } else if (event.op() == Op.LEASE && event.type() == Type.INFO) {
                Open hold = open.get(process);
                if (hold != null && hold.token == event.token()) {
                    hold.believedEndMicros = Math.max(hold.believedEndMicros, believedEnd(event));
                }
            } else if (event.op() == Op.RELEASE && event.type() == Type.INVOKE) {
                closeIfOpen(open, process, event.timeMicros(), "its release", holds);
            } else if (event.op() == Op.SESSION_LOST || event.op() == Op.LEASE_LOST && lostHeld(open, event)) {
                closeIfOpen(open, process, event.timeMicros(), "learning its session was lost", holds);
            } else if (event.op() == Op.KILL && event.type() == Type.INFO) {
                closeIfOpen(open, event.target(), event.timeMicros(), "its kill", holds);
            }
        }
        for (Open hold : open.values()) {
            holds.add(hold.close(lastMicros, "the end of the history"));
        }
        holds.sort(Comparator.comparingLong(Hold::startMicros));
        return holds;
    }

    /** Whether a {@code lease_lost} is of the session the open hold is held through (it carries the token). */
    private static boolean lostHeld(Map<String, Open> open, HistoryEvent lost) {
        Open hold = open.get(lost.process());
        return hold != null && hold.token == lost.token();
    }

    private static void closeIfOpen(Map<String, Open> open, String process, long atMicros, String why,
            List<Hold> holds) {
        Open hold = open.remove(process);
        if (hold != null) {
            holds.add(hold.close(atMicros, why));
        }
    }

    private static long believedEnd(HistoryEvent event) {
        try {
            return Long.parseLong(event.value());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("lease event without a believed end in microseconds: "
                    + HistoryJson.format(event), e);
        }
    }

    /**
     * Returns one violation per grant that began inside another worker's believed hold (of the holds begun before
     * it, the other worker's believed longest).
     */
    static List<Violation> violations(List<HistoryEvent> history) {
        List<Violation> violations = new ArrayList<>();
        Map<String, Hold> longestByProcess = new HashMap<>();
        for (Hold hold : holds(history)) {
            if (hold.endMicros() <= hold.startMicros()) {
                // its own local lease had ended when the grant's answer came: the worker never believed it held it
                continue;
            }
            Hold longest = null;
            for (Hold other : longestByProcess.values()) {
                if (!other.process().equals(hold.process())
                        && (longest == null || other.endMicros() > longest.endMicros())) {
                    longest = other;
                }
            }
            if (longest != null && longest.endMicros() > hold.startMicros()) {
                violations.add(new Violation(CheckResult.LEASE_BELIEF, hold.startMicros(), longest.process(),
                        longest.token(), longest.process() + " believed it held token " + longest.token() + " from "
                                + Checker.seconds(longest.startMicros()) + " to " + Checker.seconds(longest.endMicros())
                                + " (" + longest.ending() + "), but " + hold.process() + " was granted token "
                                + hold.token() + " at " + Checker.seconds(hold.startMicros()) + " (held to "
                                + Checker.seconds(hold.endMicros()) + ")"));
            }
            longestByProcess.merge(hold.process(), hold,
                    (kept, added) -> added.endMicros() > kept.endMicros() ? added : kept);
        }
        return violations;
    }
}

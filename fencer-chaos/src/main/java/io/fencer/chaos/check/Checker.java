package io.fencer.chaos.check;

import io.fencer.chaos.check.HistoryDigest.Write;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.workload.Workload;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The chaos history checker: reads one recorded history and reports, per check of {@link CheckResult#CHECKS},
 * every place where the store or the lock service broke its promise.
 *
 * <p>Writes (counter) and adds (set) are the operations that matter. An ok one was acknowledged and carries the
 * revision the store gave it; a failed one definitely did not happen; an unknown one, or an invocation left
 * without a completion (its worker was killed), may or may not have happened, so the checks accept both.
 *
 * <p>With fencing, a worker paused past its lease still believes it holds the lock, but its write under the old
 * token is refused once a newer holder wrote: no check fails. Without fencing the same write lands, and the
 * checker reports a token going down in the store's order (a), two increments writing the same value and a final
 * value below the acknowledged increments (c), or an acknowledged element missing from the final set (d).
 */
public final class Checker {
    /** The most missing elements one violation lists. */
    static final int MISSING_ELEMENTS_LISTED_MAX = 10;

    private Checker() {
    }

    /**
     * Returns what the checks found in {@code history}.
     *
     * @param history the merged history, sorted by time
     * @param workload what the workers did
     * @throws IllegalArgumentException naming the event when the history cannot be made sense of (a completion
     *     with no pending invoke, a non-numeric counter value in an ok write or the final read, events out of time
     *     order): a harness bug, not a finding
     */
    public static CheckResult check(List<HistoryEvent> history, Workload workload) {
        Objects.requireNonNull(history, "history");
        Objects.requireNonNull(workload, "workload");
        if (workload == Workload.SEMAPHORE) {
            throw new IllegalArgumentException("a semaphore history is checked with its permit count");
        }
        HistoryDigest digest = HistoryDigest.of(history, workload);
        Map<String, List<Violation>> violationsByCheck = new LinkedHashMap<>();
        violationsByCheck.put(CheckResult.TOKENS_MONOTONIC, tokensMonotonic(digest));
        violationsByCheck.put(CheckResult.ACKNOWLEDGED_SURVIVE, acknowledgedSurvive(digest));
        if (workload == Workload.COUNTER) {
            violationsByCheck.put(CheckResult.NO_LOST_UPDATE, noLostUpdate(digest));
        } else {
            violationsByCheck.put(CheckResult.SET_COMPLETE, setComplete(digest));
        }
        violationsByCheck.put(CheckResult.GRANTS_INCREASE, GrantsCheck.violations(digest.grants,
                digest.regrants, digest.failoversByTime));
        violationsByCheck.put(CheckResult.LEASE_BELIEF, LeaseBeliefCheck.violations(history));

        return CheckResult.of(workload, violationsByCheck, counts(digest));
    }

    private static Map<String, Long> counts(HistoryDigest digest) {
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("grants", digest.grantsAcknowledged);
        counts.put("writes_ok", (long) digest.writesAcknowledged.size());
        counts.put("writes_refused", digest.writesRefused);
        counts.put("writes_stale", digest.writesStale);
        counts.put("writes_unknown", digest.writesUnknown);
        counts.put("pauses", digest.pauses);
        counts.put("kills", digest.kills);
        counts.put("kills_at_end", digest.killsAtEnd);
        counts.put("session_losses", digest.sessionLosses);
        counts.put("failovers", digest.failovers);
        counts.put("store_failovers", digest.storeFailovers);
        counts.put("partitions", digest.partitions);
        counts.put("flaky", digest.flaky);
        counts.put("membership_changes", digest.membershipChanges);
        counts.put("membership_refused", digest.membershipRefused);
        if (digest.workload == Workload.COUNTER) {
            counts.put("final_value", digest.finalValue);
        } else {
            counts.put("final_elements", (long) digest.finalElements.size());
        }
        return counts;
    }

    /**
     * Returns what the checks found in {@code history} of {@code workload}; for the semaphore workload, of a
     * semaphore of {@code permits} permits (see {@link SemaphoreCheck}), which the other workloads ignore.
     *
     * @throws IllegalArgumentException as {@link #check(List, Workload)} does
     */
    public static CheckResult check(List<HistoryEvent> history, Workload workload, int permits) {
        Objects.requireNonNull(history, "history");
        if (workload == Workload.SEMAPHORE) {
            return SemaphoreCheck.check(history, permits);
        }
        return check(history, workload);
    }

    /** (a) In revision order, no acknowledged write carries a token below one of a write with a lower revision. */
    static List<Violation> tokensMonotonic(HistoryDigest digest) {
        List<Write> byRevision = new ArrayList<>(digest.writesAcknowledged);
        byRevision.sort(Comparator.comparingLong(Write::revision));
        List<Violation> violations = new ArrayList<>();
        Write highestBelow = null;
        int groupStart = 0;
        while (groupStart < byRevision.size()) {
            // Writes sharing a revision are compared only with lower revisions; (b) reports the sharing itself.
            long revision = byRevision.get(groupStart).revision();
            int groupEnd = groupStart;
            Write highestThrough = highestBelow;
            while (groupEnd < byRevision.size() && byRevision.get(groupEnd).revision() == revision) {
                Write write = byRevision.get(groupEnd);
                if (highestBelow != null && write.token() < highestBelow.token()) {
                    violations.add(violation(CheckResult.TOKENS_MONOTONIC, write, describe(write) + " applied at"
                            + " revision " + write.revision() + " after a write under token " + highestBelow.token()
                            + " (revision " + highestBelow.revision() + ", by " + highestBelow.process() + ")"));
                }
                if (highestThrough == null || write.token() > highestThrough.token()) {
                    highestThrough = write;
                }
                groupEnd++;
            }
            highestBelow = highestThrough;
            groupStart = groupEnd;
        }
        return violations;
    }

    /** (b) No two acknowledged writes share a revision, and the final read holds every acknowledged write. */
    static List<Violation> acknowledgedSurvive(HistoryDigest digest) {
        List<Violation> violations = new ArrayList<>();
        Map<Long, Write> firstByRevision = new HashMap<>();
        for (Write write : digest.writesAcknowledged) {
            Write first = firstByRevision.putIfAbsent(write.revision(), write);
            if (first != null) {
                violations.add(violation(CheckResult.ACKNOWLEDGED_SURVIVE, write, describe(write)
                        + " acknowledged at revision " + write.revision() + ", as was the " + describe(first)
                        + ": the store lost one"));
            }
        }
        if (digest.finalRead == null) {
            violations.add(noFinalRead(CheckResult.ACKNOWLEDGED_SURVIVE));
        } else if (digest.workload == Workload.COUNTER) {
            for (Write write : digest.writesAcknowledged) {
                if (write.counterValue() > digest.finalValue) {
                    violations.add(violation(CheckResult.ACKNOWLEDGED_SURVIVE, write, "acknowledged "
                            + describe(write) + " (revision " + write.revision() + ") lost: the final value is "
                            + digest.finalValue));
                }
            }
        } else {
            lastSetSurvives(digest, violations);
        }
        return violations;
    }

    /** Set: the final set holds the whole set written by the acknowledged add with the highest revision. */
    private static void lastSetSurvives(HistoryDigest digest, List<Violation> violations) {
        Write last = null;
        for (Write write : digest.writesAcknowledged) {
            if (last == null || write.revision() >= last.revision()) {
                last = write;
            }
        }
        if (last == null) {
            return;
        }
        // Without the worker's read under the same grant, only the added element is known to have been written.
        Set<String> written = HistoryDigest.elements(last.setRead() == null ? "" : last.setRead());
        written.add(last.value());
        List<String> missing = written.stream().filter(element -> !digest.finalElements.contains(element)).toList();
        if (missing.isEmpty()) {
            return;
        }
        String listed = String.join(", ", missing.subList(0, Math.min(missing.size(), MISSING_ELEMENTS_LISTED_MAX)));
        if (missing.size() > MISSING_ELEMENTS_LISTED_MAX) {
            listed += " and " + (missing.size() - MISSING_ELEMENTS_LISTED_MAX) + " more";
        }
        violations.add(violation(CheckResult.ACKNOWLEDGED_SURVIVE, last, "final set lacks " + missing.size()
                + " of the " + written.size() + " elements written by the last acknowledged " + describe(last)
                + " (revision " + last.revision() + "): " + listed));
    }

    /**
     * (c) Counter: no two acknowledged writes wrote the same value, and the final value lies between the
     * acknowledged increments and those plus the unknown ones.
     */
    static List<Violation> noLostUpdate(HistoryDigest digest) {
        List<Violation> violations = new ArrayList<>();
        Map<Long, Write> firstByValue = new HashMap<>();
        for (Write write : digest.writesAcknowledged) {
            Write first = firstByValue.putIfAbsent(write.counterValue(), write);
            if (first != null) {
                violations.add(violation(CheckResult.NO_LOST_UPDATE, write, describe(write) + " (revision "
                        + write.revision() + ") wrote the same value as the acknowledged " + describe(first)
                        + " (revision " + first.revision() + "): one increment was lost"));
            }
        }
        if (digest.finalRead == null) {
            violations.add(noFinalRead(CheckResult.NO_LOST_UPDATE));
            return violations;
        }
        long acknowledged = digest.writesAcknowledged.size();
        long unknown = digest.writesUnknown;
        long finalValue = digest.finalValue;
        if (finalValue < acknowledged) {
            violations.add(new Violation(CheckResult.NO_LOST_UPDATE, 0, "final", 0, "final value " + finalValue
                    + " is below the " + acknowledged + " acknowledged increments: at least "
                    + (acknowledged - finalValue) + " acknowledged " + plural(acknowledged - finalValue, "increment")
                    + " lost"));
        }
        if (finalValue > acknowledged + unknown) {
            violations.add(new Violation(CheckResult.NO_LOST_UPDATE, 0, "final", 0, "final value " + finalValue
                    + " exceeds the " + acknowledged + " acknowledged plus " + unknown + " unknown increments: "
                    + (finalValue - acknowledged - unknown) + " phantom "
                    + plural(finalValue - acknowledged - unknown, "increment")));
        }
        return violations;
    }

    /** (d) Set: every acknowledged element is in the final set. */
    static List<Violation> setComplete(HistoryDigest digest) {
        List<Violation> violations = new ArrayList<>();
        if (digest.finalRead == null) {
            violations.add(noFinalRead(CheckResult.SET_COMPLETE));
            return violations;
        }
        for (Write write : digest.writesAcknowledged) {
            if (!digest.finalElements.contains(write.value())) {
                violations.add(violation(CheckResult.SET_COMPLETE, write, "acknowledged " + describe(write)
                        + " (revision " + write.revision() + ") is missing from the final set"));
            }
        }
        return violations;
    }

    private static Violation noFinalRead(String check) {
        return new Violation(check, 0, "final", 0, "no final read in the history (the harness failed before it):"
                + " acknowledged writes cannot be checked against the final state");
    }

    private static Violation violation(String check, Write write, String description) {
        return new Violation(check, write.timeMicros(), write.process(), write.token(), description);
    }

    /** Returns e.g. {@code "write of 6 by w1 under token 7"} or {@code "add of w1-3 by w1 under token 7"}. */
    private static String describe(Write write) {
        String operation = write.op() == HistoryEvent.Op.ADD ? "add" : "write";
        return operation + " of " + write.value() + " by " + write.process() + " under token " + write.token();
    }

    private static String plural(long count, String noun) {
        return count == 1 ? noun : noun + "s";
    }

    /** Returns {@code micros} as seconds on the history's clock, e.g. {@code "1.520344 s"}. */
    static String seconds(long micros) {
        return String.format(Locale.ROOT, "%d.%06d s", micros / 1_000_000, micros % 1_000_000);
    }
}

package io.fencer.chaos.check;

import io.fencer.chaos.workload.Workload;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What the checker found in one history: violations per check, the violations themselves, and counts of what
 * happened.
 *
 * @param workload the workload checked
 * @param violationsByCheck for every check of {@link #CHECKS} that applies to the workload, in that order: how many
 *     violations it found (0 when it passed)
 * @param violations every violation found, in time order
 * @param counts what happened, by name, in a stable order: {@code grants}, {@code writes_ok} (acknowledged
 *     writes or adds), {@code writes_refused} (definitely not applied: refused as stale, or failed before
 *     sending), {@code writes_stale} (of those, refused as stale: what fencing refused), {@code writes_unknown},
 *     {@code pauses}, {@code kills} (injected as faults), {@code kills_at_end} (workers that had not stopped when the
 *     run ended: no faults), {@code session_losses},
 *     {@code failovers} (kills of a lock server), {@code partitions}, {@code flaky} (network faults),
 *     {@code membership_changes} (lock peers added, promoted and removed), {@code membership_refused} (changes
 *     refused, each retried later), {@code final_value} (counter; semaphore: the sum over the slots) or
 *     {@code final_elements} (set), and for the semaphore {@code slots_used}
 */
public record CheckResult(Workload workload, Map<String, Integer> violationsByCheck, List<Violation> violations,
        Map<String, Long> counts) {

    /** (a) In the store's order of applied writes (revisions), tokens never decrease. */
    public static final String TOKENS_MONOTONIC = "tokens-monotonic";
    /** (b) Every acknowledged write survives to the final read. */
    public static final String ACKNOWLEDGED_SURVIVE = "acknowledged-survive";
    /** (c) Counter: the final value equals the number of applied increments; no two acknowledged writes wrote
     * the same value. */
    public static final String NO_LOST_UPDATE = "no-lost-update";
    /** (d) Set: every acknowledged add is present in the final read. */
    public static final String SET_COMPLETE = "set-complete";
    /**
     * Grants: a grant that begins after another one ended has a higher token, failovers included, and no process is
     * handed a token it had begun to release.
     */
    public static final String GRANTS_INCREASE = "grants-increase";
    /**
     * Leases: no worker's believed hold (from its grant to its release or its local lease end) overlaps another
     * worker's grant, on the host's monotonic clock.
     */
    public static final String LEASE_BELIEF = "lease-belief";
    /**
     * Semaphore: no more than N concurrent acknowledged holders in the store's order: every grant is of one of the N
     * slots, and per slot every acknowledged write's value exceeds that of the acknowledged write before it in revision
     * order (else it read a state older than that write: two holders of the slot at once).
     */
    public static final String PERMITS_BOUNDED = "permits-bounded";
    /** Every check, in report order. */
    public static final List<String> CHECKS = List.of(TOKENS_MONOTONIC, ACKNOWLEDGED_SURVIVE, NO_LOST_UPDATE,
            SET_COMPLETE, GRANTS_INCREASE, LEASE_BELIEF, PERMITS_BOUNDED);

    public CheckResult {
        Objects.requireNonNull(workload, "workload");
        violationsByCheck = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(violationsByCheck));
        violations = List.copyOf(violations);
        counts = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(counts));
    }

    /**
     * Returns the result of the checks that ran: {@code found} holds each check's violations (a check that does
     * not apply to the workload is absent). Checks are reported in {@link #CHECKS} order, violations by time.
     */
    static CheckResult of(Workload workload, Map<String, List<Violation>> found, Map<String, Long> counts) {
        Map<String, Integer> violationCounts = new LinkedHashMap<>();
        List<Violation> violations = new ArrayList<>();
        for (String check : CHECKS) {
            List<Violation> ofCheck = found.get(check);
            if (ofCheck != null) {
                violationCounts.put(check, ofCheck.size());
                violations.addAll(ofCheck);
            }
        }
        // A stable sort keeps the report order of the checks among violations at the same time.
        violations.sort(Comparator.comparingLong(Violation::timeMicros));
        return new CheckResult(workload, violationCounts, violations, counts);
    }

    /** Returns true when no check found a violation. */
    public boolean valid() {
        return violations.isEmpty();
    }

    /** Returns the total number of violations. */
    public int violationCount() {
        return violations.size();
    }
}

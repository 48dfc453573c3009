package io.fencer.chaos.check;

import io.fencer.chaos.check.HistoryDigest.Grant;
import io.fencer.chaos.history.HistoryEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;

/**
 * The grants check: a grant that was asked for after another grant was acknowledged has a higher token (the same
 * token when it is the same process getting its own grant back), failovers of the lock server included; and no
 * process is handed, as a new grant, a token at or below one it had begun to release (its own grant back, but one the
 * service may have ended and passed on meanwhile: a client that took it held nothing).
 *
 * <p>One sweep in O(n log n): grants are taken in the order they were asked for; every grant acknowledged before
 * that moment is folded into the highest token seen and the holders of each token, which is all a later grant is
 * compared against.
 */
final class GrantsCheck {
    private final NavigableMap<Long, HistoryEvent> failoversByTime;
    /** The grant with the highest token among those acknowledged so far, or null. */
    private Grant highest;
    /** For each token acknowledged so far: the first grant of it. */
    private final Map<Long, Grant> firstByToken = new HashMap<>();
    /** For each token acknowledged so far: a grant of it to another process than the first's, when there is one. */
    private final Map<Long, Grant> otherByToken = new HashMap<>();

    private GrantsCheck(NavigableMap<Long, HistoryEvent> failoversByTime) {
        this.failoversByTime = failoversByTime;
    }

    /**
     * Returns one violation per grant whose token is below, or reuses another process's, an earlier grant's, and one
     * per grant of {@code regrants} (a token its process had begun to release) not reported so already.
     */
    static List<Violation> violations(List<Grant> grants, List<Grant> regrants,
            NavigableMap<Long, HistoryEvent> failoversByTime) {
        List<Violation> violations = outOfOrder(grants, failoversByTime);
        for (Grant grant : regrants) {
            boolean reported = violations.stream().anyMatch(violation -> violation.process().equals(grant.process())
                    && violation.timeMicros() == grant.okMicros());
            if (!reported) {
                violations.add(regranted(grant));
            }
        }
        return violations;
    }

    private static List<Violation> outOfOrder(List<Grant> grants, NavigableMap<Long, HistoryEvent> failoversByTime) {
        List<Grant> byInvoke = new ArrayList<>(grants);
        byInvoke.sort(Comparator.comparingLong(Grant::invokeMicros));
        List<Grant> byOk = new ArrayList<>(grants);
        byOk.sort(Comparator.comparingLong(Grant::okMicros));
        GrantsCheck check = new GrantsCheck(failoversByTime);
        List<Violation> violations = new ArrayList<>();
        int endedCount = 0;
        for (Grant later : byInvoke) {
            // Only grants acknowledged strictly before this one was asked for order it; overlapping ones do not.
            while (endedCount < byOk.size() && byOk.get(endedCount).okMicros() < later.invokeMicros()) {
                check.fold(byOk.get(endedCount));
                endedCount++;
            }
            Grant earlier = check.conflicting(later);
            if (earlier != null) {
                violations.add(check.violation(earlier, later));
            }
        }
        return violations;
    }

    private static Violation regranted(Grant grant) {
        return new Violation(CheckResult.GRANTS_INCREASE, grant.okMicros(), grant.process(), grant.token(),
                grant.process() + " was granted token " + grant.token() + " at " + Checker.seconds(grant.okMicros())
                        + " (asked at " + Checker.seconds(grant.invokeMicros()) + "), a grant it had begun to release"
                        + " before: a released grant is never a new one");
    }

    private void fold(Grant grant) {
        if (highest == null || grant.token() > highest.token()) {
            highest = grant;
        }
        Grant first = firstByToken.putIfAbsent(grant.token(), grant);
        if (first != null && !first.process().equals(grant.process())) {
            otherByToken.putIfAbsent(grant.token(), grant);
        }
    }

    private Grant conflicting(Grant later) {
        if (highest != null && highest.token() > later.token()) {
            return highest;
        }
        Grant first = firstByToken.get(later.token());
        if (first == null) {
            return null;
        }
        if (!first.process().equals(later.process())) {
            return first;
        }
        // The first holder is this process; another process holding the same token is still a reuse.
        return otherByToken.get(later.token());
    }

    private Violation violation(Grant earlier, Grant later) {
        String relation = earlier.token() > later.token()
                ? "below token " + earlier.token() + " granted to " + earlier.process()
                : "the token already granted to " + earlier.process();
        Map.Entry<Long, HistoryEvent> failover = failoversByTime.lowerEntry(later.okMicros());
        String when;
        if (failover != null && failover.getKey() > earlier.okMicros()) {
            when = "granted token " + later.token() + " after the failover at " + Checker.seconds(failover.getKey())
                    + " (kill " + failover.getValue().target() + ")";
        } else {
            when = "granted token " + later.token() + " at " + Checker.seconds(later.okMicros());
        }
        String description = later.process() + " " + when + ", " + relation + " at "
                + Checker.seconds(earlier.okMicros()) + ", before " + later.process() + " asked at "
                + Checker.seconds(later.invokeMicros());
        return new Violation(CheckResult.GRANTS_INCREASE, later.okMicros(), later.process(), later.token(),
                description);
    }
}

package io.fencer.chaos.check;

import io.fencer.chaos.check.HistoryDigest.Write;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.workload.Workload;
import io.fencer.core.internal.PermitSlots;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The checks of the semaphore workload: a semaphore of N permits is N locks (its slots), so the history is split
 * per slot (by the slot each grant, read, write, release, lease event and final read names as its target; faults
 * belong to every slot) and each slot is checked as the counter workload's lock: tokens monotonic, acknowledged
 * writes surviving, no lost update, grants increasing and the lease belief, each violation naming its slot.
 *
 * <p>On top, {@code permits-bounded}: no more than N concurrent acknowledged holders, in the store's order. A
 * holder is a grant with an acknowledged write; its interval in the store's order runs from the state it read to
 * its write. With at most one holder per slot and at most N slots there are at most N holders at any point, so the
 * check is: (1) every grant and every acknowledged write names one of the N slots {@code S/permit-0} …
 * {@code S/permit-<N-1>}; (2) per slot, in revision order, every acknowledged write's value exceeds the value of
 * the acknowledged write just before it (of another grant). A write of value v read v − 1; if the write before it
 * wrote u ≥ v, it read a state older than that write, so both grants held the slot at once in the store's order:
 * one more holder than the slot admits (N + 1 holders of the semaphore). Conversely, if grant B read before grant
 * A's earlier write was applied, B's value is at most A's, so some consecutive pair from A to B does not rise:
 * every overlap is found, and comparing neighbours (not the highest value so far) reports a rolled-back counter
 * once rather than for every write after it. Values may rise by more than 1 between acknowledged writes when an
 * unknown write landed in between; the final-value bounds of {@code no-lost-update} account for those.
 */
final class SemaphoreCheck {
    /** The operations whose target is the slot they ran on; every other event is a fault shared by all slots. */
    private static final Set<Op> SLOTTED = EnumSet.of(Op.ACQUIRE, Op.RELEASE, Op.READ, Op.WRITE, Op.ADD, Op.LEASE,
            Op.LEASE_LOST, Op.FINAL_READ);

    private SemaphoreCheck() {
    }

    /** Returns what the checks found in a semaphore workload's {@code history} of a semaphore of {@code permits}. */
    static CheckResult check(List<HistoryEvent> history, int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits " + permits + " is below 1");
        }
        Map<String, List<HistoryEvent>> bySlot = split(history);
        Map<String, List<Violation>> violationsByCheck = new LinkedHashMap<>();
        for (String check : List.of(CheckResult.TOKENS_MONOTONIC, CheckResult.ACKNOWLEDGED_SURVIVE,
                CheckResult.NO_LOST_UPDATE, CheckResult.GRANTS_INCREASE, CheckResult.LEASE_BELIEF,
                CheckResult.PERMITS_BOUNDED)) {
            violationsByCheck.put(check, new ArrayList<>());
        }
        Map<String, Long> counts = sharedCounts(history);
        long finalValue = 0;
        long slotsUsed = 0;
        for (Map.Entry<String, List<HistoryEvent>> entry : bySlot.entrySet()) {
            String slot = entry.getKey();
            HistoryDigest digest = HistoryDigest.of(entry.getValue(), Workload.COUNTER);
            add(violationsByCheck, CheckResult.TOKENS_MONOTONIC, slot, Checker.tokensMonotonic(digest));
            add(violationsByCheck, CheckResult.ACKNOWLEDGED_SURVIVE, slot, Checker.acknowledgedSurvive(digest));
            add(violationsByCheck, CheckResult.NO_LOST_UPDATE, slot, Checker.noLostUpdate(digest));
            add(violationsByCheck, CheckResult.GRANTS_INCREASE, slot,
                    GrantsCheck.violations(digest.grants, digest.regrants, digest.failoversByTime));
            add(violationsByCheck, CheckResult.LEASE_BELIEF, slot, LeaseBeliefCheck.violations(entry.getValue()));
            violationsByCheck.get(CheckResult.PERMITS_BOUNDED).addAll(permitsBounded(slot, digest, permits));
            counts.merge("grants", digest.grantsAcknowledged, Long::sum);
            counts.merge("writes_ok", (long) digest.writesAcknowledged.size(), Long::sum);
            counts.merge("writes_refused", digest.writesRefused, Long::sum);
            counts.merge("writes_stale", digest.writesStale, Long::sum);
            counts.merge("writes_unknown", digest.writesUnknown, Long::sum);
            finalValue += digest.finalValue;
            slotsUsed += digest.grantsAcknowledged > 0 ? 1 : 0;
        }
        counts.put("final_value", finalValue);
        counts.put("slots_used", slotsUsed);
        return CheckResult.of(Workload.SEMAPHORE, violationsByCheck, counts);
    }

    /**
     * Splits {@code history} per slot, each slot's events in time order with every shared fault. An acquire's
     * invocation names no slot (the grant chooses it): it goes to the slot of its ok; an acquire that was refused
     * or left without an answer held nothing and is left out.
     *
     * @throws IllegalArgumentException naming the event when a worker's read, write or release names no slot
     */
    static Map<String, List<HistoryEvent>> split(List<HistoryEvent> history) {
        List<HistoryEvent> shared = new ArrayList<>();
        Map<String, List<HistoryEvent>> slotted = new TreeMap<>();
        Map<String, HistoryEvent> acquiring = new HashMap<>();
        // A completion the harness writes for a killed worker ("worker killed before the outcome") names no slot:
        // it belongs to that worker's last invocation, so it takes that invocation's slot.
        Map<String, String> invokedSlot = new HashMap<>();
        for (HistoryEvent event : history) {
            if (!SLOTTED.contains(event.op())) {
                shared.add(event);
                continue;
            }
            if (event.op() == Op.ACQUIRE) {
                if (event.type() == Type.INVOKE) {
                    acquiring.put(event.process(), event);
                    continue;
                }
                HistoryEvent invoke = acquiring.remove(event.process());
                if (event.type() != Type.OK || event.target().isEmpty()) {
                    continue;
                }
                if (invoke == null) {
                    throw new IllegalArgumentException("grant with no pending acquire: " + HistoryJson.format(event));
                }
                slotted.computeIfAbsent(event.target(), slot -> new ArrayList<>()).add(invoke);
            } else if (event.type() == Type.INVOKE) {
                acquiring.remove(event.process()); // the acquire before it was left without an answer
            }
            if (event.type() == Type.INVOKE && !event.target().isEmpty()) {
                invokedSlot.put(event.process(), event.target());
            } else if (event.type() != Type.INVOKE && event.target().isEmpty()
                    && invokedSlot.containsKey(event.process())) {
                event = event.withTarget(invokedSlot.get(event.process()));
            }
            if (event.target().isEmpty()) {
                if (event.op() == Op.LEASE_LOST) {
                    shared.add(event); // a lost session that held nothing
                    continue;
                }
                throw new IllegalArgumentException("semaphore event without its slot: " + HistoryJson.format(event));
            }
            slotted.computeIfAbsent(event.target(), slot -> new ArrayList<>()).add(event);
        }
        Map<String, List<HistoryEvent>> bySlot = new LinkedHashMap<>();
        for (Map.Entry<String, List<HistoryEvent>> entry : slotted.entrySet()) {
            List<HistoryEvent> events = new ArrayList<>(entry.getValue());
            events.addAll(shared);
            events.sort(Comparator.comparingLong(HistoryEvent::timeMicros)); // stable: each part is in time order
            bySlot.put(entry.getKey(), events);
        }
        return bySlot;
    }

    /** Returns the slot's violations of {@code permits-bounded}: a slot beyond the N, two holders of it at once. */
    static List<Violation> permitsBounded(String slot, HistoryDigest digest, int permits) {
        List<Violation> violations = new ArrayList<>();
        PermitSlots.Slot parsed = PermitSlots.parse(slot);
        if (parsed == null || parsed.permit() >= permits) {
            for (HistoryDigest.Grant grant : digest.grants) {
                violations.add(new Violation(CheckResult.PERMITS_BOUNDED, grant.okMicros(), grant.process(),
                        grant.token(), grant.process() + " was granted " + slot + " under token " + grant.token()
                                + ", not one of the " + permits + " slots permit-0 to permit-" + (permits - 1)
                                + ": more than " + permits + " holders"));
            }
        }
        List<Write> byRevision = new ArrayList<>(digest.writesAcknowledged);
        byRevision.sort(Comparator.comparingLong(Write::revision));
        Write previous = null;
        for (Write write : byRevision) {
            boolean sameGrant = previous != null && previous.token() == write.token()
                    && previous.process().equals(write.process());
            if (previous != null && !sameGrant && write.counterValue() <= previous.counterValue()) {
                violations.add(new Violation(CheckResult.PERMITS_BOUNDED, write.timeMicros(), write.process(),
                        write.token(), slot + ": " + write.process() + "'s write of " + write.counterValue()
                                + " under token " + write.token() + " (revision " + write.revision() + ") read "
                                + (write.counterValue() - 1) + ", older than " + previous.process() + "'s write of "
                                + previous.counterValue() + " under token " + previous.token() + " (revision "
                                + previous.revision() + "): two holders of the slot at once, more than " + permits
                                + " holders of the semaphore"));
            }
            previous = write;
        }
        return violations;
    }

    private static void add(Map<String, List<Violation>> violationsByCheck, String check, String slot,
            List<Violation> found) {
        for (Violation violation : found) {
            violationsByCheck.get(check).add(new Violation(violation.check(), violation.timeMicros(),
                    violation.process(), violation.token(), slot + ": " + violation.description()));
        }
    }

    /** Returns the counts of the faults, which every slot shares, in the report's order. */
    private static Map<String, Long> sharedCounts(List<HistoryEvent> history) {
        List<HistoryEvent> faults = history.stream().filter(event -> !SLOTTED.contains(event.op())
                && event.type() == Type.INFO).toList();
        HistoryDigest digest = HistoryDigest.of(faults, Workload.COUNTER);
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("grants", 0L);
        counts.put("writes_ok", 0L);
        counts.put("writes_refused", 0L);
        counts.put("writes_stale", 0L);
        counts.put("writes_unknown", 0L);
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
        return counts;
    }
}

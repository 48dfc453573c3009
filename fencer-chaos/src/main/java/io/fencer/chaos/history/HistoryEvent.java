package io.fencer.chaos.history;

import java.util.Objects;

/**
 * One line of a chaos history: an operation's invocation or completion by one process, or a fault the harness
 * injected. A process runs one operation at a time, so a completion belongs to the same process's last invocation.
 *
 * @param timeMicros monotonic time since the run's origin, in microseconds; the processes share one host's
 *     monotonic clock ({@code System.nanoTime()} is CLOCK_MONOTONIC on Linux), so times of different processes
 *     compare
 * @param process who: a worker ({@code w1} ... {@code wN}), the harness ({@code nemesis}) or the final read
 *     ({@code final})
 * @param type invoke, ok, fail (definitely did not happen), unknown (may or may not have happened), or info
 *     (a fault or a note, with no completion)
 * @param op what: see {@link Op}
 * @param token the grant's token value the operation ran under ({@code 0} when none)
 * @param value the operation's value: the counter value written or read, the set element added, the set read
 *     (elements joined by commas); empty when none
 * @param revision for an ok write: the scope's revision the store gave it (its place in the store's order of
 *     applied writes); else 0
 * @param target for faults: the process hit ({@code w3}, {@code store}, {@code lock-n1}); for the semaphore
 *     workload's grants, reads, writes, releases, lease events and final reads: the slot's lock name
 *     ({@code chaos/permit-1}, the store scope written); else empty
 * @param error for fail and unknown: why, the error's message (for people: its wording may change); else empty
 * @param reason for fail and unknown: the error catalogue's reason for the error, as {@code ErrorReason} names it
 *     ({@code STALE_TOKEN}), which is what the checker judges by; empty when the error is none of the catalogue's
 *     (a transport failure, a kill), or the line was written before reasons were recorded
 */
public record HistoryEvent(long timeMicros, String process, Type type, Op op, long token, String value,
        long revision, String target, String error, String reason) {

    /**
     * The value of a {@link Op#KILL} whose target led the lock group while the workload's store was the group's
     * replicated store: a failover of the store's leader.
     */
    public static final String STORE_LEADER = "store-leader";

    /**
     * The value of a {@link Op#KILL} of a worker the harness killed because it had not stopped when the run ended:
     * no fault was injected, so a run's kills leave it out. Histories written before this mark have none, and
     * their kills at the end of a run read as faults.
     */
    public static final String END_OF_RUN = "end-of-run";

    /** What kind of line this is. */
    public enum Type {
        INVOKE, OK, FAIL, UNKNOWN, INFO
    }

    /** The operations and faults of a history. */
    public enum Op {
        /** A worker asks for the lock; ok carries the grant's token. */
        ACQUIRE,
        /** A worker releases its grant. */
        RELEASE,
        /** A worker reads the counter or the set (under its token when fenced). */
        READ,
        /** Counter workload: writes {@code value} = the value read + 1. */
        WRITE,
        /** Set workload: adds the unique element {@code value}. */
        ADD,
        /** The harness reads the final state after every process stopped. */
        FINAL_READ,
        /** Fault: SIGSTOP of {@code target}. */
        PAUSE,
        /** Fault ends: SIGCONT of {@code target}. */
        RESUME,
        /**
         * Fault: SIGKILL of {@code target}; {@code value} is {@link HistoryEvent#STORE_LEADER} when the target led
         * the lock group whose replicated store was the workload's store, and {@link HistoryEvent#END_OF_RUN} when
         * it was no fault but a worker that had not stopped when the run ended.
         */
        KILL,
        /** {@code target} is started again after a kill. */
        RESTART,
        /** A worker's session was lost (expired, or unreachable for a whole ttl); it opens a new one. */
        SESSION_LOST,
        /**
         * Fault: the network is cut; {@code target} names the cut-off processes, comma-separated, and
         * {@code value} says what was cut from what.
         */
        PARTITION,
        /** Fault ends: every cut of the last partition, or the flaky link of {@code target}, is healed. */
        HEAL,
        /** Fault: what {@code target} sends is delayed and partly lost ({@code value} says how much). */
        FLAKY,
        /**
         * A worker's belief while it holds a grant: {@code value} is the end of its session's local lease, in
         * microseconds since the origin (the time of the event plus {@code Session.leaseRemaining()}), recorded
         * whenever it moves; {@code token} is the grant's.
         */
        LEASE,
        /** A worker learned its session is lost ({@code Session.lost()} completed); its belief ends here. */
        LEASE_LOST,
        /** Membership: the spare peer {@code target} was added to the lock group as a learner. */
        ADD_PEER,
        /** Membership: the learner {@code target} was made a voter. */
        PROMOTE_PEER,
        /**
         * Membership: the peer {@code target} was removed from the lock group (its process then SIGKILLed for
         * good); {@code value} says whether it was the leader.
         */
        REMOVE_PEER,
        /**
         * Membership: a change of {@code target} was refused and changed nothing ({@code value} names it,
         * {@code error} says why); it is retried later.
         */
        MEMBERSHIP_REFUSED,
        /**
         * Fault: the clock of {@code target} (a lock peer or a worker) went wrong; {@code value} says how (its rate
         * and its jump), for the rest of the run.
         */
        CLOCK
    }

    public HistoryEvent {
        Objects.requireNonNull(process, "process");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        value = value == null ? "" : value;
        target = target == null ? "" : target;
        error = error == null ? "" : error;
        reason = reason == null ? "" : reason;
        if (timeMicros < 0 || token < 0 || revision < 0) {
            throw new IllegalArgumentException("negative time " + timeMicros + ", token " + token + " or revision "
                    + revision + " in " + process + " " + type + " " + op);
        }
    }

    /** Returns an event with only the fields every line has. */
    public static HistoryEvent of(long timeMicros, String process, Type type, Op op) {
        return new HistoryEvent(timeMicros, process, type, op, 0, "", 0, "", "", "");
    }

    /** Returns a copy with {@code token}. */
    public HistoryEvent withToken(long newToken) {
        return new HistoryEvent(timeMicros, process, type, op, newToken, value, revision, target, error, reason);
    }

    /** Returns a copy with {@code value}. */
    public HistoryEvent withValue(String newValue) {
        return new HistoryEvent(timeMicros, process, type, op, token, newValue, revision, target, error, reason);
    }

    /** Returns a copy with {@code revision}. */
    public HistoryEvent withRevision(long newRevision) {
        return new HistoryEvent(timeMicros, process, type, op, token, value, newRevision, target, error, reason);
    }

    /** Returns a copy with {@code target}. */
    public HistoryEvent withTarget(String newTarget) {
        return new HistoryEvent(timeMicros, process, type, op, token, value, revision, newTarget, error, reason);
    }

    /** Returns a copy with {@code error}. */
    public HistoryEvent withError(String newError) {
        return new HistoryEvent(timeMicros, process, type, op, token, value, revision, target, newError, reason);
    }

    /** Returns a copy with {@code reason}. */
    public HistoryEvent withReason(String newReason) {
        return new HistoryEvent(timeMicros, process, type, op, token, value, revision, target, error, newReason);
    }
}

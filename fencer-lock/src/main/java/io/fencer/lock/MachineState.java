package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.SessionUnauthenticatedException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The whole state of a {@link LockStateMachine}, shared by its parts: the apply steps of each primitive
 * ({@link SessionApply}, {@link LockApply}, {@link SemaphoreApply}, {@link MultiLockApply}, and {@link Handoff} for
 * what a freed lock passes to), {@link LockInvariants} and {@link SnapshotCodec}. Besides the fields it keeps the few
 * steps every primitive takes on them alike: issuing a token (the token rule lives here, beside the floor), ending a
 * grant, dropping an idle record, and refusing a command whose secret is not its session's.
 *
 * <p>The fields are package-private on purpose: this is a holder, not an abstraction, and each part reads and
 * changes the maps directly as the one-class machine did. Not thread-safe, as the machine.
 */
final class MachineState {
    /** Sessions by id; a sorted map so that {@link LockStateMachine#sessions()} and snapshots come in id order. */
    final TreeMap<Long, SessionRecord> sessions = new TreeMap<>();
    /** Live sessions by their non-empty opening request id; only looked up, never iterated. */
    final Map<String, Long> sessionIdsByRequestId = new HashMap<>();
    /** Lock records by name; a sorted map so that listings and snapshots come in name order. */
    final TreeMap<String, LockRecord> locks = new TreeMap<>();
    /** Semaphores in use (a slot held or delayed, or a session waiting), by name. */
    final TreeMap<String, SemaphoreRecord> semaphores = new TreeMap<>();
    /** Names of the locks in lock-delay. */
    final TreeSet<String> delayed = new TreeSet<>();
    /** What each quota identity's sessions hold: derived, rebuilt when a snapshot is read, never written. */
    final UsageIndex usage = new UsageIndex();
    final Limits limits;
    /** The last session id handed out; ids are never reused. */
    long sessionIdLast;
    /**
     * The highest last token of every dropped lock record, or the floor a {@link Command.RaiseFloor} lifted it to:
     * every new grant exceeds it.
     */
    long floor;
    /** The total number of queued waits over all locks and semaphores. */
    int waiterCount;
    /**
     * The group's format level ({@link LockStateMachine#FORMAT_LEVEL}): which commands and snapshot layouts it uses.
     * Raised through the log only, so every replica changes it at the same entry.
     */
    int formatLevel = LockStateMachine.FORMAT_LEVEL_PREVIOUS;
    /** The token generation this group grants in ({@link FencingToken#generationOf}); 0 until a restore. */
    int generation;

    MachineState(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    /**
     * Returns the refusal of a command for {@code session} that presented {@code presented}, or null when it is the
     * session's secret hash.
     */
    static Result.Rejected refusal(SessionRecord session, SecretHash presented) {
        if (presented == SecretHash.NOT_CARRIED) {
            return null; // a version-1 log entry, accepted before session secrets: applied as then (CommandCodec)
        }
        if (session.secretHash.matches(presented)) {
            return null;
        }
        return new Result.Rejected(new SessionUnauthenticatedException(session.id));
    }

    /**
     * Returns the highest token value this group may grant: the end of its generation from format level 5 on, and at
     * the previous level {@link FencingToken#VALUE_MAX}, as that release did, so that replicas of both releases in one
     * group decide every grant alike.
     */
    long tokenCeiling() {
        return formatLevel >= LockStateMachine.FORMAT_LEVEL_GENERATIONS ? FencingToken.generationLast(generation)
                : FencingToken.VALUE_MAX;
    }

    /**
     * Returns the highest token value issued so far: every lock's last token (a semaphore's slots are locks) and the
     * floor, which holds those of dropped records. Linear in the locks.
     */
    long highestToken() {
        long highest = floor;
        for (LockRecord record : locks.values()) {
            highest = Math.max(highest, record.lastToken);
        }
        return highest;
    }

    /**
     * Lifts the floor above every token issued so far plus {@code gap} ({@link Command.RaiseFloor}), at most to the
     * token ceiling, so that a lock whose next token would pass it refuses grants as at exhaustion; never lowers it
     * (a floor already past the ceiling, which only a corrupt state has, stays). Refused, changing nothing, below
     * format level {@link LockStateMachine#FORMAT_LEVEL_RAISE_FLOOR}. Linear in the locks: a rare command.
     */
    Result raiseFloor(int gap) {
        if (formatLevel < LockStateMachine.FORMAT_LEVEL_RAISE_FLOOR) {
            return new Result.Rejected(new InvalidArgumentException("format_level", Integer.toString(formatLevel),
                    "cannot raise the floor by " + gap + ": the group is at format level " + formatLevel
                            + " and raising the floor needs " + LockStateMachine.FORMAT_LEVEL_RAISE_FLOOR + " (a peer"
                            + " of the previous release may still run; the leader raises the level once every peer"
                            + " reads it)"));
        }
        long ceiling = tokenCeiling();
        long highest = highestToken();
        // highest <= ceiling but for a corrupt state; computed so that no sum overflows whatever the gap.
        long raised = gap >= ceiling - highest ? ceiling : highest + gap;
        floor = Math.max(floor, raised);
        return new Result.FloorRaised(floor);
    }

    Result.Rejected locksPerSessionExceeded(SessionRecord session) {
        return new Result.Rejected(new LimitExceededException("locksPerSessionMax", limits.locksPerSessionMax(),
                "session " + session.id + " holds or waits for " + session.lockCount()
                        + " locks, locksPerSessionMax is " + limits.locksPerSessionMax()));
    }

    /**
     * Grants {@code record} to {@code session} in {@code mode} under the next token; the caller checked it is not
     * exhausted and that the mode is compatible with the holders.
     */
    FencingToken issue(LockRecord record, SessionRecord session, String requestId, LockMode mode,
            List<Event> events) {
        assert !record.held() : "lock " + record.name + " granted while held by session " + record.holderSessionId;
        assert mode == LockMode.SHARED || record.sharedHolders.isEmpty()
                : "lock " + record.name + " granted exclusively while " + record.sharedHolders.size() + " share it";
        long value = Math.max(record.lastToken, floor) + 1;
        assert value > record.lastToken
                : String.format(Locale.ROOT, "token %d <= lastToken %d for lock %s", value, record.lastToken, record.name);
        assert value > floor : String.format(Locale.ROOT, "token %d <= floor %d for lock %s", value, floor, record.name);
        assert value <= FencingToken.VALUE_MAX : String.format(Locale.ROOT, "token %d > max for lock %s", value, record.name);
        record.lastToken = value;
        if (mode == LockMode.EXCLUSIVE) {
            record.holderSessionId = session.id;
            record.holderTokenValue = value;
        } else {
            record.sharedHolders.put(session.id, value);
        }
        boolean added = session.addHeld(record.name);
        assert added : "session " + session.id + " already listed lock " + record.name + " as held";
        FencingToken token = FencingToken.of(record.lockName, value, mode);
        events.add(new Event.Granted(session.id, requestId, token, session.identity,
                record.semaphore == null ? null : record.semaphore.name));
        return token;
    }

    /** Ends the grant of {@code record} that {@code sessionId} holds, in either mode; returns the ended token. */
    FencingToken endGrant(LockRecord record, long sessionId, EndCause cause, List<Event> events) {
        FencingToken token = record.tokenOf(sessionId);
        assert token != null : "session " + sessionId + " holds no grant of lock " + record.name;
        SessionRecord holder = sessions.get(sessionId);
        boolean listed = holder.removeHeld(record.name);
        assert listed : "session " + holder.id + " did not list held lock " + record.name;
        if (token.mode() == LockMode.EXCLUSIVE) {
            record.holderSessionId = 0;
            record.holderTokenValue = FencingToken.NONE;
        } else {
            record.sharedHolders.remove(sessionId);
        }
        record.lastEnd = cause;
        events.add(new Event.GrantEnded(token, holder.id, cause));
        return token;
    }

    /** Drops an idle record, folding its counter into the floor so that a recreated lock starts above it. */
    void dropIfIdle(LockRecord record) {
        if (record.idle()) {
            locks.remove(record.name);
            floor = Math.max(floor, record.lastToken);
        }
    }

    /** Drops a semaphore that no slot record and no waiter keeps; linear in its permits. */
    void dropIfIdle(SemaphoreRecord semaphore) {
        if (semaphore.waiters.isEmpty() && freeSlotCount(semaphore) == semaphore.permits) {
            semaphores.remove(semaphore.name);
        }
    }

    /** The slots of {@code semaphore} without a record (neither held nor delayed); linear in its permits. */
    int freeSlotCount(SemaphoreRecord semaphore) {
        int free = 0;
        for (int permit = 0; permit < semaphore.permits; permit++) {
            free += locks.containsKey(semaphore.slot(permit)) ? 0 : 1;
        }
        return free;
    }

    /** Returns the permit {@code sessionId} holds of {@code semaphore}, or null. Linear in its permits. */
    FencingToken permitOf(SemaphoreRecord semaphore, long sessionId) {
        for (int permit = 0; permit < semaphore.permits; permit++) {
            LockRecord slot = locks.get(semaphore.slot(permit));
            if (slot != null && slot.holderSessionId == sessionId) {
                return slot.holderToken();
            }
        }
        return null;
    }

    /**
     * True when a multi-lock wait is first in line at every one of its locks and all of them are free and below the
     * token ceiling.
     */
    boolean groupGrantable(long sessionId, LockRecord.Waiter waiter) {
        long ceiling = tokenCeiling();
        for (String name : waiter.group()) {
            LockRecord record = locks.get(name);
            if (record.hasHolder() || record.delayed || record.waiters.keySet().iterator().next() != sessionId
                    || Math.max(record.lastToken, floor) >= ceiling) {
                return false;
            }
        }
        return true;
    }
}

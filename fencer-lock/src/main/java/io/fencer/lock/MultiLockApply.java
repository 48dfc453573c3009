package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.TokenExhaustedException;
import java.util.ArrayList;
import java.util.List;

/**
 * The apply steps of multi-locks: all of a list of locks, exclusively, in one step or not at all. A multi-lock that
 * cannot have them all now queues one wait, the same {@link LockRecord.Waiter}, on every one of its locks; it is
 * granted as a unit by {@link Handoff} when it is first in line at each and each is free, and leaves as a unit.
 */
final class MultiLockApply {
    private final MachineState state;
    private final Handoff handoff;
    private final SemaphoreApply semaphores;

    MultiLockApply(MachineState state, Handoff handoff, SemaphoreApply semaphores) {
        this.state = state;
        this.handoff = handoff;
        this.semaphores = semaphores;
    }

    Result acquireAll(Command.AcquireAll acquire, List<Event> events) {
        SessionRecord session = state.sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = MachineState.refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        Result again = acquireAllAgain(session, acquire);
        if (again != null) {
            return again;
        }
        boolean free = true;
        for (String name : acquire.locks()) {
            Result.Rejected reserved = semaphores.reservedName(name);
            if (reserved != null) {
                return reserved;
            }
            LockRecord record = state.locks.get(name);
            free &= record == null || record.grantableNow(LockMode.EXCLUSIVE);
        }
        Result.Rejected bounded = checkAllLimits(session, acquire, free || acquire.waitQueued());
        if (bounded != null) {
            return bounded;
        }
        if (free) {
            List<FencingToken> tokens = new ArrayList<>(acquire.lockNames().size());
            for (LockName name : acquire.lockNames()) {
                tokens.add(state.issue(recordFor(name), session, acquire.requestId(), LockMode.EXCLUSIVE, events));
            }
            return new Result.GrantedAll(tokens);
        }
        if (!acquire.waitQueued()) {
            return busyOfAll(acquire);
        }
        return enqueueAll(session, acquire, events);
    }

    /** Queues one multi-lock wait on every lock it names; returns its place at the first. */
    private Result enqueueAll(SessionRecord session, Command.AcquireAll acquire, List<Event> events) {
        LockRecord.Waiter waiter = new LockRecord.Waiter(acquire.requestId(), LockMode.EXCLUSIVE, acquire.locks());
        for (LockName name : acquire.lockNames()) {
            recordFor(name).waiters.put(session.id, waiter);
            session.addWaiting(name.value());
            state.waiterCount++;
            events.add(new Event.Queued(session.id, name.value(), acquire.requestId()));
        }
        String first = acquire.locks().get(0);
        return new Result.Queued(first, state.locks.get(first).positionOf(session.id));
    }

    /**
     * Answers a multi-lock by a session that holds or waits for some of its locks: its grants again when it holds
     * all of them exclusively, its place when this very multi-lock waits; any other overlap is refused (a session
     * holds or waits for a lock once). Returns null when the session neither holds nor waits for any of them.
     */
    private Result acquireAllAgain(SessionRecord session, Command.AcquireAll acquire) {
        List<FencingToken> held = new ArrayList<>();
        int waiting = 0;
        for (String name : acquire.locks()) {
            LockRecord record = state.locks.get(name);
            FencingToken token = record == null ? null : record.tokenOf(session.id);
            LockRecord.Waiter waiter = record == null ? null : record.waiters.get(session.id);
            if (token != null && token.mode() == LockMode.EXCLUSIVE) {
                held.add(token);
            } else if (waiter != null && acquire.locks().equals(waiter.group())) {
                waiting++;
            } else if (token != null || waiter != null) {
                return overlap(session, name);
            }
        }
        if (held.size() == acquire.locks().size()) {
            return new Result.GrantedAll(held);
        }
        if (waiting == acquire.locks().size()) {
            String first = acquire.locks().get(0);
            return new Result.Queued(first, state.locks.get(first).positionOf(session.id));
        }
        return held.isEmpty() && waiting == 0 ? null : overlap(session, acquire.locks().get(0));
    }

    private static Result.Rejected overlap(SessionRecord session, String lock) {
        return new Result.Rejected(new InvalidArgumentException("locks", lock, "session " + session.id
                + " already holds or waits for lock '" + InvalidArgumentException.printable(lock) + "' otherwise than"
                + " through this multi-lock: release it or let that wait end first"));
    }

    /** Refuses a multi-lock that would pass a bound: locks per session, lock records, waiters, exhausted tokens. */
    private Result.Rejected checkAllLimits(SessionRecord session, Command.AcquireAll acquire, boolean taking) {
        Limits limits = state.limits;
        int count = acquire.locks().size();
        if (taking && session.lockCount() + count > limits.locksPerSessionMax()) {
            return state.locksPerSessionExceeded(session);
        }
        int created = 0;
        for (String name : acquire.locks()) {
            LockRecord record = state.locks.get(name);
            created += record == null ? 1 : 0;
            if (record != null && record.waiters.size() >= limits.waitersPerLockMax()) {
                return new Result.Rejected(new LimitExceededException("waitersPerLockMax",
                        limits.waitersPerLockMax(), "cannot queue on lock '" + name + "': " + record.waiters.size()
                                + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
            }
            long base = record == null ? state.floor : Math.max(record.lastToken, state.floor);
            if (base >= state.tokenCeiling()) {
                return new Result.Rejected(new TokenExhaustedException(name, base));
            }
        }
        if (taking && state.locks.size() + created > limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(), "cannot create "
                    + created + " locks for a multi-lock: " + state.locks.size() + " locks exist, locksMax is "
                    + limits.locksMax()));
        }
        return null;
    }

    /** Returns the record of {@code name}, made (empty, above the floor) when it has none. */
    private LockRecord recordFor(LockName name) {
        LockRecord record = state.locks.get(name.value());
        if (record == null) {
            record = new LockRecord(name, state.floor);
            state.locks.put(record.name, record);
        }
        return record;
    }

    private Result busyOfAll(Command.AcquireAll acquire) {
        for (String name : acquire.locks()) {
            LockRecord record = state.locks.get(name);
            if (record != null && !record.grantableNow(LockMode.EXCLUSIVE)) {
                return new Result.Busy(name, record.anyHolderToken());
            }
        }
        throw new IllegalStateException("a multi-lock found busy has no busy lock: " + acquire.locks());
    }

    /** Removes a multi-lock's waits from every one of its locks, granting what each freed queue lets in. */
    void removeGroupWait(SessionRecord session, LockRecord.Waiter waiter, List<Event> events) {
        for (String name : waiter.group()) {
            LockRecord record = state.locks.get(name);
            if (record != null && record.waiters.remove(session.id) != null) {
                session.removeWaiting(name);
                state.waiterCount--;
                events.add(new Event.WaitCancelled(session.id, name));
                handoff.afterWaitRemoved(record, events);
            }
        }
    }
}

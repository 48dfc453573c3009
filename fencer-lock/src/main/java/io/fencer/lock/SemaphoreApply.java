package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import io.fencer.core.internal.PermitSlots;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.TokenExhaustedException;
import java.util.List;
import java.util.NavigableMap;

/**
 * The apply steps of semaphores: acquiring a permit, queueing for one, cancelling that wait, and keeping plain
 * acquires off the permit slots. A semaphore's permits are slot locks with their own token counters (see
 * {@link SemaphoreRecord}); a freed slot passes to the semaphore's next waiter in {@link Handoff}.
 */
final class SemaphoreApply {
    private final MachineState state;

    SemaphoreApply(MachineState state) {
        this.state = state;
    }

    Result acquirePermit(Command.AcquirePermit acquire, List<Event> events) {
        SessionRecord session = state.sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = MachineState.refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        SemaphoreRecord semaphore = state.semaphores.get(acquire.semaphore());
        Result.Rejected invalid = checkPermitAcquire(acquire, semaphore);
        if (invalid != null) {
            return invalid;
        }
        if (semaphore != null) {
            FencingToken holding = state.permitOf(semaphore, session.id);
            if (holding != null) {
                return new Result.Granted(holding);
            }
            if (semaphore.waiters.containsKey(session.id)) {
                return new Result.Queued(semaphore.name, semaphore.positionOf(session.id));
            }
        }
        int free = semaphore == null || semaphore.waiters.isEmpty() ? freeSlot(acquire.semaphore(),
                acquire.permits()) : -1;
        if (free >= 0) {
            return grantPermit(session, acquire, semaphore, free, events);
        }
        if (!acquire.waitQueued()) {
            return new Result.Busy(semaphore.name, null);
        }
        return enqueuePermit(session, acquire, semaphore, events);
    }

    /**
     * Refuses an acquire whose permit count is out of bounds or differs from the semaphore's in use, whose slot
     * names would be too long, or (for a semaphore not in use) one of whose slot names is held as a plain lock
     * ({@link #plainLockInSlots}) or is a semaphore's, or whose own name is a slot's ({@link #semaphoreInSlotForm}).
     */
    private Result.Rejected checkPermitAcquire(Command.AcquirePermit acquire, SemaphoreRecord semaphore) {
        try {
            Limits.checkPermits(acquire.semaphore(), acquire.permits());
            SemaphoreRecord.lastSlot(acquire.semaphore(), acquire.permits());
        } catch (InvalidArgumentException e) {
            return new Result.Rejected(e);
        }
        if (semaphore != null && semaphore.permits != acquire.permits()) {
            return new Result.Rejected(new InvalidArgumentException("permits", Integer.toString(acquire.permits()),
                    "semaphore '" + InvalidArgumentException.printable(semaphore.name) + "' is in use with "
                            + semaphore.permits + " permits, asked with " + acquire.permits() + ": the permit count"
                            + " is fixed while a permit is held or waited for"));
        }
        if (semaphore == null && state.formatLevel >= LockStateMachine.FORMAT_LEVEL_DISJOINT_NAMES
                && state.locks.containsKey(acquire.semaphore())) {
            return new Result.Rejected(new InvalidArgumentException("semaphore", acquire.semaphore(), "semaphore '"
                    + InvalidArgumentException.printable(acquire.semaphore()) + "' cannot be used: its name is in use"
                    + " as a lock (held, waited for or delayed)"));
        }
        String slot = semaphore == null ? plainLockInSlots(acquire.semaphore(), acquire.permits()) : null;
        if (slot != null) {
            return new Result.Rejected(new InvalidArgumentException("semaphore", acquire.semaphore(),
                    "semaphore '" + InvalidArgumentException.printable(acquire.semaphore()) + "' cannot use slot '"
                            + InvalidArgumentException.printable(slot) + "': it is in use as a plain lock"));
        }
        return semaphore == null && state.formatLevel >= LockStateMachine.FORMAT_LEVEL_DISJOINT_NAMES
                ? semaphoreInSlotForm(acquire.semaphore()) : null;
    }

    /**
     * Refuses, from format level 5, a semaphore not in use whose name is of the slot form of a semaphore in use
     * ({@code x/permit-0} beside {@code x}), or one a semaphore in use is named like a slot of: the slot lock the one
     * would grant would share its name with the other semaphore, which the names' rule forbids (a wait given up is
     * named by its name alone, and a quota takes a session holding the name for one taking part in it). Below level 5
     * null, as the previous release decided. Costs a look-up, and a walk over the semaphores named like its slots.
     */
    private Result.Rejected semaphoreInSlotForm(String name) {
        SemaphoreRecord.Slot slot = SemaphoreRecord.parseSlot(name);
        SemaphoreRecord owner = slot == null ? null : state.semaphores.get(slot.semaphore());
        if (owner != null) {
            return new Result.Rejected(new InvalidArgumentException("semaphore", name, "semaphore '"
                    + InvalidArgumentException.printable(name) + "' is named like a permit slot of semaphore '"
                    + InvalidArgumentException.printable(owner.name) + "' (" + owner.permits + " permits), in use:"
                    + " while a semaphore is in use every name of the form <semaphore>/permit-<i> is its own"));
        }
        String semaphoreSlot = slotFormName(state.semaphores, name);
        if (semaphoreSlot == null) {
            return null;
        }
        return new Result.Rejected(new InvalidArgumentException("semaphore", name, "semaphore '"
                + InvalidArgumentException.printable(name) + "' cannot use slot '"
                + InvalidArgumentException.printable(semaphoreSlot) + "': it is the name of a semaphore in use"));
    }

    /**
     * Returns the name of a lock record that keeps a semaphore not in use from being used, or null: one named like a
     * slot of it. From format level 5 any index counts ({@code jobs/permit-5} for a semaphore of 2 permits too), so
     * that no lock named like a slot of a semaphore in use is ever a plain one: the server answers a session's permit
     * wait by the grant of any lock named like a slot of it. Below, the slots of its permit count only, as the
     * previous release decided, so that its log entries replay alike. Linear in the permits; from level 5 in the locks
     * whose names continue the slot prefix with a digit (usually none, as the semaphore is not in use).
     */
    private String plainLockInSlots(String semaphore, int permits) {
        if (state.formatLevel < LockStateMachine.FORMAT_LEVEL_DISJOINT_NAMES) {
            for (int permit = 0; permit < permits; permit++) {
                String slot = SemaphoreRecord.slotName(semaphore, permit);
                if (state.locks.containsKey(slot)) {
                    return slot;
                }
            }
            return null;
        }
        return slotFormName(state.locks, semaphore);
    }

    /**
     * Returns the first of {@code names} of the slot form of {@code semaphore} (any index), or null. Walks only the
     * names whose index starts with a digit.
     */
    private static String slotFormName(NavigableMap<String, ?> names, String semaphore) {
        String prefix = semaphore + PermitSlots.INFIX;
        for (String name : names.tailMap(prefix + '0', true).keySet()) {
            if (!name.startsWith(prefix) || name.charAt(prefix.length()) > '9') {
                return null; // past the names whose index starts with a digit
            }
            SemaphoreRecord.Slot slot = SemaphoreRecord.parseSlot(name);
            if (slot != null && slot.semaphore().equals(semaphore)) {
                return name;
            }
        }
        return null;
    }

    /** Returns the lowest slot without a record (neither held nor delayed), or -1. Linear in the permits. */
    private int freeSlot(String semaphore, int permits) {
        for (int permit = 0; permit < permits; permit++) {
            if (!state.locks.containsKey(SemaphoreRecord.slotName(semaphore, permit))) {
                return permit;
            }
        }
        return -1;
    }

    private Result grantPermit(SessionRecord session, Command.AcquirePermit acquire, SemaphoreRecord existing,
            int permit, List<Event> events) {
        Limits limits = state.limits;
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return state.locksPerSessionExceeded(session);
        }
        if (state.locks.size() >= limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(),
                    "cannot take a permit of semaphore '" + acquire.semaphore() + "': " + state.locks.size()
                            + " locks exist, locksMax is " + limits.locksMax()));
        }
        if (state.floor >= state.tokenCeiling()) {
            return new Result.Rejected(new TokenExhaustedException(acquire.semaphore(), state.floor));
        }
        SemaphoreRecord semaphore = existing;
        if (semaphore == null) {
            semaphore = new SemaphoreRecord(acquire.semaphoreName(), acquire.permits());
            state.semaphores.put(semaphore.name, semaphore);
        }
        LockRecord slot = new LockRecord(LockName.of(semaphore.slot(permit)), state.floor);
        slot.semaphore = semaphore;
        state.locks.put(slot.name, slot);
        return new Result.Granted(state.issue(slot, session, acquire.requestId(), LockMode.EXCLUSIVE, events));
    }

    private Result enqueuePermit(SessionRecord session, Command.AcquirePermit acquire, SemaphoreRecord semaphore,
            List<Event> events) {
        Limits limits = state.limits;
        if (semaphore.waiters.size() >= limits.waitersPerLockMax()) {
            return new Result.Rejected(new LimitExceededException("waitersPerLockMax", limits.waitersPerLockMax(),
                    "cannot queue on semaphore '" + semaphore.name + "': " + semaphore.waiters.size()
                            + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
        }
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return state.locksPerSessionExceeded(session);
        }
        int position = semaphore.waiters.size();
        semaphore.waiters.put(session.id, acquire.requestId());
        session.addPermitWait(semaphore.name);
        state.waiterCount++;
        events.add(new Event.Queued(session.id, semaphore.name, acquire.requestId()));
        return new Result.Queued(semaphore.name, position);
    }

    /** Cancels a session's wait for a permit, unless the grant won the race against the wait's deadline. */
    Result cancelPermitWait(SessionRecord session, SemaphoreRecord semaphore, List<Event> events) {
        FencingToken holding = state.permitOf(semaphore, session.id);
        if (holding != null) {
            return new Result.Granted(holding); // the grant won the race against the wait's deadline
        }
        if (semaphore.waiters.remove(session.id) == null) {
            return new Result.WaitCancelled(false);
        }
        state.waiterCount--;
        session.removePermitWait(semaphore.name);
        events.add(new Event.WaitCancelled(session.id, semaphore.name));
        state.dropIfIdle(semaphore);
        return new Result.WaitCancelled(true);
    }

    /**
     * Refuses a plain acquire of a permit slot of a semaphore in use: the semaphore grants its slots in its own FIFO
     * order, and a plain holder of a slot would be a permit nobody counted. From format level 5 it refuses the name
     * of a semaphore in use too: a wait is cancelled by its name alone ({@link Command.CancelWait}), so a lock and a
     * semaphore of one name would take each other's waits and grants; and a name of the slot form past the permit
     * count, whose grant the server would take for a permit of the semaphore (it answers a session's permit wait by
     * the grant of any lock named like a slot of it). Returns null for any other name.
     */
    Result.Rejected reservedName(String lock) {
        if (state.formatLevel >= LockStateMachine.FORMAT_LEVEL_DISJOINT_NAMES && state.semaphores.containsKey(lock)) {
            return new Result.Rejected(new InvalidArgumentException("lock", lock, "lock '"
                    + InvalidArgumentException.printable(lock) + "' is the name of semaphore '"
                    + InvalidArgumentException.printable(lock) + "', in use: a lock and a semaphore in use never"
                    + " share a name"));
        }
        SemaphoreRecord.Slot slot = SemaphoreRecord.parseSlot(lock);
        SemaphoreRecord semaphore = slot == null ? null : state.semaphores.get(slot.semaphore());
        if (semaphore == null) {
            return null;
        }
        if (slot.permit() < semaphore.permits) {
            return new Result.Rejected(new InvalidArgumentException("lock", lock, "lock '"
                    + InvalidArgumentException.printable(lock) + "' is permit slot " + slot.permit() + " of semaphore '"
                    + InvalidArgumentException.printable(semaphore.name) + "' (" + semaphore.permits
                    + " permits): acquire a permit of the semaphore, not its slot"));
        }
        if (state.formatLevel < LockStateMachine.FORMAT_LEVEL_DISJOINT_NAMES) {
            return null; // the previous release grants it: its log entries replay alike
        }
        return new Result.Rejected(new InvalidArgumentException("lock", lock, "lock '"
                + InvalidArgumentException.printable(lock) + "' is named like a permit slot of semaphore '"
                + InvalidArgumentException.printable(semaphore.name) + "' (" + semaphore.permits
                + " permits), in use: while a semaphore is in use every name of the form <semaphore>/permit-<i> is"
                + " its own, past its permit count too"));
    }
}

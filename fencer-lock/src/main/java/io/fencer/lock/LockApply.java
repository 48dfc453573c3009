package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.TokenExhaustedException;
import java.util.List;

/**
 * The apply steps of plain locks, exclusive or shared: acquire (a grant, a place in the FIFO queue, or busy),
 * release, the end of a lock-delay, and cancelling a wait (which a semaphore's or a multi-lock's wait leaves by their
 * own rules). Who gets a freed lock is decided in {@link Handoff}.
 */
final class LockApply {
    private final MachineState state;
    private final Handoff handoff;
    private final SemaphoreApply semaphores;
    private final MultiLockApply multiLocks;

    LockApply(MachineState state, Handoff handoff, SemaphoreApply semaphores, MultiLockApply multiLocks) {
        this.state = state;
        this.handoff = handoff;
        this.semaphores = semaphores;
        this.multiLocks = multiLocks;
    }

    Result acquire(Command.Acquire acquire, List<Event> events) {
        SessionRecord session = state.sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = MachineState.refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        Result.Rejected reserved = semaphores.reservedName(acquire.lock());
        if (reserved != null) {
            return reserved;
        }
        LockRecord record = state.locks.get(acquire.lock());
        if (record != null) {
            Result.Rejected grouped = waitedForByGroup(session, record);
            if (grouped != null) {
                return grouped;
            }
            Result again = acquireAgain(session, acquire, record);
            if (again != null) {
                return again;
            }
        }
        if (record == null || record.grantableNow(acquire.mode())) {
            return grantFree(session, acquire, record, events);
        }
        if (!acquire.waitQueued()) {
            return new Result.Busy(record.name, record.anyHolderToken());
        }
        return enqueue(session, acquire, record, events);
    }

    /**
     * Answers an acquire by a session that already holds or waits for the lock: its grant or its place, in the mode
     * it asked for before; an acquire in the other mode is refused, since a session holds a lock in one mode and
     * there is no upgrade (two readers upgrading at once would wait for each other forever). Returns null when the
     * session neither holds nor waits.
     */
    private static Result acquireAgain(SessionRecord session, Command.Acquire acquire, LockRecord record) {
        FencingToken holding = record.tokenOf(session.id);
        LockRecord.Waiter waiting = record.waiters.get(session.id);
        if (holding == null && waiting == null) {
            return null;
        }
        LockMode mode = holding != null ? holding.mode() : waiting.mode();
        if (mode != acquire.mode()) {
            return new Result.Rejected(new InvalidArgumentException("mode", acquire.mode().text(), "session "
                    + session.id + (holding != null ? " holds" : " waits for") + " lock '" + record.name + "' in "
                    + mode.text() + " mode and asked for it in " + acquire.mode().text() + " mode: release it"
                    + " first (a lock is held in one mode; there is no upgrade or downgrade)"));
        }
        return holding != null ? new Result.Granted(holding) : new Result.Queued(record.name,
                record.positionOf(session.id));
    }

    /**
     * Refuses, from format level 5, a plain acquire of a lock the session waits for through a multi-lock: it would
     * answer that wait's place as its own, and a wait is cancelled by session and lock alone ({@link
     * Command.CancelWait}), so the plain call's end would take the whole multi-lock out of every queue, and its grant
     * would be handed out twice. Below level 5 the previous release may still apply the same entry: null, as it did.
     */
    private Result.Rejected waitedForByGroup(SessionRecord session, LockRecord record) {
        LockRecord.Waiter waiting = record.waiters.get(session.id);
        if (waiting == null || waiting.group() == null
                || state.formatLevel < LockStateMachine.FORMAT_LEVEL_ONE_WAIT_PER_LOCK) {
            return null;
        }
        return new Result.Rejected(new InvalidArgumentException("lock", record.name, "session " + session.id
                + " waits for lock '" + InvalidArgumentException.printable(record.name) + "' through multi-lock "
                + waiting.group() + ": a session waits for a lock once; let that wait end first"));
    }

    /** Grants a lock nobody holds, waits for or delays; {@code existing} is its record, or null when none. */
    private Result grantFree(SessionRecord session, Command.Acquire acquire, LockRecord existing,
            List<Event> events) {
        assert existing == null || existing.waiters.isEmpty()
                : "free lock " + existing.name + " has " + existing.waiters.size() + " waiters";
        Limits limits = state.limits;
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return state.locksPerSessionExceeded(session);
        }
        if (existing == null && state.locks.size() >= limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(),
                    "cannot create lock '" + acquire.lock() + "': " + state.locks.size() + " locks exist, locksMax is "
                            + limits.locksMax()));
        }
        long base = existing == null ? state.floor : Math.max(existing.lastToken, state.floor);
        if (base >= state.tokenCeiling()) {
            return new Result.Rejected(new TokenExhaustedException(acquire.lock(), base));
        }
        LockRecord record = existing;
        if (record == null) {
            record = new LockRecord(acquire.lockName(), state.floor);
            state.locks.put(record.name, record);
        }
        return new Result.Granted(state.issue(record, session, acquire.requestId(), acquire.mode(), events));
    }

    private Result enqueue(SessionRecord session, Command.Acquire acquire, LockRecord record, List<Event> events) {
        Limits limits = state.limits;
        if (record.waiters.size() >= limits.waitersPerLockMax()) {
            return new Result.Rejected(new LimitExceededException("waitersPerLockMax", limits.waitersPerLockMax(),
                    "cannot queue on lock '" + record.name + "': " + record.waiters.size()
                            + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
        }
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return state.locksPerSessionExceeded(session);
        }
        long base = Math.max(record.lastToken, state.floor);
        if (base >= state.tokenCeiling()) {
            // The lock can never be granted again: queueing would wait forever.
            return new Result.Rejected(new TokenExhaustedException(record.name, base));
        }
        int position = record.waiters.size();
        record.waiters.put(session.id, new LockRecord.Waiter(acquire.requestId(), acquire.mode()));
        session.addWaiting(record.name);
        state.waiterCount++;
        events.add(new Event.Queued(session.id, record.name, acquire.requestId()));
        return new Result.Queued(record.name, position);
    }

    Result release(Command.Release release, List<Event> events) {
        if (release.secretHash() == SecretHash.NOT_CARRIED) {
            return releaseByTokenAlone(release, events);
        }
        SessionRecord session = state.sessions.get(release.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(release.sessionId()));
        }
        Result.Rejected refused = MachineState.refusal(session, release.secretHash());
        if (refused != null) {
            return refused;
        }
        LockRecord record = state.locks.get(release.lock());
        FencingToken held = record == null ? null : record.tokenOf(session.id);
        if (held == null || held.value() != release.token()) {
            FencingToken current = held != null ? held : record == null ? null : record.anyHolderToken();
            return new Result.Rejected(new NotHolderException(release.lock(), release.token(),
                    current == null ? FencingToken.NONE : current.value(), session.id));
        }
        FencingToken released = state.endGrant(record, session.id, EndCause.RELEASED, events);
        FencingToken next = handoff.grantNext(record, events);
        return new Result.Released(released, next);
    }

    /**
     * True when {@code release}, applied now, would release its plain lock and grant nobody: the session is open, the
     * secret is its own, it holds the lock under the release's token, and nobody waits for the lock. Changes nothing.
     */
    boolean releasesAlone(Command.Release release) {
        if (release.secretHash() == SecretHash.NOT_CARRIED) {
            return false;
        }
        SessionRecord session = state.sessions.get(release.sessionId());
        if (session == null || MachineState.refusal(session, release.secretHash()) != null) {
            return false;
        }
        LockRecord record = state.locks.get(release.lock());
        if (record == null || record.semaphore != null || !record.waiters.isEmpty()) {
            return false;
        }
        FencingToken held = record.tokenOf(session.id);
        return held != null && held.value() == release.token();
    }

    /**
     * Returns the hand-off {@code release}'s lock is at, for a peer that answers grants before they are durable:
     * empty unless the release's session is open and carries its own secret, and the lock is a plain one held
     * exclusively, not delayed, with room below the token ceiling for {@code waitersMax} more grants. At most
     * {@code waitersMax} waiters are shown. Changes nothing.
     */
    java.util.Optional<HandOffView> handOffView(Command.Release release, int waitersMax) {
        SessionRecord session = state.sessions.get(release.sessionId());
        if (release.secretHash() == SecretHash.NOT_CARRIED || session == null
                || MachineState.refusal(session, release.secretHash()) != null) {
            return java.util.Optional.empty();
        }
        LockRecord record = state.locks.get(release.lock());
        if (record == null || record.semaphore != null || !record.held() || record.delayed) {
            return java.util.Optional.empty();
        }
        long base = Math.max(record.lastToken, state.floor);
        if (base > state.tokenCeiling() - waitersMax - 1) {
            return java.util.Optional.empty(); // near exhaustion every grant goes the usual way
        }
        List<Long> plain = new java.util.ArrayList<>(Math.min(waitersMax, record.waiters.size()));
        for (var waiter : record.waiters.entrySet()) {
            if (plain.size() >= waitersMax || waiter.getValue().group() != null
                    || waiter.getValue().mode() != LockMode.EXCLUSIVE) {
                break;
            }
            plain.add(waiter.getKey());
        }
        return java.util.Optional.of(new HandOffView(record.holderSessionId, record.holderTokenValue, base + 1,
                plain));
    }

    /**
     * Applies a version-1 Release as the previous release did: the holder's current token releases, whichever session
     * proposed it (version 1 carried none). Only replayed log entries come here (see {@link CommandCodec}).
     */
    private Result releaseByTokenAlone(Command.Release release, List<Event> events) {
        LockRecord record = state.locks.get(release.lock());
        long current = record == null ? FencingToken.NONE : record.holderTokenValue;
        if (current == FencingToken.NONE || current != release.token()) {
            return new Result.Rejected(new NotHolderException(release.lock(), release.token(), current));
        }
        FencingToken released = state.endGrant(record, record.holderSessionId, EndCause.RELEASED, events);
        FencingToken next = handoff.grantNext(record, events);
        return new Result.Released(released, next);
    }

    /**
     * Revokes a lock's exclusive grant for an operator (see {@link Command.Revoke}): ends it as a release would, then
     * delays the lock as an expiry would when asked to, or passes it to its next waiters.
     */
    Result revoke(Command.Revoke revoke, List<Event> events) {
        if (state.formatLevel < LockStateMachine.FORMAT_LEVEL_REVOKE) {
            return new Result.Rejected(new InvalidArgumentException("lock", revoke.lock(), "cannot revoke lock '"
                    + revoke.lock() + "': the group is at format level " + state.formatLevel + " and revoke needs "
                    + LockStateMachine.FORMAT_LEVEL_REVOKE + " (a peer of the previous release may still run; the"
                    + " leader raises the level once every peer reads it)"));
        }
        LockRecord record = state.locks.get(revoke.lock());
        if (record == null || !record.hasHolder()) {
            return new Result.Rejected(new NotHolderException(revoke.lock(), revoke.token(), FencingToken.NONE, 0,
                    "nothing to revoke" + (record != null && record.delayed ? " (it waits out its lock-delay)" : "")));
        }
        if (!record.held()) {
            return new Result.Rejected(new InvalidArgumentException("lock", revoke.lock(), "cannot revoke lock '"
                    + revoke.lock() + "': it is held in shared mode by " + record.sharedHolders.size()
                    + " sessions, and revoke ends an exclusive grant only (a shared holder cannot write)"));
        }
        if (revoke.token() != FencingToken.NONE && revoke.token() != record.holderTokenValue) {
            return new Result.Rejected(new NotHolderException(revoke.lock(), revoke.token(), record.holderTokenValue,
                    0, "revoke ends only the grant it names"));
        }
        long sessionId = record.holderSessionId;
        FencingToken revoked = state.endGrant(record, sessionId, EndCause.REVOKED, events);
        events.add(new Event.Revoked(revoked, sessionId, revoke.revokedBy()));
        if (revoke.lockDelay()) {
            record.delayed = true;
            state.delayed.add(record.name);
            events.add(new Event.LockDelayStarted(record.name));
            return new Result.Revoked(revoked, sessionId, null);
        }
        return new Result.Revoked(revoked, sessionId, handoff.grantNext(record, events));
    }

    Result endLockDelay(String lock, List<Event> events) {
        LockRecord record = state.locks.get(lock);
        if (record == null || !record.delayed) {
            return new Result.DelayEnded(lock, false, null);
        }
        record.delayed = false;
        state.delayed.remove(lock);
        return new Result.DelayEnded(lock, true, handoff.grantNext(record, events));
    }

    /**
     * Cancels a session's wait on a lock or a semaphore (the name says which); a multi-lock's wait leaves all its
     * locks at once. A grant that won the race against the wait's deadline is answered as a grant.
     */
    Result cancelWait(Command.CancelWait cancel, List<Event> events) {
        SessionRecord session = state.sessions.get(cancel.sessionId());
        if (session == null) {
            return new Result.WaitCancelled(false); // an ended session waits for nothing
        }
        Result.Rejected refused = MachineState.refusal(session, cancel.secretHash());
        if (refused != null) {
            return refused;
        }
        SemaphoreRecord semaphore = state.semaphores.get(cancel.lock());
        if (semaphore != null) {
            return semaphores.cancelPermitWait(session, semaphore, events);
        }
        LockRecord record = state.locks.get(cancel.lock());
        if (record == null) {
            return new Result.WaitCancelled(false);
        }
        FencingToken holding = record.tokenOf(cancel.sessionId());
        if (holding != null) {
            // The grant won the race against the wait's deadline: the caller holds the lock.
            return new Result.Granted(holding);
        }
        LockRecord.Waiter waiter = record.waiters.get(cancel.sessionId());
        if (waiter == null) {
            return new Result.WaitCancelled(false);
        }
        if (waiter.group() != null) {
            multiLocks.removeGroupWait(session, waiter, events); // a multi-lock waits as a unit and leaves as one
            return new Result.WaitCancelled(true);
        }
        record.waiters.remove(cancel.sessionId());
        state.waiterCount--;
        session.removeWaiting(record.name);
        events.add(new Event.WaitCancelled(cancel.sessionId(), record.name));
        handoff.afterWaitRemoved(record, events);
        return new Result.WaitCancelled(true);
    }
}

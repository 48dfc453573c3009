package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.SessionUnauthenticatedException;
import java.util.ArrayList;
import java.util.List;

/**
 * The apply steps of sessions: open (and a retried open), close, expire, and the leader's lease checkpoints. Ending
 * a session releases its grants and drops its waits on locks and semaphores, each passed on through {@link Handoff}.
 */
final class SessionApply {
    private final MachineState state;
    private final Handoff handoff;

    SessionApply(MachineState state, Handoff handoff) {
        this.state = state;
        this.handoff = handoff;
    }

    Result openSession(Command.OpenSession open, List<Event> events) {
        Limits limits = state.limits;
        try {
            limits.checkTtlMillis(open.ttlMillis());
        } catch (InvalidArgumentException e) {
            return new Result.Rejected(e);
        }
        if (!open.requestId().isEmpty()) {
            Long existing = state.sessionIdsByRequestId.get(open.requestId());
            if (existing != null) {
                return reopen(state.sessions.get(existing), open);
            }
        }
        if (state.sessions.size() >= limits.sessionsMax()) {
            return new Result.Rejected(new LimitExceededException("sessionsMax", limits.sessionsMax(),
                    "cannot open a session: " + state.sessions.size() + " sessions are open, sessionsMax is "
                            + limits.sessionsMax()));
        }
        if (state.sessionIdLast == Long.MAX_VALUE) {
            throw new IllegalStateException("session ids exhausted at " + state.sessionIdLast);
        }
        SessionRecord session = new SessionRecord(++state.sessionIdLast, open.ttlMillis(), open.requestId(),
                open.identity(), open.secretHash(), open.quotaIdentity(), state.usage.counter(open.quotaIdentity()));
        state.sessions.put(session.id, session);
        if (!session.requestId.isEmpty()) {
            state.sessionIdsByRequestId.put(session.requestId, session.id);
        }
        events.add(new Event.SessionOpened(session.id, session.ttlMillis, session.secretHash,
                session.quotaIdentity));
        return new Result.SessionOpened(session.id, session.ttlMillis);
    }

    /**
     * Answers a retried open: the same session, if the retry comes from the same identity with the same secret
     * hash. Otherwise the caller could not be handed the session's secret (another identity must not get it, and a
     * leader that drew another secret does not know it), so the retry is refused and the session left alone.
     */
    private static Result reopen(SessionRecord session, Command.OpenSession open) {
        if (!session.identity.equals(open.identity())) {
            return new Result.Rejected(new SessionUnauthenticatedException(session.id, "session " + session.id
                    + " was opened with request_id '" + InvalidArgumentException.printable(open.requestId())
                    + "' by another identity than '" + InvalidArgumentException.printable(open.identity())
                    + "': only its opener may retry the open"));
        }
        if (!session.secretHash.matches(open.secretHash())) {
            return new Result.Rejected(new SessionUnauthenticatedException(session.id, "session " + session.id
                    + " was opened by an earlier attempt with request_id '"
                    + InvalidArgumentException.printable(open.requestId()) + "' whose secret the service no longer"
                    + " keeps (the leader changed, or the attempt is older than the retry window): its secret is"
                    + " not handed out again; open a new session with a new request_id"));
        }
        return new Result.SessionOpened(session.id, session.ttlMillis);
    }

    Result closeSession(Command.CloseSession close, List<Event> events) {
        SessionRecord session = state.sessions.get(close.sessionId());
        if (session != null) {
            Result.Rejected refused = MachineState.refusal(session, close.secretHash());
            if (refused != null) {
                return refused;
            }
        }
        return endSession(close.sessionId(), EndCause.SESSION_CLOSED, false, events);
    }

    Result endSession(long sessionId, EndCause cause, boolean lockDelay, List<Event> events) {
        SessionRecord session = state.sessions.get(sessionId);
        if (session == null) {
            return new Result.SessionEnded(sessionId, List.of());
        }
        List<FencingToken> released = releaseAll(session, cause, lockDelay, events);
        dropWaits(session, events);
        while (session.lockCount() > 0) {
            // At the end of the generation a lock passed on can drop a multi-lock's waits, and the other locks that
            // multi-lock leaves pass to their next waiters: this session among them, while it still waits. Each such
            // grant took one of its waits, so this ends; without it the session left with a lock nobody could free.
            released.addAll(releaseAll(session, cause, lockDelay, events));
            dropWaits(session, events);
        }
        state.sessions.remove(sessionId);
        if (!session.requestId.isEmpty()) {
            state.sessionIdsByRequestId.remove(session.requestId);
        }
        session.ended();
        state.usage.dropIfUnused(session.quotaIdentity);
        events.add(new Event.SessionEnded(sessionId, cause));
        return new Result.SessionEnded(sessionId, released);
    }

    /** Ends every grant of an ending session, in the order acquired; returns the ended tokens. */
    private List<FencingToken> releaseAll(SessionRecord session, EndCause cause, boolean lockDelay,
            List<Event> events) {
        List<FencingToken> released = new ArrayList<>(session.held().size());
        for (String name : List.copyOf(session.held())) {
            LockRecord record = state.locks.get(name);
            FencingToken ended = state.endGrant(record, session.id, cause, events);
            released.add(ended);
            // A shared holder never delays its lock: a paused reader cannot write, and its fenced reads are refused
            // once a writer has written; other readers may still hold the lock, which a delay would contradict.
            if (lockDelay && ended.mode() == LockMode.EXCLUSIVE) {
                record.delayed = true;
                state.delayed.add(name);
                events.add(new Event.LockDelayStarted(name));
            } else {
                handoff.grantNext(record, events);
            }
        }
        return released;
    }

    /** Drops every wait of an ending session, on locks in the order queued, then on semaphores in name order. */
    private void dropWaits(SessionRecord session, List<Event> events) {
        long sessionId = session.id;
        for (String name : List.copyOf(session.waiting())) {
            if (!session.waiting().contains(name)) {
                continue; // a multi-lock wait that the end of the generation dropped as an earlier wait left
            }
            LockRecord record = state.locks.get(name);
            String requestId = record.waiters.remove(sessionId).requestId();
            state.waiterCount--;
            session.removeWaiting(name);
            events.add(new Event.WaitDropped(sessionId, name, requestId));
            handoff.afterWaitRemoved(record, events);
        }
        for (String name : List.copyOf(session.waitingPermits())) {
            SemaphoreRecord semaphore = state.semaphores.get(name);
            String requestId = semaphore.waiters.remove(sessionId);
            state.waiterCount--;
            session.removePermitWait(name);
            events.add(new Event.WaitDropped(sessionId, name, requestId));
            state.dropIfIdle(semaphore);
        }
    }

    /** Records each listed session's lease bound (clamped to its ttl), or clears it; ended sessions are skipped. */
    Result checkpointLeases(Command.CheckpointLeases checkpoint) {
        int recorded = 0;
        for (Command.LeaseCheckpoint entry : checkpoint.checkpoints()) {
            SessionRecord session = state.sessions.get(entry.sessionId());
            if (session == null) {
                continue;
            }
            session.leaseBoundMillis = entry.remainingMillis() == Command.LeaseCheckpoint.RENEWED
                    ? SessionRecord.NO_LEASE_BOUND : Math.min(entry.remainingMillis(), session.ttlMillis);
            recorded++;
        }
        return new Result.LeasesCheckpointed(recorded);
    }
}

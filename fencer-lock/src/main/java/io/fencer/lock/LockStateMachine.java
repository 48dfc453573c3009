package io.fencer.lock;

import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.LockName;
import io.fencer.core.LockNames;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.TokenExhaustedException;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The lock service's deterministic state machine: sessions, locks, FIFO waiters and per-lock token counters
 * with a global floor. No threads, no clock, no randomness; not thread-safe (the server applies commands
 * from one thread and reads under the same exclusion).
 *
 * <p>Sessions: each keeps the identity that opened it and the {@link SecretHash} of its secret (the leader drew
 * the secret; it is never here). Every command a client makes for a session carries the hash of the secret the
 * client presented, and is refused with {@link SessionUnauthenticatedException}, changing nothing, unless it is the
 * session's: this check, not the leader's before proposing, is the authority, because it is made in the same step
 * as the action on every replica.
 *
 * <p>Data of the previous release (version-1 log entries and snapshots, before session secrets) still loads; see
 * {@link CommandCodec} for the reasoning. Its sessions have the identity {@link CommandCodec#VERSION_ONE_IDENTITY}
 * and the hash {@link SecretHash#NONE}, which nothing matches; its commands carry {@link SecretHash#NOT_CARRIED} and
 * are applied as that release applied them, without the secret check.
 *
 * <p>Tokens: a grant of lock L gets {@code max(lastToken(L), floor) + 1}. A lock record with no holder, no
 * waiter and no delay is dropped and its last token folded into {@code floor = max(floor, lastToken)}, so a
 * recreated lock starts above every token it ever had without keeping every name forever.
 *
 * <p>Cost: every command is O(log n) in locks and sessions plus the work it reports (events, released locks);
 * a retried acquire of a queued session also walks its lock's queue to report its position.
 */
public final class LockStateMachine {
    /** The leading byte of a snapshot; a reader refuses versions it does not know. */
    private static final int SNAPSHOT_VERSION = 4;
    /** Version 3: sessions without quota identity or lease bound (they count against their identity). Read. */
    private static final int SNAPSHOT_VERSION_THREE = 3;
    /** Version 2: sessions with identity and secret hash, locks without shared holders or waiter modes. Read. */
    private static final int SNAPSHOT_VERSION_TWO = 2;
    /** The previous release's snapshot: sessions without identity or secret hash. Read, never written. */
    private static final int SNAPSHOT_VERSION_ONE = 1;

    /** Sessions by id; a sorted map so that {@link #sessions()} and snapshots come in id order. */
    private final TreeMap<Long, SessionRecord> sessions = new TreeMap<>();
    /** Live sessions by their non-empty opening request id; only looked up, never iterated. */
    private final Map<String, Long> sessionIdsByRequestId = new HashMap<>();
    /** Lock records by name; a sorted map so that listings and snapshots come in name order. */
    private final TreeMap<String, LockRecord> locks = new TreeMap<>();
    /** Semaphores in use (a slot held or delayed, or a session waiting), by name. */
    private final TreeMap<String, SemaphoreRecord> semaphores = new TreeMap<>();
    /** Names of the locks in lock-delay. */
    private final TreeSet<String> delayed = new TreeSet<>();
    private final Limits limits;
    /** The last session id handed out; ids are never reused. */
    private long sessionIdLast;
    /** The highest last token of every dropped lock record: every new grant exceeds it. */
    private long floor;
    /** The total number of queued waits over all locks. */
    private int waiterCount;
    /**
     * What each quota identity's sessions hold: a derived index, rebuilt when a snapshot is read, never written.
     * Only looked up by key; an identity leaves it when its count is back to zero.
     */
    private final HashMap<String, UsageCounter> usage = new HashMap<>();
    /** The counters changed since {@link #takeUsageChanges()} last ran, each once, in the order first changed. */
    private final List<UsageCounter> usageChanged = new ArrayList<>();

    public LockStateMachine(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    /** Returns an empty machine whose floor starts at {@code floor}, to reach token exhaustion in tests. */
    static LockStateMachine withFloor(Limits limits, long floor) {
        if (floor < 0 || floor > FencingToken.VALUE_MAX) {
            throw new IllegalArgumentException("floor " + floor + " is outside [0, " + FencingToken.VALUE_MAX + "]");
        }
        LockStateMachine machine = new LockStateMachine(limits);
        machine.floor = floor;
        return machine;
    }

    /** Applies one command and returns its result and events. Deterministic. */
    public Applied apply(Command command) {
        Objects.requireNonNull(command, "command");
        List<Event> events = new ArrayList<>();
        Result result;
        if (command instanceof Command.OpenSession open) {
            result = openSession(open, events);
        } else if (command instanceof Command.CloseSession close) {
            result = closeSession(close, events);
        } else if (command instanceof Command.ExpireSession expire) {
            result = endSession(expire.sessionId(), EndCause.SESSION_EXPIRED, expire.lockDelay(), events);
        } else if (command instanceof Command.Acquire acquire) {
            result = acquire(acquire, events);
        } else if (command instanceof Command.CancelWait cancel) {
            result = cancelWait(cancel, events);
        } else if (command instanceof Command.Release release) {
            result = release(release, events);
        } else if (command instanceof Command.EndLockDelay end) {
            result = endLockDelay(end.lock(), events);
        } else if (command instanceof Command.AcquirePermit permit) {
            result = acquirePermit(permit, events);
        } else if (command instanceof Command.AcquireAll all) {
            result = acquireAll(all, events);
        } else if (command instanceof Command.CheckpointLeases checkpoint) {
            result = checkpointLeases(checkpoint);
        } else {
            throw new IllegalArgumentException("unknown command type " + command.getClass().getName());
        }
        return new Applied(result, events);
    }

    private Result openSession(Command.OpenSession open, List<Event> events) {
        try {
            limits.checkTtlMillis(open.ttlMillis());
        } catch (InvalidArgumentException e) {
            return new Result.Rejected(e);
        }
        if (!open.requestId().isEmpty()) {
            Long existing = sessionIdsByRequestId.get(open.requestId());
            if (existing != null) {
                return reopen(sessions.get(existing), open);
            }
        }
        if (sessions.size() >= limits.sessionsMax()) {
            return new Result.Rejected(new LimitExceededException("sessionsMax", limits.sessionsMax(),
                    "cannot open a session: " + sessions.size() + " sessions are open, sessionsMax is "
                            + limits.sessionsMax()));
        }
        if (sessionIdLast == Long.MAX_VALUE) {
            throw new IllegalStateException("session ids exhausted at " + sessionIdLast);
        }
        SessionRecord session = new SessionRecord(++sessionIdLast, open.ttlMillis(), open.requestId(),
                open.identity(), open.secretHash(), open.quotaIdentity(), counter(open.quotaIdentity()));
        sessions.put(session.id, session);
        if (!session.requestId.isEmpty()) {
            sessionIdsByRequestId.put(session.requestId, session.id);
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
    private Result reopen(SessionRecord session, Command.OpenSession open) {
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

    /**
     * Returns the refusal of a command for {@code session} that presented {@code presented}, or null when it is the
     * session's secret hash.
     */
    private static Result.Rejected refusal(SessionRecord session, SecretHash presented) {
        if (presented == SecretHash.NOT_CARRIED) {
            return null; // a version-1 log entry, accepted before session secrets: applied as then (CommandCodec)
        }
        if (session.secretHash.matches(presented)) {
            return null;
        }
        return new Result.Rejected(new SessionUnauthenticatedException(session.id));
    }

    private Result closeSession(Command.CloseSession close, List<Event> events) {
        SessionRecord session = sessions.get(close.sessionId());
        if (session != null) {
            Result.Rejected refused = refusal(session, close.secretHash());
            if (refused != null) {
                return refused;
            }
        }
        return endSession(close.sessionId(), EndCause.SESSION_CLOSED, false, events);
    }

    private Result acquire(Command.Acquire acquire, List<Event> events) {
        SessionRecord session = sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        Result.Rejected reserved = reservedSlot(acquire.lock());
        if (reserved != null) {
            return reserved;
        }
        LockRecord record = locks.get(acquire.lock());
        if (record != null) {
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
     * Refuses a plain acquire of a permit slot of a semaphore in use: the semaphore grants its slots in its own FIFO
     * order, and a plain holder of a slot would be a permit nobody counted. Returns null for any other name.
     */
    private Result.Rejected reservedSlot(String lock) {
        SemaphoreRecord.Slot slot = SemaphoreRecord.parseSlot(lock);
        SemaphoreRecord semaphore = slot == null ? null : semaphores.get(slot.semaphore());
        if (semaphore == null || slot.permit() >= semaphore.permits) {
            return null;
        }
        return new Result.Rejected(new InvalidArgumentException("lock", lock, "lock '"
                + InvalidArgumentException.printable(lock) + "' is permit slot " + slot.permit() + " of semaphore '"
                + InvalidArgumentException.printable(semaphore.name) + "' (" + semaphore.permits
                + " permits): acquire a permit of the semaphore, not its slot"));
    }

    /** Grants a lock nobody holds, waits for or delays; {@code existing} is its record, or null when none. */
    private Result grantFree(SessionRecord session, Command.Acquire acquire, LockRecord existing,
            List<Event> events) {
        assert existing == null || existing.waiters.isEmpty()
                : "free lock " + existing.name + " has " + existing.waiters.size() + " waiters";
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return locksPerSessionExceeded(session);
        }
        if (existing == null && locks.size() >= limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(),
                    "cannot create lock '" + acquire.lock() + "': " + locks.size() + " locks exist, locksMax is "
                            + limits.locksMax()));
        }
        long base = existing == null ? floor : Math.max(existing.lastToken, floor);
        if (base >= FencingToken.VALUE_MAX) {
            return new Result.Rejected(new TokenExhaustedException(acquire.lock(), base));
        }
        LockRecord record = existing;
        if (record == null) {
            record = new LockRecord(acquire.lockName(), floor);
            locks.put(record.name, record);
        }
        return new Result.Granted(issue(record, session, acquire.requestId(), acquire.mode(), events));
    }

    private Result enqueue(SessionRecord session, Command.Acquire acquire, LockRecord record, List<Event> events) {
        if (record.waiters.size() >= limits.waitersPerLockMax()) {
            return new Result.Rejected(new LimitExceededException("waitersPerLockMax", limits.waitersPerLockMax(),
                    "cannot queue on lock '" + record.name + "': " + record.waiters.size()
                            + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
        }
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return locksPerSessionExceeded(session);
        }
        long base = Math.max(record.lastToken, floor);
        if (base >= FencingToken.VALUE_MAX) {
            // The lock can never be granted again: queueing would wait forever.
            return new Result.Rejected(new TokenExhaustedException(record.name, base));
        }
        int position = record.waiters.size();
        record.waiters.put(session.id, new LockRecord.Waiter(acquire.requestId(), acquire.mode()));
        session.addWaiting(record.name);
        waiterCount++;
        events.add(new Event.Queued(session.id, record.name, acquire.requestId()));
        return new Result.Queued(record.name, position);
    }

    private Result.Rejected locksPerSessionExceeded(SessionRecord session) {
        return new Result.Rejected(new LimitExceededException("locksPerSessionMax", limits.locksPerSessionMax(),
                "session " + session.id + " holds or waits for " + session.lockCount()
                        + " locks, locksPerSessionMax is " + limits.locksPerSessionMax()));
    }

    /**
     * Grants {@code record} to {@code session} in {@code mode} under the next token; the caller checked it is not
     * exhausted and that the mode is compatible with the holders.
     */
    private FencingToken issue(LockRecord record, SessionRecord session, String requestId, LockMode mode,
            List<Event> events) {
        assert !record.held() : "lock " + record.name + " granted while held by session " + record.holderSessionId;
        assert mode == LockMode.SHARED || record.sharedHolders.isEmpty()
                : "lock " + record.name + " granted exclusively while " + record.sharedHolders.size() + " share it";
        long value = Math.max(record.lastToken, floor) + 1;
        assert value > record.lastToken
                : String.format("token %d <= lastToken %d for lock %s", value, record.lastToken, record.name);
        assert value > floor : String.format("token %d <= floor %d for lock %s", value, floor, record.name);
        assert value <= FencingToken.VALUE_MAX : String.format("token %d > max for lock %s", value, record.name);
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
        events.add(new Event.Granted(session.id, requestId, token));
        return token;
    }

    private Result release(Command.Release release, List<Event> events) {
        if (release.secretHash() == SecretHash.NOT_CARRIED) {
            return releaseByTokenAlone(release, events);
        }
        SessionRecord session = sessions.get(release.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(release.sessionId()));
        }
        Result.Rejected refused = refusal(session, release.secretHash());
        if (refused != null) {
            return refused;
        }
        LockRecord record = locks.get(release.lock());
        FencingToken held = record == null ? null : record.tokenOf(session.id);
        if (held == null || held.value() != release.token()) {
            FencingToken current = held != null ? held : record == null ? null : record.anyHolderToken();
            return new Result.Rejected(new NotHolderException(release.lock(), release.token(),
                    current == null ? FencingToken.NONE : current.value(), session.id));
        }
        FencingToken released = endGrant(record, session.id, EndCause.RELEASED, events);
        FencingToken next = grantNext(record, events);
        return new Result.Released(released, next);
    }

    /**
     * Applies a version-1 Release as the previous release did: the holder's current token releases, whichever session
     * proposed it (version 1 carried none). Only replayed log entries come here (see {@link CommandCodec}).
     */
    private Result releaseByTokenAlone(Command.Release release, List<Event> events) {
        LockRecord record = locks.get(release.lock());
        long current = record == null ? FencingToken.NONE : record.holderTokenValue;
        if (current == FencingToken.NONE || current != release.token()) {
            return new Result.Rejected(new NotHolderException(release.lock(), release.token(), current));
        }
        FencingToken released = endGrant(record, record.holderSessionId, EndCause.RELEASED, events);
        FencingToken next = grantNext(record, events);
        return new Result.Released(released, next);
    }

    /** Ends the grant of {@code record} that {@code sessionId} holds, in either mode; returns the ended token. */
    private FencingToken endGrant(LockRecord record, long sessionId, EndCause cause, List<Event> events) {
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

    /**
     * Grants a lock without exclusive holder and delay to the waiters at the head of its queue that the FIFO rule
     * lets in: one exclusive waiter when nobody holds, or every shared waiter up to the first exclusive one (which
     * then waits for them; shared requests behind it wait too, so a writer is never starved). Drops the record when
     * it is left idle. Returns the first new token, or null.
     */
    private FencingToken grantNext(LockRecord record, List<Event> events) {
        assert !record.held() && !record.delayed : "lock " + record.name + " is not free";
        if (record.semaphore != null) {
            return grantSlot(record, events);
        }
        if (record.waiters.isEmpty()) {
            dropIfIdle(record);
            return null;
        }
        if (Math.max(record.lastToken, floor) >= FencingToken.VALUE_MAX) {
            if (!record.hasHolder()) {
                // Unreachable in practice (2^63 grants); the waiters can never be granted, so they are dropped.
                dropWaiters(record, events);
                dropIfIdle(record);
            }
            return null;
        }
        FencingToken first = null;
        Iterator<Map.Entry<Long, LockRecord.Waiter>> queue = record.waiters.entrySet().iterator();
        while (queue.hasNext() && Math.max(record.lastToken, floor) < FencingToken.VALUE_MAX) {
            Map.Entry<Long, LockRecord.Waiter> head = queue.next();
            LockMode mode = head.getValue().mode();
            if (mode == LockMode.EXCLUSIVE && record.hasHolder()) {
                break; // the writer waits for the readers that hold; everybody behind it waits for the writer
            }
            if (head.getValue().group() != null) {
                // A multi-lock is granted all its locks at once, when first in line and free at every one.
                return groupGrantable(head.getKey(), head.getValue())
                        ? grantGroup(sessions.get(head.getKey()), head.getValue(), record.name, events) : first;
            }
            queue.remove();
            waiterCount--;
            SessionRecord session = sessions.get(head.getKey());
            boolean listed = session.removeWaiting(record.name);
            assert listed : "session " + session.id + " did not list its wait on lock " + record.name;
            FencingToken token = issue(record, session, head.getValue().requestId(), mode, events);
            first = first == null ? token : first;
            if (mode == LockMode.EXCLUSIVE) {
                break;
            }
        }
        return first;
    }

    /**
     * After a wait left {@code record}'s queue: grants the waiters the departed one held back (an exclusive waiter
     * at the head keeps shared ones behind it out while readers hold), or drops the record when idle.
     */
    private void afterWaitRemoved(LockRecord record, List<Event> events) {
        if (!record.held() && !record.delayed) {
            grantNext(record, events);
        } else {
            dropIfIdle(record);
        }
    }

    private void dropWaiters(LockRecord record, List<Event> events) {
        for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
            sessions.get(waiter.getKey()).removeWaiting(record.name);
            events.add(new Event.WaitDropped(waiter.getKey(), record.name, waiter.getValue().requestId()));
            waiterCount--;
        }
        record.waiters.clear();
    }

    /** Drops an idle record, folding its counter into the floor so that a recreated lock starts above it. */
    private void dropIfIdle(LockRecord record) {
        if (record.idle()) {
            locks.remove(record.name);
            floor = Math.max(floor, record.lastToken);
        }
    }

    private Result endSession(long sessionId, EndCause cause, boolean lockDelay, List<Event> events) {
        SessionRecord session = sessions.get(sessionId);
        if (session == null) {
            return new Result.SessionEnded(sessionId, List.of());
        }
        List<FencingToken> released = new ArrayList<>(session.held().size());
        for (String name : List.copyOf(session.held())) {
            LockRecord record = locks.get(name);
            FencingToken ended = endGrant(record, sessionId, cause, events);
            released.add(ended);
            // A shared holder never delays its lock: a paused reader cannot write, and its fenced reads are refused
            // once a writer has written; other readers may still hold the lock, which a delay would contradict.
            if (lockDelay && ended.mode() == LockMode.EXCLUSIVE) {
                record.delayed = true;
                delayed.add(name);
                events.add(new Event.LockDelayStarted(name));
            } else {
                grantNext(record, events);
            }
        }
        for (String name : List.copyOf(session.waiting())) {
            LockRecord record = locks.get(name);
            String requestId = record.waiters.remove(sessionId).requestId();
            waiterCount--;
            session.removeWaiting(name);
            events.add(new Event.WaitDropped(sessionId, name, requestId));
            afterWaitRemoved(record, events);
        }
        for (String name : List.copyOf(session.waitingPermits())) {
            SemaphoreRecord semaphore = semaphores.get(name);
            String requestId = semaphore.waiters.remove(sessionId);
            waiterCount--;
            session.removePermitWait(name);
            events.add(new Event.WaitDropped(sessionId, name, requestId));
            dropIfIdle(semaphore);
        }
        sessions.remove(sessionId);
        if (!session.requestId.isEmpty()) {
            sessionIdsByRequestId.remove(session.requestId);
        }
        session.ended();
        dropIfUnused(session.quotaIdentity);
        events.add(new Event.SessionEnded(sessionId, cause));
        return new Result.SessionEnded(sessionId, released);
    }

    /** Returns the usage counter of {@code quotaIdentity}, made (at zero) when it has none. */
    private UsageCounter counter(String quotaIdentity) {
        return usage.computeIfAbsent(quotaIdentity, identity -> new UsageCounter(identity, usageChanged));
    }

    /** Drops the counter of an identity whose count is back to zero, so that the index holds only identities in use. */
    private void dropIfUnused(String quotaIdentity) {
        UsageCounter counter = usage.get(quotaIdentity);
        if (counter != null && counter.isZero()) {
            usage.remove(quotaIdentity);
        }
    }

    /** Records each listed session's lease bound (clamped to its ttl), or clears it; ended sessions are skipped. */
    private Result checkpointLeases(Command.CheckpointLeases checkpoint) {
        int recorded = 0;
        for (Command.LeaseCheckpoint entry : checkpoint.checkpoints()) {
            SessionRecord session = sessions.get(entry.sessionId());
            if (session == null) {
                continue;
            }
            session.leaseBoundMillis = entry.remainingMillis() == Command.LeaseCheckpoint.RENEWED
                    ? SessionRecord.NO_LEASE_BOUND : Math.min(entry.remainingMillis(), session.ttlMillis);
            recorded++;
        }
        return new Result.LeasesCheckpointed(recorded);
    }

    private Result endLockDelay(String lock, List<Event> events) {
        LockRecord record = locks.get(lock);
        if (record == null || !record.delayed) {
            return new Result.DelayEnded(lock, false, null);
        }
        record.delayed = false;
        delayed.remove(lock);
        return new Result.DelayEnded(lock, true, grantNext(record, events));
    }

    private Result cancelWait(Command.CancelWait cancel, List<Event> events) {
        SessionRecord session = sessions.get(cancel.sessionId());
        if (session == null) {
            return new Result.WaitCancelled(false); // an ended session waits for nothing
        }
        Result.Rejected refused = refusal(session, cancel.secretHash());
        if (refused != null) {
            return refused;
        }
        SemaphoreRecord semaphore = semaphores.get(cancel.lock());
        if (semaphore != null) {
            return cancelPermitWait(session, semaphore, events);
        }
        LockRecord record = locks.get(cancel.lock());
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
            removeGroupWait(session, waiter, events); // a multi-lock waits as a unit and leaves as one
            return new Result.WaitCancelled(true);
        }
        record.waiters.remove(cancel.sessionId());
        waiterCount--;
        session.removeWaiting(record.name);
        events.add(new Event.WaitCancelled(cancel.sessionId(), record.name));
        afterWaitRemoved(record, events);
        return new Result.WaitCancelled(true);
    }

    // ---- multi-locks ----

    private Result acquireAll(Command.AcquireAll acquire, List<Event> events) {
        SessionRecord session = sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        Result again = acquireAllAgain(session, acquire);
        if (again != null) {
            return again;
        }
        boolean free = true;
        for (String name : acquire.locks()) {
            Result.Rejected reserved = reservedSlot(name);
            if (reserved != null) {
                return reserved;
            }
            LockRecord record = locks.get(name);
            free &= record == null || record.grantableNow(LockMode.EXCLUSIVE);
        }
        Result.Rejected bounded = checkAllLimits(session, acquire, free || acquire.waitQueued());
        if (bounded != null) {
            return bounded;
        }
        if (free) {
            List<FencingToken> tokens = new ArrayList<>(acquire.lockNames().size());
            for (LockName name : acquire.lockNames()) {
                tokens.add(issue(recordFor(name), session, acquire.requestId(), LockMode.EXCLUSIVE, events));
            }
            return new Result.GrantedAll(tokens);
        }
        if (!acquire.waitQueued()) {
            return busyOfAll(acquire);
        }
        LockRecord.Waiter waiter = new LockRecord.Waiter(acquire.requestId(), LockMode.EXCLUSIVE, acquire.locks());
        for (LockName name : acquire.lockNames()) {
            recordFor(name).waiters.put(session.id, waiter);
            session.addWaiting(name.value());
            waiterCount++;
            events.add(new Event.Queued(session.id, name.value(), acquire.requestId()));
        }
        String first = acquire.locks().get(0);
        return new Result.Queued(first, locks.get(first).positionOf(session.id));
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
            LockRecord record = locks.get(name);
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
            return new Result.Queued(first, locks.get(first).positionOf(session.id));
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
        int count = acquire.locks().size();
        if (taking && session.lockCount() + count > limits.locksPerSessionMax()) {
            return locksPerSessionExceeded(session);
        }
        int created = 0;
        for (String name : acquire.locks()) {
            LockRecord record = locks.get(name);
            created += record == null ? 1 : 0;
            if (record != null && record.waiters.size() >= limits.waitersPerLockMax()) {
                return new Result.Rejected(new LimitExceededException("waitersPerLockMax",
                        limits.waitersPerLockMax(), "cannot queue on lock '" + name + "': " + record.waiters.size()
                                + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
            }
            long base = record == null ? floor : Math.max(record.lastToken, floor);
            if (base >= FencingToken.VALUE_MAX) {
                return new Result.Rejected(new TokenExhaustedException(name, base));
            }
        }
        if (taking && locks.size() + created > limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(), "cannot create "
                    + created + " locks for a multi-lock: " + locks.size() + " locks exist, locksMax is "
                    + limits.locksMax()));
        }
        return null;
    }

    /** Returns the record of {@code name}, made (empty, above the floor) when it has none. */
    private LockRecord recordFor(LockName name) {
        LockRecord record = locks.get(name.value());
        if (record == null) {
            record = new LockRecord(name, floor);
            locks.put(record.name, record);
        }
        return record;
    }

    private Result busyOfAll(Command.AcquireAll acquire) {
        for (String name : acquire.locks()) {
            LockRecord record = locks.get(name);
            if (record != null && !record.grantableNow(LockMode.EXCLUSIVE)) {
                return new Result.Busy(name, record.anyHolderToken());
            }
        }
        throw new IllegalStateException("a multi-lock found busy has no busy lock: " + acquire.locks());
    }

    /** True when a multi-lock wait is first in line at every one of its locks and all of them are free. */
    private boolean groupGrantable(long sessionId, LockRecord.Waiter waiter) {
        for (String name : waiter.group()) {
            LockRecord record = locks.get(name);
            if (record.hasHolder() || record.delayed || record.waiters.keySet().iterator().next() != sessionId) {
                return false;
            }
        }
        return true;
    }

    /** Grants every lock of a grantable multi-lock wait in this step; returns the token of lock {@code of}. */
    private FencingToken grantGroup(SessionRecord session, LockRecord.Waiter waiter, String of, List<Event> events) {
        FencingToken asked = null;
        for (String name : waiter.group()) {
            LockRecord record = locks.get(name);
            record.waiters.remove(session.id);
            session.removeWaiting(name);
            waiterCount--;
            FencingToken token = issue(record, session, waiter.requestId(), LockMode.EXCLUSIVE, events);
            asked = name.equals(of) ? token : asked;
        }
        return asked;
    }

    /** Removes a multi-lock's waits from every one of its locks, granting what each freed queue lets in. */
    private void removeGroupWait(SessionRecord session, LockRecord.Waiter waiter, List<Event> events) {
        for (String name : waiter.group()) {
            LockRecord record = locks.get(name);
            if (record != null && record.waiters.remove(session.id) != null) {
                session.removeWaiting(name);
                waiterCount--;
                events.add(new Event.WaitCancelled(session.id, name));
                afterWaitRemoved(record, events);
            }
        }
    }

    // ---- semaphores ----

    private Result acquirePermit(Command.AcquirePermit acquire, List<Event> events) {
        SessionRecord session = sessions.get(acquire.sessionId());
        if (session == null) {
            return new Result.Rejected(new SessionExpiredException(acquire.sessionId()));
        }
        Result.Rejected refused = refusal(session, acquire.secretHash());
        if (refused != null) {
            return refused;
        }
        SemaphoreRecord semaphore = semaphores.get(acquire.semaphore());
        Result.Rejected invalid = checkPermitAcquire(acquire, semaphore);
        if (invalid != null) {
            return invalid;
        }
        if (semaphore != null) {
            FencingToken holding = permitOf(semaphore, session.id);
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
     * names would be too long, or (for a semaphore not in use) one of whose slot names is held as a plain lock.
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
        for (int permit = 0; semaphore == null && permit < acquire.permits(); permit++) {
            String slot = SemaphoreRecord.slotName(acquire.semaphore(), permit);
            if (locks.containsKey(slot)) {
                return new Result.Rejected(new InvalidArgumentException("semaphore", acquire.semaphore(),
                        "semaphore '" + InvalidArgumentException.printable(acquire.semaphore()) + "' cannot use slot '"
                                + InvalidArgumentException.printable(slot) + "': it is in use as a plain lock"));
            }
        }
        return null;
    }

    /** Returns the permit {@code sessionId} holds of {@code semaphore}, or null. Linear in its permits. */
    private FencingToken permitOf(SemaphoreRecord semaphore, long sessionId) {
        for (int permit = 0; permit < semaphore.permits; permit++) {
            LockRecord slot = locks.get(semaphore.slot(permit));
            if (slot != null && slot.holderSessionId == sessionId) {
                return slot.holderToken();
            }
        }
        return null;
    }

    /** Returns the lowest slot without a record (neither held nor delayed), or -1. Linear in the permits. */
    private int freeSlot(String semaphore, int permits) {
        for (int permit = 0; permit < permits; permit++) {
            if (!locks.containsKey(SemaphoreRecord.slotName(semaphore, permit))) {
                return permit;
            }
        }
        return -1;
    }

    private Result grantPermit(SessionRecord session, Command.AcquirePermit acquire, SemaphoreRecord existing,
            int permit, List<Event> events) {
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return locksPerSessionExceeded(session);
        }
        if (locks.size() >= limits.locksMax()) {
            return new Result.Rejected(new LimitExceededException("locksMax", limits.locksMax(),
                    "cannot take a permit of semaphore '" + acquire.semaphore() + "': " + locks.size()
                            + " locks exist, locksMax is " + limits.locksMax()));
        }
        if (floor >= FencingToken.VALUE_MAX) {
            return new Result.Rejected(new TokenExhaustedException(acquire.semaphore(), floor));
        }
        SemaphoreRecord semaphore = existing;
        if (semaphore == null) {
            semaphore = new SemaphoreRecord(acquire.semaphoreName(), acquire.permits());
            semaphores.put(semaphore.name, semaphore);
        }
        LockRecord slot = new LockRecord(LockName.of(semaphore.slot(permit)), floor);
        slot.semaphore = semaphore;
        locks.put(slot.name, slot);
        return new Result.Granted(issue(slot, session, acquire.requestId(), LockMode.EXCLUSIVE, events));
    }

    private Result enqueuePermit(SessionRecord session, Command.AcquirePermit acquire, SemaphoreRecord semaphore,
            List<Event> events) {
        if (semaphore.waiters.size() >= limits.waitersPerLockMax()) {
            return new Result.Rejected(new LimitExceededException("waitersPerLockMax", limits.waitersPerLockMax(),
                    "cannot queue on semaphore '" + semaphore.name + "': " + semaphore.waiters.size()
                            + " sessions wait, waitersPerLockMax is " + limits.waitersPerLockMax()));
        }
        if (session.lockCount() >= limits.locksPerSessionMax()) {
            return locksPerSessionExceeded(session);
        }
        int position = semaphore.waiters.size();
        semaphore.waiters.put(session.id, acquire.requestId());
        session.addPermitWait(semaphore.name);
        waiterCount++;
        events.add(new Event.Queued(session.id, semaphore.name, acquire.requestId()));
        return new Result.Queued(semaphore.name, position);
    }

    /**
     * Grants a freed permit slot (no holder, no delay) to its semaphore's next waiter, under a token above every
     * token of that slot; or drops the slot's record, and the semaphore's when it is left idle. Returns the new
     * token, or null.
     */
    private FencingToken grantSlot(LockRecord slot, List<Event> events) {
        SemaphoreRecord semaphore = slot.semaphore;
        if (semaphore.waiters.isEmpty() || Math.max(slot.lastToken, floor) >= FencingToken.VALUE_MAX) {
            dropIfIdle(slot);
            dropIfIdle(semaphore);
            return null;
        }
        Iterator<Map.Entry<Long, String>> queue = semaphore.waiters.entrySet().iterator();
        Map.Entry<Long, String> head = queue.next();
        queue.remove();
        waiterCount--;
        SessionRecord session = sessions.get(head.getKey());
        boolean listed = session.removePermitWait(semaphore.name);
        assert listed : "session " + session.id + " did not list its wait on semaphore " + semaphore.name;
        return issue(slot, session, head.getValue(), LockMode.EXCLUSIVE, events);
    }

    /** Drops a semaphore that no slot record and no waiter keeps; linear in its permits. */
    private void dropIfIdle(SemaphoreRecord semaphore) {
        if (semaphore.waiters.isEmpty() && freeSlotCount(semaphore) == semaphore.permits) {
            semaphores.remove(semaphore.name);
        }
    }

    private int freeSlotCount(SemaphoreRecord semaphore) {
        int free = 0;
        for (int permit = 0; permit < semaphore.permits; permit++) {
            free += locks.containsKey(semaphore.slot(permit)) ? 0 : 1;
        }
        return free;
    }

    private Result cancelPermitWait(SessionRecord session, SemaphoreRecord semaphore, List<Event> events) {
        FencingToken holding = permitOf(semaphore, session.id);
        if (holding != null) {
            return new Result.Granted(holding); // the grant won the race against the wait's deadline
        }
        if (semaphore.waiters.remove(session.id) == null) {
            return new Result.WaitCancelled(false);
        }
        waiterCount--;
        session.removePermitWait(semaphore.name);
        events.add(new Event.WaitCancelled(session.id, semaphore.name));
        dropIfIdle(semaphore);
        return new Result.WaitCancelled(true);
    }

    /** The state of one semaphore in use, or empty when it has no record (unused, or idle and dropped). */
    public Optional<SemaphoreView> describeSemaphore(String semaphore) {
        SemaphoreRecord record = semaphores.get(semaphore);
        if (record == null) {
            return Optional.empty();
        }
        List<LockView> slots = new ArrayList<>(record.permits);
        for (int permit = 0; permit < record.permits; permit++) {
            LockRecord slot = locks.get(record.slot(permit));
            slots.add(slot == null ? null : view(slot));
        }
        List<LockView.WaiterView> queue = new ArrayList<>(record.waiters.size());
        for (Map.Entry<Long, String> waiter : record.waiters.entrySet()) {
            queue.add(new LockView.WaiterView(waiter.getKey(), waiter.getValue()));
        }
        return Optional.of(new SemaphoreView(record.name, record.permits, slots, queue));
    }

    /** The bounds this machine enforces. */
    public Limits limits() {
        return limits;
    }

    /** The state of one lock, or empty when it has no record (never used, or idle and dropped). */
    public Optional<LockView> describe(String lock) {
        LockRecord record = locks.get(lock);
        return record == null ? Optional.empty() : Optional.of(view(record));
    }

    /** Locks with a record (held, waited for or delayed) whose names start with {@code prefix}, in name order. */
    public List<LockView> list(String prefix, int limit) {
        Objects.requireNonNull(prefix, "prefix");
        if (limit < 0) {
            throw new IllegalArgumentException("limit must not be negative: " + limit);
        }
        List<LockView> views = new ArrayList<>(Math.min(limit, locks.size()));
        for (LockRecord record : locks.tailMap(prefix, true).values()) {
            if (views.size() >= limit || !record.name.startsWith(prefix)) {
                break;
            }
            views.add(view(record));
        }
        return views;
    }

    private LockView view(LockRecord record) {
        List<LockView.SharedHolderView> shared = new ArrayList<>(record.sharedHolders.size());
        for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
            shared.add(new LockView.SharedHolderView(FencingToken.of(record.lockName, holder.getValue(),
                    LockMode.SHARED), holder.getKey(), sessions.get(holder.getKey()).identity));
        }
        return record.view(record.held() ? sessions.get(record.holderSessionId).identity : null, shared);
    }

    /**
     * Tells what a token is now. The lock's record gives its last token, or the floor when it has none; a value
     * above it was never issued, a holder's (exclusive, or one of the shared holders', in the mode it was granted
     * in) is current, another lower one is superseded, and the last one ended.
     */
    public Validation validate(FencingToken token) {
        Objects.requireNonNull(token, "token");
        LockRecord record = locks.get(token.lock());
        long lastToken = record == null ? floor : record.lastToken;
        if (token.value() > lastToken) {
            return new Validation(Validation.Status.NEVER_ISSUED, lastToken, 0, null, null);
        }
        if (record != null && token.mode() == LockMode.EXCLUSIVE && record.held()
                && record.holderTokenValue == token.value()) {
            return new Validation(Validation.Status.CURRENT, lastToken, record.holderSessionId,
                    sessions.get(record.holderSessionId).identity, null);
        }
        if (record != null && token.mode() == LockMode.SHARED) {
            for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
                if (holder.getValue() == token.value()) {
                    return new Validation(Validation.Status.CURRENT, lastToken, holder.getKey(),
                            sessions.get(holder.getKey()).identity, null);
                }
            }
        }
        if (token.value() < lastToken) {
            return new Validation(Validation.Status.SUPERSEDED, lastToken, 0, null, null);
        }
        return new Validation(Validation.Status.ENDED, lastToken, 0, null, record == null ? null : record.lastEnd);
    }

    /** The state of one open session, or empty when it is unknown or ended. */
    public Optional<SessionView> session(long sessionId) {
        SessionRecord session = sessions.get(sessionId);
        return session == null ? Optional.empty() : Optional.of(session.view());
    }

    /** All open sessions, in id order. */
    public Collection<SessionView> sessions() {
        List<SessionView> views = new ArrayList<>(sessions.size());
        for (SessionRecord session : sessions.values()) {
            views.add(session.view());
        }
        return views;
    }

    /** Names of locks in lock-delay, for a new leader to schedule their ends. */
    public List<String> delayedLocks() {
        return List.copyOf(delayed);
    }

    /** The highest last token of every dropped lock record; every new grant of any lock exceeds it. */
    public long floor() {
        return floor;
    }

    /** The number of open sessions. */
    public int sessionCount() {
        return sessions.size();
    }

    /** The number of lock records: locks held, waited for or delayed. */
    public int lockCount() {
        return locks.size();
    }

    /** The number of queued waits over all locks. */
    public int waiterCount() {
        return waiterCount;
    }

    /** What the sessions of {@code quotaIdentity} hold now; {@link IdentityUsage#NONE} when it has no session. */
    public IdentityUsage usage(String quotaIdentity) {
        UsageCounter counter = usage.get(quotaIdentity);
        return counter == null ? IdentityUsage.NONE : counter.view();
    }

    /** The usage of every identity with an open session, in no particular order. */
    public Map<String, IdentityUsage> usageByIdentity() {
        Map<String, IdentityUsage> views = new HashMap<>(usage.size() * 2);
        for (UsageCounter counter : usage.values()) {
            views.put(counter.identity, counter.view());
        }
        return views;
    }

    /**
     * Returns the usage of each identity whose usage changed since the last call, in the order first changed, and
     * forgets the changes: {@link IdentityUsage#NONE} for an identity whose sessions all ended. The server publishes
     * them after each log entry, for its leader to check quotas against without this machine's lock.
     */
    public Map<String, IdentityUsage> takeUsageChanges() {
        Map<String, IdentityUsage> changes = new LinkedHashMap<>();
        for (UsageCounter counter : usageChanged) {
            counter.unlist();
            // A counter dropped at zero and made again holds the newer count: it is the one in the index.
            UsageCounter current = usage.get(counter.identity);
            changes.put(counter.identity, current == null ? IdentityUsage.NONE : current.view());
        }
        usageChanged.clear();
        return changes;
    }

    /** The session opened with {@code requestId} (a retried open would return it), or empty. */
    public Optional<SessionView> sessionOpenedBy(String requestId) {
        Long id = requestId.isEmpty() ? null : sessionIdsByRequestId.get(requestId);
        return id == null ? Optional.empty() : session(id);
    }

    /**
     * True when the session holds or waits for {@code name}: a lock, or a semaphore one of whose permits it holds or
     * waits for. An acquire of it again takes nothing more (it is a retry), so a quota need not make room for it.
     */
    public boolean takesPart(long sessionId, String name) {
        SessionRecord session = sessions.get(sessionId);
        if (session == null) {
            return false;
        }
        if (session.held().contains(name) || session.waiting().contains(name)
                || session.waitingPermits().contains(name)) {
            return true;
        }
        SemaphoreRecord semaphore = semaphores.get(name);
        return semaphore != null && permitOf(semaphore, sessionId) != null;
    }

    /**
     * Checks every invariant of the state over all sessions and locks (linear: for tests and restored snapshots).
     *
     * @throws IllegalStateException naming the values when one is broken
     */
    public void checkInvariants() {
        if (floor < 0 || floor > FencingToken.VALUE_MAX) {
            throw broken("floor %d is outside [0, %d]", floor, FencingToken.VALUE_MAX);
        }
        int waits = 0;
        for (LockRecord record : locks.values()) {
            checkLock(record);
            waits += record.waiters.size();
        }
        for (SemaphoreRecord semaphore : semaphores.values()) {
            checkSemaphore(semaphore);
            waits += semaphore.waiters.size();
        }
        for (SessionRecord session : sessions.values()) {
            checkSession(session);
        }
        if (waits != waiterCount) {
            throw broken("waiterCount %d but the queues hold %d waits", waiterCount, waits);
        }
        int requestIds = 0;
        for (SessionRecord session : sessions.values()) {
            requestIds += session.requestId.isEmpty() ? 0 : 1;
        }
        if (requestIds != sessionIdsByRequestId.size()) {
            throw broken("%d sessions have a request id but the index holds %d", requestIds,
                    sessionIdsByRequestId.size());
        }
        checkUsage();
    }

    /** The usage index holds, for each identity with a session and no other, the counts its sessions make up. */
    private void checkUsage() {
        Map<String, int[]> counted = new HashMap<>();
        for (SessionRecord session : sessions.values()) {
            int[] counts = counted.computeIfAbsent(session.quotaIdentity, identity -> new int[3]);
            counts[0]++;
            counts[1] += session.lockCount();
            counts[2] += session.waitCount();
        }
        if (!counted.keySet().equals(usage.keySet())) {
            throw broken("the usage index lists identities %s but sessions have %s", usage.keySet(),
                    counted.keySet());
        }
        for (Map.Entry<String, int[]> entry : counted.entrySet()) {
            int[] counts = entry.getValue();
            IdentityUsage indexed = usage.get(entry.getKey()).view();
            if (!indexed.equals(new IdentityUsage(counts[0], counts[1], counts[2]))) {
                throw broken("identity %s has %s in the usage index but its sessions have %d sessions, %d locks, %d"
                        + " waiters", entry.getKey(), indexed, counts[0], counts[1], counts[2]);
            }
        }
    }

    private void checkLock(LockRecord record) {
        String name = record.name;
        if (record.idle()) {
            throw broken("lock %s is idle (no holder, waiter or delay) but still has a record", name);
        }
        if (record.lastToken < 0 || record.lastToken > FencingToken.VALUE_MAX) {
            throw broken("lock %s lastToken %d is outside [0, %d]", name, record.lastToken, FencingToken.VALUE_MAX);
        }
        if (record.held() != (record.holderTokenValue != FencingToken.NONE)) {
            throw broken("lock %s has holder session %d but token %d", name, record.holderSessionId,
                    record.holderTokenValue);
        }
        if (record.held()) {
            checkHolder(record);
        }
        checkSharedHolders(record);
        if (record.semaphore != null && semaphores.get(record.semaphore.name) != record.semaphore) {
            throw broken("slot %s belongs to semaphore %s, which has no record", name, record.semaphore.name);
        }
        if (!record.waiters.isEmpty() && !record.held() && !record.delayed) {
            // Only an exclusive waiter at the head, held back by readers, may wait without a writer or a delay.
            Map.Entry<Long, LockRecord.Waiter> first = record.waiters.entrySet().iterator().next();
            LockRecord.Waiter head = first.getValue();
            if (head.group() != null) {
                if (groupGrantable(first.getKey(), head)) {
                    throw broken("lock %s is free with multi-lock %s of session %d first in line at all its locks,"
                            + " all free: it should have been granted", name, head.group(), first.getKey());
                }
            } else if (head.mode() != LockMode.EXCLUSIVE || record.sharedHolders.isEmpty()) {
                throw broken("lock %s has %d waiters (the first %s) but no exclusive holder, no delay and %d"
                        + " shared holders: the head should have been granted", name, record.waiters.size(),
                        head.mode().text(), record.sharedHolders.size());
            }
        }
        if (record.delayed != delayed.contains(name)) {
            throw broken("lock %s delayed=%s but the delayed set says %s", name, record.delayed,
                    delayed.contains(name));
        }
        for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
            SessionRecord session = sessions.get(waiter.getKey());
            if (session == null || !session.waiting().contains(name)) {
                throw broken("waiter session %d of lock %s is %s", waiter.getKey(), name,
                        session == null ? "unknown" : "not listing the wait");
            }
            if (record.tokenOf(waiter.getKey()) != null) {
                throw broken("session %d both holds and waits on lock %s", waiter.getKey(), name);
            }
            checkGroupWait(waiter.getKey(), waiter.getValue(), name);
        }
    }

    private void checkSemaphore(SemaphoreRecord semaphore) {
        if (semaphore.permits < 1 || semaphore.permits > Limits.PERMITS_MAX) {
            throw broken("semaphore %s has %d permits", semaphore.name, semaphore.permits);
        }
        int free = freeSlotCount(semaphore);
        if (free == semaphore.permits && semaphore.waiters.isEmpty()) {
            throw broken("semaphore %s is idle (no slot held or delayed, no waiter) but has a record", semaphore.name);
        }
        if (free > 0 && !semaphore.waiters.isEmpty()) {
            throw broken("semaphore %s has %d free permits and %d waiters: the head should have been granted",
                    semaphore.name, free, semaphore.waiters.size());
        }
        for (int permit = 0; permit < semaphore.permits; permit++) {
            LockRecord slot = locks.get(semaphore.slot(permit));
            if (slot != null && (slot.semaphore != semaphore || !slot.waiters.isEmpty()
                    || !slot.sharedHolders.isEmpty())) {
                throw broken("slot %s of semaphore %s is %s", slot.name, semaphore.name, slot.semaphore != semaphore
                        ? "not linked to it" : "waited for or shared, as no slot may be");
            }
        }
        for (Long waiter : semaphore.waiters.keySet()) {
            SessionRecord session = sessions.get(waiter);
            if (session == null || !session.waitingPermits().contains(semaphore.name)) {
                throw broken("waiter session %d of semaphore %s is %s", waiter, semaphore.name,
                        session == null ? "unknown" : "not listing the wait");
            }
            if (permitOf(semaphore, waiter) != null) {
                throw broken("session %d both holds a permit of and waits on semaphore %s", waiter, semaphore.name);
            }
        }
    }

    /** A multi-lock wait names this lock and waits, the same wait, in the queue of every lock it names. */
    private void checkGroupWait(long sessionId, LockRecord.Waiter waiter, String lock) {
        if (waiter.group() == null) {
            return;
        }
        if (!waiter.group().contains(lock)) {
            throw broken("multi-lock wait %s of session %d is queued on lock %s, which it does not name",
                    waiter.group(), sessionId, lock);
        }
        for (String name : waiter.group()) {
            LockRecord other = locks.get(name);
            if (other == null || !waiter.equals(other.waiters.get(sessionId))) {
                throw broken("multi-lock wait %s of session %d is missing from the queue of lock %s",
                        waiter.group(), sessionId, name);
            }
        }
    }

    private void checkSharedHolders(LockRecord record) {
        if (record.sharedHolders.isEmpty()) {
            return;
        }
        if (record.held() || record.delayed) {
            throw broken("lock %s has %d shared holders and %s", record.name, record.sharedHolders.size(),
                    record.held() ? "the exclusive holder session " + record.holderSessionId : "a lock-delay");
        }
        for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
            if (holder.getValue() < 1 || holder.getValue() > record.lastToken) {
                throw broken("lock %s shared holder %d has token %d outside [1, lastToken %d]", record.name,
                        holder.getKey(), holder.getValue(), record.lastToken);
            }
            SessionRecord session = sessions.get(holder.getKey());
            if (session == null || !session.held().contains(record.name)) {
                throw broken("shared holder session %d of lock %s is %s", holder.getKey(), record.name,
                        session == null ? "unknown" : "not listing the lock as held");
            }
        }
    }

    private void checkHolder(LockRecord record) {
        if (record.delayed) {
            throw broken("lock %s is delayed but held by session %d", record.name, record.holderSessionId);
        }
        if (record.holderTokenValue < 1 || record.holderTokenValue > record.lastToken) {
            throw broken("lock %s holder token %d is outside [1, lastToken %d]", record.name,
                    record.holderTokenValue, record.lastToken);
        }
        SessionRecord holder = sessions.get(record.holderSessionId);
        if (holder == null || !holder.held().contains(record.name)) {
            throw broken("holder session %d of lock %s is %s", record.holderSessionId, record.name,
                    holder == null ? "unknown" : "not listing the lock as held");
        }
    }

    private void checkSession(SessionRecord session) {
        if (session.id < 1 || session.id > sessionIdLast) {
            throw broken("session id %d is outside [1, last id %d]", session.id, sessionIdLast);
        }
        for (String name : session.held()) {
            LockRecord record = locks.get(name);
            if (record == null || record.tokenOf(session.id) == null) {
                throw broken("session %d lists lock %s as held but its holder is %s", session.id, name,
                        record == null ? "none (no record)" : record.holderSessionId + " (shared holders "
                                + record.sharedHolders.keySet() + ")");
            }
            if (session.waiting().contains(name)) {
                throw broken("session %d both holds and waits on lock %s", session.id, name);
            }
        }
        for (String name : session.waiting()) {
            LockRecord record = locks.get(name);
            if (record == null || !record.waiters.containsKey(session.id)) {
                throw broken("session %d lists a wait on lock %s that its queue lacks", session.id, name);
            }
        }
        for (String name : session.waitingPermits()) {
            SemaphoreRecord semaphore = semaphores.get(name);
            if (semaphore == null || !semaphore.waiters.containsKey(session.id)) {
                throw broken("session %d lists a wait on semaphore %s that its queue lacks", session.id, name);
            }
        }
        if (!session.requestId.isEmpty()
                && !Long.valueOf(session.id).equals(sessionIdsByRequestId.get(session.requestId))) {
            throw broken("session %d request id '%s' maps to session %s", session.id, session.requestId,
                    sessionIdsByRequestId.get(session.requestId));
        }
    }

    private static IllegalStateException broken(String format, Object... values) {
        return new IllegalStateException("lock state machine invariant broken: " + String.format(format, values));
    }

    /**
     * Writes the whole state; {@link #readSnapshot} restores an equal machine. A session is written with its
     * identity and the hash of its secret: the secret itself is never in the state.
     */
    public void writeSnapshot(DataOutput out) throws IOException {
        out.writeByte(SNAPSHOT_VERSION);
        out.writeLong(sessionIdLast);
        out.writeLong(floor);
        out.writeInt(sessions.size());
        for (SessionRecord session : sessions.values()) {
            out.writeLong(session.id);
            out.writeLong(session.ttlMillis);
            out.writeUTF(session.requestId);
            out.writeUTF(session.identity);
            out.write(session.secretHash.bytes());
            out.writeUTF(session.quotaIdentity);
            out.writeLong(session.leaseBoundMillis);
            writeNames(out, session.held());
            writeNames(out, session.waiting());
        }
        out.writeInt(locks.size());
        for (LockRecord record : locks.values()) {
            out.writeUTF(record.name);
            out.writeLong(record.lastToken);
            out.writeLong(record.holderSessionId);
            out.writeLong(record.holderTokenValue);
            out.writeBoolean(record.delayed);
            out.writeByte(record.lastEnd == null ? -1 : record.lastEnd.ordinal());
            out.writeInt(record.waiters.size());
            for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
                out.writeLong(waiter.getKey());
                out.writeUTF(waiter.getValue().requestId());
                out.writeByte(waiter.getValue().mode().ordinal());
                List<String> group = waiter.getValue().group();
                writeNames(out, group == null ? List.of() : group);
            }
            out.writeInt(record.sharedHolders.size());
            for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
                out.writeLong(holder.getKey());
                out.writeLong(holder.getValue());
            }
        }
        writeSemaphores(out);
    }

    /** Writes the semaphores in use (since version 3): name, permits, queue; their slots are among the locks. */
    private void writeSemaphores(DataOutput out) throws IOException {
        out.writeInt(semaphores.size());
        for (SemaphoreRecord semaphore : semaphores.values()) {
            out.writeUTF(semaphore.name);
            out.writeInt(semaphore.permits);
            out.writeInt(semaphore.waiters.size());
            for (Map.Entry<Long, String> waiter : semaphore.waiters.entrySet()) {
                out.writeLong(waiter.getKey());
                out.writeUTF(waiter.getValue());
            }
        }
    }

    private static void writeNames(DataOutput out, Collection<String> names) throws IOException {
        out.writeInt(names.size());
        for (String name : names) {
            out.writeUTF(name);
        }
    }

    /**
     * Reads a state written by {@link #writeSnapshot}, or by the previous release (version 1). The state is checked
     * whole: a corrupt snapshot fails with an {@link IOException} saying what is wrong, never yields a machine that
     * breaks its invariants.
     *
     * <p>A version-3 snapshot (before quotas) has the layout of version 4 without a session's quota identity and lease
     * bound: its sessions count against their own identity (every anonymous caller's together) and have no recorded
     * bound, so a new leader gives them their whole ttl, as that release did.
     *
     * <p>A version-2 snapshot (before read-write locks) has the layout of version 3 without a waiter's mode and a
     * lock's shared holders: its waiters are exclusive and it has no shared holders.
     *
     * <p>A version-1 snapshot has the same layout as version 2 without a session's identity and secret hash. Its sessions are
     * restored with the identity {@link CommandCodec#VERSION_ONE_IDENTITY} and the hash {@link SecretHash#NONE}:
     * nobody can act for them, so they expire at the end of their lease and their locks pass on with higher tokens;
     * every token counter and the floor are kept as they were, so every later grant is above every token the old
     * state issued. The next snapshot is written as version 4, with the {@link SecretHash#NONE} bytes.
     */
    public static LockStateMachine readSnapshot(DataInput in, Limits limits) throws IOException {
        Objects.requireNonNull(in, "in");
        int version = in.readUnsignedByte();
        if (version < SNAPSHOT_VERSION_ONE || version > SNAPSHOT_VERSION) {
            throw new IOException("unsupported lock state snapshot version " + version + ", expected "
                    + SNAPSHOT_VERSION + " (or " + SNAPSHOT_VERSION_THREE + ", " + SNAPSHOT_VERSION_TWO + " or "
                    + SNAPSHOT_VERSION_ONE + ", of earlier releases)");
        }
        LockStateMachine machine = new LockStateMachine(limits);
        try {
            machine.sessionIdLast = in.readLong();
            machine.floor = in.readLong();
            machine.readSessions(in, version);
            machine.readLocks(in, version);
            if (version >= SNAPSHOT_VERSION_THREE) {
                machine.readSemaphores(in);
            }
            machine.checkInvariants();
            machine.takeUsageChanges(); // a machine read whole starts with nothing to publish but its whole usage
        } catch (IllegalStateException | IllegalArgumentException | FencerException e) {
            throw new IOException("corrupt lock state snapshot: " + e.getMessage(), e);
        }
        return machine;
    }

    private void readSessions(DataInput in, int version) throws IOException {
        int count = readCount(in, "sessions");
        for (int i = 0; i < count; i++) {
            long id = in.readLong();
            long ttlMillis = in.readLong();
            String requestId = in.readUTF();
            Limits.checkRequestId(requestId, true);
            String identity = CommandCodec.VERSION_ONE_IDENTITY;
            SecretHash secretHash = SecretHash.NONE;
            if (version != SNAPSHOT_VERSION_ONE) {
                identity = in.readUTF();
                Limits.checkIdentity(identity);
                byte[] hash = new byte[SecretHash.BYTES];
                in.readFully(hash);
                secretHash = SecretHash.fromBytes(hash);
            }
            String quotaIdentity = identity;
            long leaseBoundMillis = SessionRecord.NO_LEASE_BOUND;
            if (version >= SNAPSHOT_VERSION) {
                quotaIdentity = in.readUTF();
                Limits.checkIdentity(quotaIdentity);
                leaseBoundMillis = in.readLong();
                if (leaseBoundMillis < SessionRecord.NO_LEASE_BOUND || leaseBoundMillis > ttlMillis) {
                    throw new IOException("session " + id + " has lease bound " + leaseBoundMillis
                            + " ms outside [-1, ttl " + ttlMillis + " ms]");
                }
            }
            SessionRecord session = new SessionRecord(id, ttlMillis, requestId, identity, secretHash, quotaIdentity,
                    counter(quotaIdentity));
            session.leaseBoundMillis = leaseBoundMillis;
            if (sessions.put(id, session) != null) {
                throw new IOException("snapshot lists session " + id + " twice");
            }
            if (!requestId.isEmpty() && sessionIdsByRequestId.put(requestId, id) != null) {
                throw new IOException("snapshot lists request id '" + requestId + "' for two sessions");
            }
            Set<String> held = new LinkedHashSet<>();
            readNames(in, held, "held locks of session " + id);
            held.forEach(session::addHeld);
            Set<String> waiting = new LinkedHashSet<>();
            readNames(in, waiting, "waits of session " + id);
            waiting.forEach(session::addWaiting);
        }
    }

    private static void readNames(DataInput in, Collection<String> names, String what) throws IOException {
        int count = readCount(in, what);
        for (int i = 0; i < count; i++) {
            String name = LockNames.check(in.readUTF());
            if (!names.add(name)) {
                throw new IOException("snapshot lists lock '" + name + "' twice in " + what);
            }
        }
    }

    private void readLocks(DataInput in, int version) throws IOException {
        int count = readCount(in, "locks");
        for (int i = 0; i < count; i++) {
            LockRecord record = new LockRecord(LockName.of(in.readUTF()), in.readLong());
            record.holderSessionId = in.readLong();
            record.holderTokenValue = in.readLong();
            record.delayed = in.readBoolean();
            int lastEnd = in.readByte();
            if (lastEnd < -1 || lastEnd >= EndCause.values().length) {
                throw new IOException("lock '" + record.name + "' has unknown end cause " + lastEnd);
            }
            record.lastEnd = lastEnd == -1 ? null : EndCause.values()[lastEnd];
            int waiters = readCount(in, "waiters of lock " + record.name);
            for (int w = 0; w < waiters; w++) {
                long sessionId = in.readLong();
                String requestId = in.readUTF();
                Limits.checkRequestId(requestId, false);
                LockMode mode = version >= SNAPSHOT_VERSION_THREE ? readMode(in, record.name) : LockMode.EXCLUSIVE;
                List<String> group = null;
                if (version >= SNAPSHOT_VERSION_THREE) {
                    List<String> names = new ArrayList<>();
                    readNames(in, names, "multi-lock of session " + sessionId + " on lock " + record.name);
                    group = names.isEmpty() ? null : List.copyOf(names);
                }
                if (record.waiters.put(sessionId, new LockRecord.Waiter(requestId, mode, group)) != null) {
                    throw new IOException("session " + sessionId + " waits twice on lock '" + record.name + "'");
                }
            }
            if (version >= SNAPSHOT_VERSION_THREE) {
                readSharedHolders(in, record);
            }
            if (locks.put(record.name, record) != null) {
                throw new IOException("snapshot lists lock '" + record.name + "' twice");
            }
            if (record.delayed) {
                delayed.add(record.name);
            }
            waiterCount += record.waiters.size();
        }
    }

    /** Reads the semaphores, links their slots and rebuilds the sessions' permit waits from their queues. */
    private void readSemaphores(DataInput in) throws IOException {
        int count = readCount(in, "semaphores");
        for (int i = 0; i < count; i++) {
            LockName name = LockName.of(in.readUTF());
            int permits = in.readInt();
            Limits.checkPermits(name.value(), permits);
            SemaphoreRecord semaphore = new SemaphoreRecord(name, permits);
            int waiters = readCount(in, "waiters of semaphore " + name.value());
            for (int w = 0; w < waiters; w++) {
                long sessionId = in.readLong();
                String requestId = in.readUTF();
                Limits.checkRequestId(requestId, false);
                SessionRecord session = sessions.get(sessionId);
                if (session == null || semaphore.waiters.put(sessionId, requestId) != null) {
                    throw new IOException("semaphore '" + name.value() + "' lists waiter session " + sessionId
                            + (session == null ? ", which is unknown" : " twice"));
                }
                session.addPermitWait(name.value());
            }
            if (semaphores.put(semaphore.name, semaphore) != null) {
                throw new IOException("snapshot lists semaphore '" + semaphore.name + "' twice");
            }
            for (int permit = 0; permit < permits; permit++) {
                LockRecord slot = locks.get(semaphore.slot(permit));
                if (slot != null) {
                    slot.semaphore = semaphore;
                }
            }
            waiterCount += semaphore.waiters.size();
        }
    }

    private static LockMode readMode(DataInput in, String lock) throws IOException {
        int mode = in.readByte();
        if (mode < 0 || mode >= LockMode.values().length) {
            throw new IOException("a waiter of lock '" + lock + "' has unknown mode " + mode);
        }
        return LockMode.values()[mode];
    }

    private static void readSharedHolders(DataInput in, LockRecord record) throws IOException {
        int holders = readCount(in, "shared holders of lock " + record.name);
        for (int h = 0; h < holders; h++) {
            long sessionId = in.readLong();
            if (record.sharedHolders.put(sessionId, in.readLong()) != null) {
                throw new IOException("session " + sessionId + " shares lock '" + record.name + "' twice");
            }
        }
    }

    /** Reads a count; the items it counts are read one by one, so a corrupt count fails at end of input. */
    private static int readCount(DataInput in, String what) throws IOException {
        int count = in.readInt();
        if (count < 0) {
            throw new IOException("snapshot has a negative count " + count + " of " + what);
        }
        return count;
    }
}

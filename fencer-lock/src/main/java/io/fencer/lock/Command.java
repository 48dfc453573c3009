package io.fencer.lock;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A command to the lock state machine: the only way its state changes. Commands are replicated in the
 * Raft log and applied in log order on every replica; applying the same commands to the same state gives
 * the same results and events everywhere. Commands carry no time: the leader decides when a session
 * expires or a lock-delay ends and proposes the command then.
 *
 * <p>A command that names a lock holds a {@link LockName}, checked where the command was made (the server's
 * request checks, or the codec decoding a log entry): the state machine and the tokens it issues never check the
 * name again.
 *
 * <p>A command a client makes for a session carries the {@link SecretHash} of the secret the client presented, never
 * the secret: the state machine compares it with the session's own hash while it applies the command, so the
 * check and the action are one atomic step on every replica, whatever the leader checked before proposing.
 * Commands the leader makes by itself ({@link ExpireSession}, {@link EndLockDelay}) act for no client and carry
 * none.
 */
public sealed interface Command {

    /**
     * Opens a session with a lease of {@code ttlMillis} for {@code identity}, whose secret has the hash
     * {@code secretHash} (the leader drew the secret). A retry with the same non-empty request id returns the same
     * session while it lives, if it comes from the same identity with the same secret hash; otherwise it is
     * refused, so that a retry never hands out another secret for a session opened before.
     *
     * <p>{@code quotaIdentity} is who the session counts against for per-identity quotas: the identity itself for a
     * caller with a client certificate, and for an anonymous caller its network address (every anonymous caller has
     * the same identity, so it cannot tell them apart). The quotas are enforced by the leader before it proposes
     * (the state machine only keeps the counts, {@link IdentityUsage}), so that replicas never diverge whatever
     * quotas their configurations set; it is recorded here so that every replica, and a leader elected or restarted
     * later, counts the session where the leader that opened it did. Entries written before it existed count
     * against {@code identity}.
     */
    record OpenSession(String requestId, long ttlMillis, String identity, SecretHash secretHash,
            String quotaIdentity) implements Command {
        public OpenSession {
            Limits.checkRequestId(requestId, true);
            Limits.checkIdentity(identity);
            Objects.requireNonNull(secretHash, "secretHash");
            Limits.checkIdentity(quotaIdentity);
        }

        /** A session whose quotas count against its opener's identity: a caller with a client certificate. */
        public OpenSession(String requestId, long ttlMillis, String identity, SecretHash secretHash) {
            this(requestId, ttlMillis, identity, secretHash, identity);
        }
    }

    /**
     * Closes a session: releases its locks (granting next waiters) and drops its waits. Unknown ids are a no-op;
     * a known session with another secret hash is refused.
     */
    record CloseSession(long sessionId, SecretHash secretHash) implements Command {
        public CloseSession {
            Objects.requireNonNull(secretHash, "secretHash");
        }
    }

    /**
     * Ends a session whose lease passed, as decided by the leader. With {@code lockDelay}, every lock the session
     * held stays unavailable until an {@link EndLockDelay} for it (Chubby's lock-delay); without, the next waiter
     * is granted at once.
     */
    record ExpireSession(long sessionId, boolean lockDelay) implements Command {}

    /**
     * Acquires {@code lockName} for a session in {@code mode}: granted at once when the FIFO rule allows it (an
     * exclusive acquire when nobody holds or waits; a shared one when no exclusive holder holds and nobody waits);
     * otherwise queued when {@code waitQueued}, or refused as busy when not. The holder acquiring again in the same
     * mode gets its grant back; in the other mode it is refused (there is no upgrade or downgrade); a retry while
     * waiting keeps its place.
     */
    record Acquire(long sessionId, SecretHash secretHash, LockName lockName, String requestId, boolean waitQueued,
            LockMode mode) implements Command {
        public Acquire {
            Objects.requireNonNull(secretHash, "secretHash");
            Objects.requireNonNull(lockName, "lockName");
            Limits.checkRequestId(requestId, false);
            Objects.requireNonNull(mode, "mode");
        }

        /** An exclusive acquire. */
        public Acquire(long sessionId, SecretHash secretHash, LockName lockName, String requestId,
                boolean waitQueued) {
            this(sessionId, secretHash, lockName, requestId, waitQueued, LockMode.EXCLUSIVE);
        }

        /** As the canonical constructor, checking {@code lock} first; for callers that hold a plain string. */
        public Acquire(long sessionId, SecretHash secretHash, String lock, String requestId, boolean waitQueued,
                LockMode mode) {
            this(sessionId, secretHash, LockName.of(lock), requestId, waitQueued, mode);
        }

        /** An exclusive acquire of a plain-string lock name, checked first. */
        public Acquire(long sessionId, SecretHash secretHash, String lock, String requestId, boolean waitQueued) {
            this(sessionId, secretHash, LockName.of(lock), requestId, waitQueued, LockMode.EXCLUSIVE);
        }

        /** Returns the lock's name as a string: the key of the state machine's maps. */
        public String lock() {
            return lockName.value();
        }
    }

    /**
     * Removes a session's queued wait for a lock (its wait deadline passed). A no-op when not waiting. The wait is
     * found by session and lock; {@code requestId} (which may be null) is carried for the record only.
     */
    record CancelWait(long sessionId, SecretHash secretHash, LockName lockName, String requestId)
            implements Command {
        public CancelWait {
            Objects.requireNonNull(secretHash, "secretHash");
            Objects.requireNonNull(lockName, "lockName");
        }

        /** As the canonical constructor, checking {@code lock}; for callers that hold a plain string. */
        public CancelWait(long sessionId, SecretHash secretHash, String lock, String requestId) {
            this(sessionId, secretHash, LockName.of(lock), requestId);
        }

        /** Returns the lock's name as a string: the key of the state machine's maps. */
        public String lock() {
            return lockName.value();
        }
    }

    /**
     * Releases a lock that session {@code sessionId} holds under {@code token}; any other token, or a lock held by
     * another session, is refused.
     */
    record Release(long sessionId, SecretHash secretHash, LockName lockName, long token) implements Command {
        public Release {
            Objects.requireNonNull(secretHash, "secretHash");
            Objects.requireNonNull(lockName, "lockName");
        }

        /** As the canonical constructor, checking {@code lock}; for callers that hold a plain string. */
        public Release(long sessionId, SecretHash secretHash, String lock, long token) {
            this(sessionId, secretHash, LockName.of(lock), token);
        }

        /** Returns the lock's name as a string: the key of the state machine's maps. */
        public String lock() {
            return lockName.value();
        }
    }

    /** Ends the lock-delay of a lock freed by expiry, granting its next waiter. A no-op when not delayed. */
    record EndLockDelay(LockName lockName) implements Command {
        public EndLockDelay {
            Objects.requireNonNull(lockName, "lockName");
        }

        /** As the canonical constructor, checking {@code lock}; for callers that hold a plain string. */
        public EndLockDelay(String lock) {
            this(LockName.of(lock));
        }

        /** Returns the lock's name as a string: the key of the state machine's maps. */
        public String lock() {
            return lockName.value();
        }
    }

    /**
     * Revokes the exclusive grant of {@code lockName}, as an operator decided ({@code revokedBy} is the identity that
     * asked, recorded for the audit trail): the holder's grant ends at once (cause {@link EndCause#REVOKED}) while its
     * session stays open, and the lock passes to its next waiter in FIFO order under a higher token, as after a
     * release. With {@code lockDelay} the lock first waits out its lock-delay, as after an expiry (the revoked holder
     * may still be writing) until an {@link EndLockDelay}. {@code token} is the grant to revoke, or
     * {@link io.fencer.core.FencingToken#NONE} for whichever grant holds the lock: naming it makes a revoke that
     * arrives after the grant changed hands refuse instead of ending the next holder's grant.
     *
     * <p>Refused, changing nothing: a free lock (no record, delayed, or no holder) and a token that is not the holder's
     * (NOT_HOLDER); a lock held in shared mode (INVALID_ARGUMENT: readers cannot write, so there is nothing to fence);
     * any revoke while the group's format level is below {@link LockStateMachine#FORMAT_LEVEL_REVOKE}, since a peer of
     * the previous release cannot read this command. A permit slot of a semaphore is an exclusive lock: revoking it
     * passes the permit to the semaphore's next waiter. Of a multi-lock's grants only the named lock's ends.
     */
    record Revoke(LockName lockName, long token, String revokedBy, boolean lockDelay) implements Command {
        public Revoke {
            Objects.requireNonNull(lockName, "lockName");
            if (token < 0) {
                throw new InvalidArgumentException("token", Long.toString(token), "revoke of lock '"
                        + lockName.value() + "' names token " + token + ": a token is 0 (the holder's) or more");
            }
            Limits.checkIdentity(revokedBy);
        }

        /** Returns the lock's name as a string: the key of the state machine's maps. */
        public String lock() {
            return lockName.value();
        }
    }

    /**
     * Records, for each listed session, the most of its lease it may still have ({@code remainingMillis}), or that it
     * was renewed since ({@link LeaseCheckpoint#RENEWED}): what a new leader gives each session on taking over is its
     * recorded bound rather than its whole ttl (see {@link SessionView#takeoverLeaseMillis()}). Proposed by the leader
     * alone; a bound above the ttl is recorded as the ttl, and unknown sessions are skipped. The leader keeps the
     * bound true: it records a bound only from the deadline it holds, and before it acknowledges a keepalive of a
     * session whose bound is recorded (or proposed), it first records {@code RENEWED}.
     */
    record CheckpointLeases(List<LeaseCheckpoint> checkpoints) implements Command {
        /** The most sessions one command lists ({@code checkpointsPerCommandMax}). */
        public static final int CHECKPOINTS_MAX = 1_024;

        public CheckpointLeases {
            checkpoints = List.copyOf(checkpoints);
            if (checkpoints.isEmpty() || checkpoints.size() > CHECKPOINTS_MAX) {
                throw new InvalidArgumentException("checkpoints", Integer.toString(checkpoints.size()),
                        "a lease checkpoint lists " + checkpoints.size() + " sessions: it must list 1 to"
                                + " checkpointsPerCommandMax " + CHECKPOINTS_MAX);
            }
        }
    }

    /**
     * Raises the group's format level to {@code level} ({@link LockStateMachine#FORMAT_LEVEL}): from this entry on,
     * the group writes the commands and snapshot layout of that level, which a peer of an earlier release cannot read.
     * Proposed by the leader alone, once every peer of the configuration has said that it reads the level; a level
     * at or below the group's is applied as a no-op. It never goes down: a downgrade is possible until it is raised.
     */
    record SetFormatLevel(int level) implements Command {
        public SetFormatLevel {
            if (level < LockStateMachine.FORMAT_LEVEL_GENERATIONS || level > LockStateMachine.FORMAT_LEVEL) {
                throw new InvalidArgumentException("level", Integer.toString(level), "format level " + level
                        + " is not one this release writes: it must be in [" + LockStateMachine.FORMAT_LEVEL_GENERATIONS
                        + ", " + LockStateMachine.FORMAT_LEVEL + "]");
            }
        }
    }

    /**
     * Lifts the floor so that every later grant of every lock, new or recorded, is above every token issued so far plus
     * {@code gap}: the floor becomes {@code max(floor, min(ceiling, highest + gap))}, where {@code highest} is the
     * highest token issued ({@link LockStateMachine#highestToken()}, the floor included) and {@code ceiling} the end of
     * the group's generation; it never goes down. Why: a peer may answer up to {@code gap} grants of one lock ahead of
     * its applied state, before the release that grants them is durable, and a crash in between restores a state that
     * would grant those token values again, perhaps to another session. So a peer proposes this when it starts to lead
     * (after a restart too) and after a log entry failed, and answers early only once the raise applied: every grant
     * after it lies above every token answered before it, and no token value is issued twice.
     *
     * <p>Proposed by the leader alone, with {@code gap} in [1, {@link #GAP_MAX}] ({@link CommandChecks#checkProposal});
     * the record takes any value, so that a decoded entry applies as written (a gap below 1 lifts the floor to at most
     * the highest token). Refused, changing nothing, while the group's format level is below
     * {@link LockStateMachine#FORMAT_LEVEL_RAISE_FLOOR}, since a peer of the previous release cannot read it.
     */
    record RaiseFloor(int gap) implements Command {
        /** The largest gap a leader proposes: the most grants of one lock a peer answers ahead of its applied state. */
        public static final int GAP_MAX = 1_024;
    }

    /**
     * One entry of the replicated fenced store (format level 5): the store's own encoding of a mutating store call,
     * opaque to the lock state machine, which applies it as a no-op. The peer's Raft state machine hands it to the
     * store beside the lock state, in log order, so the fence check and the write it carries run in the apply step of
     * every replica. At most {@link #STORE_ENTRY_BYTES_MAX} bytes, never empty.
     */
    record StoreEntry(byte[] entry) implements Command {
        /** The largest store entry: a write of the most ops and bytes the replicated store admits, and framing. */
        public static final int STORE_ENTRY_BYTES_MAX = (1 << 20) + (64 << 10);

        public StoreEntry {
            java.util.Objects.requireNonNull(entry, "entry");
            if (entry.length == 0 || entry.length > STORE_ENTRY_BYTES_MAX) {
                throw new InvalidArgumentException("entry", entry.length + " bytes", "a store entry of "
                        + entry.length + " bytes is outside [1, " + STORE_ENTRY_BYTES_MAX + "]");
            }
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof StoreEntry that && java.util.Arrays.equals(entry, that.entry);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(entry);
        }

        @Override
        public String toString() {
            return "StoreEntry[" + entry.length + " bytes]";
        }
    }

    /**
     * One session's entry of {@link CheckpointLeases}: at most {@code remainingMillis} of its lease is left, or
     * {@link #RENEWED}.
     */
    record LeaseCheckpoint(long sessionId, long remainingMillis) {
        /** The session was renewed: no bound is recorded, a new leader gives it its whole ttl. */
        public static final long RENEWED = -1;

        public LeaseCheckpoint {
            if (remainingMillis < RENEWED) {
                throw new InvalidArgumentException("remaining_millis", Long.toString(remainingMillis),
                        "session " + sessionId + " has a lease bound of " + remainingMillis + " ms: a bound is 0 or"
                                + " more, or " + RENEWED + " for renewed");
            }
        }
    }

    /**
     * Acquires one permit of semaphore {@code semaphoreName} of {@code permits} permits for a session: the lowest
     * free slot {@code <name>/permit-<i>} (a lock with its own token counter) when one is free and nobody waits;
     * otherwise queued when {@code waitQueued}, or refused as busy. The permit count is fixed while the semaphore is
     * in use (a slot held or delayed, or a session waiting); another count is refused. A session holding a permit
     * acquiring again gets its grant back; a retry while waiting keeps its place. A permit is released as the lock
     * of its slot ({@link Release} of the slot's token), and by the end of the session.
     */
    record AcquirePermit(long sessionId, SecretHash secretHash, LockName semaphoreName, int permits,
            String requestId, boolean waitQueued) implements Command {
        public AcquirePermit {
            Objects.requireNonNull(secretHash, "secretHash");
            Objects.requireNonNull(semaphoreName, "semaphoreName");
            Limits.checkRequestId(requestId, false);
        }

        /** As the canonical constructor, checking {@code semaphore}; for callers that hold a plain string. */
        public AcquirePermit(long sessionId, SecretHash secretHash, String semaphore, int permits, String requestId,
                boolean waitQueued) {
            this(sessionId, secretHash, LockName.of(semaphore), permits, requestId, waitQueued);
        }

        /** Returns the semaphore's name as a string. */
        public String semaphore() {
            return semaphoreName.value();
        }
    }

    /**
     * Acquires every lock of {@code lockNames} exclusively for a session, all or none, in one step: granted when
     * every one is free and nobody waits for it; otherwise queued as a unit when {@code waitQueued} (one wait in the
     * queue of each lock, granted all together once it is first in line at every one of them and all are free), or
     * refused as busy. No deadlock whatever order callers name the locks in: a multi-lock never holds some of its
     * locks while it waits for others, and since it joins all its queues in one step, the queues agree on the order
     * of waiters, so the earliest waiter is first in line at each of its locks. Each lock keeps its own token.
     */
    record AcquireAll(long sessionId, SecretHash secretHash, List<LockName> lockNames, String requestId,
            boolean waitQueued) implements Command {
        /** The most locks one multi-lock may name ({@code locksPerAcquireMax}). */
        public static final int LOCKS_MAX = 64;

        public AcquireAll {
            Objects.requireNonNull(secretHash, "secretHash");
            lockNames = List.copyOf(lockNames);
            Limits.checkRequestId(requestId, false);
            checkLocks(lockNames);
        }

        /** As the canonical constructor, checking every name; for callers that hold plain strings. */
        public static AcquireAll of(long sessionId, SecretHash secretHash, List<String> locks, String requestId,
                boolean waitQueued) {
            List<LockName> names = new ArrayList<>(locks.size());
            for (String lock : locks) {
                names.add(LockName.of(lock));
            }
            return new AcquireAll(sessionId, secretHash, names, requestId, waitQueued);
        }

        /**
         * Checks that a multi-lock names 1 to {@link #LOCKS_MAX} locks, none twice.
         *
         * @throws InvalidArgumentException naming the count and the limit, or the lock named twice
         */
        public static void checkLocks(List<LockName> lockNames) {
            checkCount(lockNames.size());
            Set<String> seen = new HashSet<>();
            for (LockName name : lockNames) {
                if (!seen.add(name.value())) {
                    throw new InvalidArgumentException("locks", name.value(), "a multi-lock names lock '"
                            + InvalidArgumentException.printable(name.value()) + "' twice");
                }
            }
        }

        /**
         * Checks that a multi-lock of {@code count} locks names 1 to {@link #LOCKS_MAX}.
         *
         * @throws InvalidArgumentException naming the count and the limit
         */
        public static void checkCount(int count) {
            if (count < 1 || count > LOCKS_MAX) {
                throw new InvalidArgumentException("locks", Integer.toString(count), "a multi-lock names " + count
                        + " locks: it must name 1 to locksPerAcquireMax " + LOCKS_MAX);
            }
        }

        /** Returns the locks' names as strings, in the order named. */
        public List<String> locks() {
            List<String> locks = new ArrayList<>(lockNames.size());
            for (LockName name : lockNames) {
                locks.add(name.value());
            }
            return locks;
        }
    }
}

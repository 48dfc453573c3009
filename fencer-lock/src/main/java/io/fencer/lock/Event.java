package io.fencer.lock;

import io.fencer.core.FencingToken;

/**
 * A side effect of applying a command, reported to the server on every replica in apply order: the server
 * completes waiting calls, keeps session deadlines and counts metrics from these.
 */
public sealed interface Event {

    /**
     * A session opened with lease {@code ttlMillis}; keepalives for it must present a secret of this hash, and its
     * locks and waits count against the quotas of {@code quotaIdentity}.
     */
    record SessionOpened(long sessionId, long ttlMillis, SecretHash secretHash, String quotaIdentity)
            implements Event {}

    /** A session ended; its locks were released and its waits dropped (each reported separately too). */
    record SessionEnded(long sessionId, EndCause cause) implements Event {}

    /**
     * A lock was granted to a session: the acquire with {@code requestId} is answered with {@code token}.
     * {@code holderIdentity} is the identity that opened the session, named with the grant so that the grant's log
     * line and Watch event say who holds the token. {@code semaphore} names the semaphore when the lock is one of its
     * permit slots, and is null for a plain lock: a name of the slot form alone does not tell (at format level 4 a
     * plain lock {@code jobs/permit-5} may be held beside a semaphore {@code jobs} of 2 permits).
     */
    record Granted(long sessionId, String requestId, FencingToken token, String holderIdentity, String semaphore)
            implements Event {
        /** A grant of a plain lock. */
        public Granted(long sessionId, String requestId, FencingToken token, String holderIdentity) {
            this(sessionId, requestId, token, holderIdentity, null);
        }
    }

    /** A grant ended. */
    record GrantEnded(FencingToken token, long sessionId, EndCause cause) implements Event {}

    /**
     * An operator revoked the grant {@code token} of session {@code sessionId}: reported right after its
     * {@link GrantEnded} (cause {@link EndCause#REVOKED}), for the audit trail and the Watch, naming the identity that
     * revoked it.
     */
    record Revoked(FencingToken token, long sessionId, String revokedBy) implements Event {}

    /** A queued wait was dropped because its session ended; its acquire call fails with SESSION_EXPIRED. */
    record WaitDropped(long sessionId, String lock, String requestId) implements Event {}

    /** A lock freed by expiry entered lock-delay: the leader proposes {@code EndLockDelay} after the delay. */
    record LockDelayStarted(String lock) implements Event {}

    /** A session joined the FIFO queue of {@code lock} (a retry that keeps its place reports nothing). */
    record Queued(long sessionId, String lock, String requestId) implements Event {}

    /** A queued wait was cancelled by its caller (its wait deadline passed, or the call was abandoned). */
    record WaitCancelled(long sessionId, String lock) implements Event {}
}

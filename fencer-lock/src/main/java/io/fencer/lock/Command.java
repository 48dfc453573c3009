package io.fencer.lock;

import io.fencer.core.LockNames;

/**
 * A command to the lock state machine: the only way its state changes. Commands are replicated in the
 * Raft log and applied in log order on every replica; applying the same commands to the same state gives
 * the same results and events everywhere. Commands carry no time: the leader decides when a session
 * expires or a lock-delay ends and proposes the command then.
 */
public sealed interface Command {

    /**
     * Opens a session with a lease of {@code ttlMillis}; a retry with the same non-empty request id returns the same
     * session while it lives.
     */
    record OpenSession(String requestId, long ttlMillis) implements Command {
        public OpenSession {
            Limits.checkRequestId(requestId, true);
        }
    }

    /** Closes a session: releases its locks (granting next waiters) and drops its waits. Unknown ids are a no-op. */
    record CloseSession(long sessionId) implements Command {}

    /**
     * Ends a session whose lease passed, as decided by the leader. With {@code lockDelay}, every lock the session
     * held stays unavailable until an {@link EndLockDelay} for it (Chubby's lock-delay); without, the next waiter
     * is granted at once.
     */
    record ExpireSession(long sessionId, boolean lockDelay) implements Command {}

    /**
     * Acquires {@code lock} for a session: granted at once when free; otherwise queued when {@code waitQueued},
     * or refused as busy when not. The holder acquiring again gets its grant back; a retry while waiting keeps
     * its place.
     */
    record Acquire(long sessionId, String lock, String requestId, boolean waitQueued) implements Command {
        public Acquire {
            LockNames.check(lock);
            Limits.checkRequestId(requestId, false);
        }
    }

    /**
     * Removes a session's queued wait for a lock (its wait deadline passed). A no-op when not waiting. The wait is
     * found by session and lock; {@code requestId} (which may be null) is carried for the record only.
     */
    record CancelWait(long sessionId, String lock, String requestId) implements Command {
        public CancelWait {
            LockNames.check(lock);
        }
    }

    /** Releases a lock by its token; only the holder's current token releases. */
    record Release(String lock, long token) implements Command {
        public Release {
            LockNames.check(lock);
        }
    }

    /** Ends the lock-delay of a lock freed by expiry, granting its next waiter. A no-op when not delayed. */
    record EndLockDelay(String lock) implements Command {
        public EndLockDelay {
            LockNames.check(lock);
        }
    }
}

package io.fencer.lock;

import io.fencer.core.FencingToken;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * The lock service's deterministic state machine: sessions, locks, FIFO waiters and per-lock token counters
 * with a global floor. No threads, no clock, no randomness; not thread-safe (the server applies commands
 * from one thread and reads under the same exclusion).
 *
 * <p>Tokens: a grant of lock L gets {@code max(lastToken(L), floor) + 1}. A lock record with no holder, no
 * waiter and no delay is dropped and its last token folded into {@code floor = max(floor, lastToken)}, so a
 * recreated lock starts above every token it ever had without keeping every name forever.
 */
public final class LockStateMachine {
    // TODO(implementation): the helper fills this in.
    public LockStateMachine(Limits limits) {
        throw new UnsupportedOperationException("not yet");
    }

    /** Applies one command and returns its result and events. Deterministic. */
    public Applied apply(Command command) {
        throw new UnsupportedOperationException("not yet");
    }

    public Limits limits() {
        throw new UnsupportedOperationException("not yet");
    }

    public Optional<LockView> describe(String lock) {
        throw new UnsupportedOperationException("not yet");
    }

    /** Locks with a record (held, waited for or delayed) whose names start with {@code prefix}, in name order. */
    public List<LockView> list(String prefix, int limit) {
        throw new UnsupportedOperationException("not yet");
    }

    public Validation validate(FencingToken token) {
        throw new UnsupportedOperationException("not yet");
    }

    public Optional<SessionView> session(long sessionId) {
        throw new UnsupportedOperationException("not yet");
    }

    public Collection<SessionView> sessions() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Names of locks in lock-delay, for a new leader to schedule their ends. */
    public List<String> delayedLocks() {
        throw new UnsupportedOperationException("not yet");
    }

    public long floor() {
        throw new UnsupportedOperationException("not yet");
    }

    public int sessionCount() {
        throw new UnsupportedOperationException("not yet");
    }

    public int lockCount() {
        throw new UnsupportedOperationException("not yet");
    }

    public int waiterCount() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Writes the whole state; {@link #readSnapshot} restores an equal machine. */
    public void writeSnapshot(DataOutput out) throws IOException {
        throw new UnsupportedOperationException("not yet");
    }

    public static LockStateMachine readSnapshot(DataInput in, Limits limits) throws IOException {
        throw new UnsupportedOperationException("not yet");
    }
}

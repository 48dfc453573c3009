package io.fencer.store;

import io.fencer.core.FencingToken;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A write queued on its scope for a group commit, and then its outcome. The thread that made it waits; whichever
 * thread holds the scope's guard takes it into a group, decides its outcome in arrival order, and completes it
 * after the group's batch is durable (or failed).
 *
 * <p>The outcome fields are written under the scope's guard before {@link #complete()} publishes them through the
 * volatile {@code done}; the waiting thread reads them only after it saw {@code done}.
 */
final class PendingWrite {
    final FencingToken token;
    final List<Op> ops;
    /** Null for a write without an idempotency key. */
    final String idempotencyKey;
    /** The bytes of keys and values of {@link #ops}, counted against the group's byte bound. */
    final long bytes;
    private final Thread waiter = Thread.currentThread();
    private WriteResult result;
    private RuntimeException failure;
    private volatile boolean done;

    PendingWrite(FencingToken token, List<Op> ops, String idempotencyKey, long bytes) {
        this.token = token;
        this.ops = ops;
        this.idempotencyKey = idempotencyKey;
        this.bytes = bytes;
    }

    /** Decides that the write is answered with {@code decided}; call under the scope's guard, before completing. */
    void decide(WriteResult decided) {
        assert !done : "write of token " + token + " decided after it completed";
        result = decided;
        failure = null;
    }

    /** Decides that the write is refused, or failed, with {@code decided}; call under the scope's guard. */
    void decide(RuntimeException decided) {
        assert !done : "write of token " + token + " decided after it completed: " + decided;
        result = null;
        failure = decided;
    }

    /** Returns true when the decided outcome applies this write now (not a refusal, not a replay). */
    boolean isAppliedNow() {
        return result != null && !result.replayed();
    }

    /** Publishes the decided outcome and wakes the waiting thread; call under the scope's guard. */
    void complete() {
        assert result != null || failure != null : "write of token " + token + " completed without an outcome";
        assert !done : "write of token " + token + " completed twice";
        done = true;
        wake();
    }

    boolean isDone() {
        return done;
    }

    /** Wakes the waiting thread to look again: its write completed, or the guard it waits for was released. */
    void wake() {
        if (waiter != Thread.currentThread()) {
            LockSupport.unpark(waiter);
        }
    }

    /** Returns the result of a completed write, or throws its refusal or failure. */
    WriteResult outcome() {
        if (!done) {
            throw new IllegalStateException("the write of token " + token + " has not completed");
        }
        if (failure != null) {
            throw failure;
        }
        return result;
    }

    @Override
    public String toString() {
        return "PendingWrite[" + token + ", " + ops.size() + " ops, " + bytes + " bytes, done=" + done + "]";
    }
}

package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.StaleTokenException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A multi-request, all-or-nothing unit of writes to one scope (invariant 7): its token was checked once, at
 * {@link StoreEngine#begin}, it holds the scope until it ends, it buffers puts and deletes, and {@link #commit()}
 * applies them all in one synced batch, or nothing is applied.
 *
 * <p>While the unit is open, writes and begins to its scope with a token equal to the unit's are refused with
 * {@link LimitExceededException} ({@code unitsPerScopeMax}) and lower ones are stale (the begin raised the
 * scope's accepted token to the unit's). A write or begin with a higher token preempts the unit: it is aborted
 * and its later operations throw {@link StaleTokenException} naming the preempting token as the accepted one.
 * A unit not committed by its deadline is aborted by {@link StoreEngine#expireUnits()} or at its commit.
 *
 * <p>Thread-safe: a server may address it from several requests by {@link #id()}.
 */
public final class Unit {
    /** Where a unit is in its life. */
    public enum State {
        OPEN, COMMITTED, ABORTED, PREEMPTED, EXPIRED, FAILED
    }

    private final Units units;
    private final String id;
    private final String scope;
    private final FencingToken token;
    private final FencePolicy policy;
    private final Duration timeout;
    private final long deadlineNanos;
    final ReentrantLock lock = new ReentrantLock();
    /** Guarded by {@link #lock}. */
    private State state = State.OPEN;
    /** Guarded by {@link #lock}. */
    private List<Op> ops = new ArrayList<>();
    /** Guarded by {@link #lock}. */
    private long bytes;
    /** The token that preempted this unit; guarded by {@link #lock}. */
    private long preemptedBy;
    /** Guarded by {@link #lock}. */
    private WriteResult result;

    Unit(Units units, String id, String scope, FencingToken token, FencePolicy policy, Duration timeout,
            long deadlineNanos) {
        this.units = units;
        this.id = id;
        this.scope = scope;
        this.token = token;
        this.policy = policy;
        this.timeout = timeout;
        this.deadlineNanos = deadlineNanos;
    }

    /** Returns the id by which {@link StoreEngine#unit(String)} finds this unit while it is open. */
    public String id() {
        return id;
    }

    public String scope() {
        return scope;
    }

    public FencingToken token() {
        return token;
    }

    public Duration timeout() {
        return timeout;
    }

    public State state() {
        lock.lock();
        try {
            return state;
        } finally {
            lock.unlock();
        }
    }

    /** Buffers a put; nothing is visible until {@link #commit()}. */
    public void put(byte[] key, byte[] value) {
        add(Op.put(key, value));
    }

    /** Buffers a delete; nothing is visible until {@link #commit()}. */
    public void delete(byte[] key) {
        add(Op.delete(key));
    }

    /**
     * Buffers {@code op}.
     *
     * @throws InvalidArgumentException when the op breaks a size limit, or the unit's ops would exceed
     *     {@code opsPerWriteMax} or {@code batchBytesMax}
     * @throws StaleTokenException when a higher token preempted the unit
     */
    public void add(Op op) {
        Objects.requireNonNull(op, "op");
        units.checks().checkOp(scope, op);
        lock.lock();
        try {
            checkOpen();
            if (units.pastDeadline(this)) {
                throw expired(); // its commit could only be refused; the sweep or the commit ends it
            }
            units.checks().checkUnitTotals(this, ops.size() + 1, bytes + op.bytes());
            ops.add(op);
            bytes += op.bytes();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Applies every buffered op in one synced batch, or none. Committing a committed unit returns the same
     * result again.
     *
     * @throws StaleTokenException when a higher token preempted the unit; nothing was applied
     * @throws LimitExceededException ({@code unitTimeout}) when the deadline passed; nothing was applied
     * @throws InvalidArgumentException when the unit was aborted or failed
     */
    public WriteResult commit() {
        return units.commit(this);
    }

    /** Aborts the unit, releasing its scope; nothing is applied. Aborting an ended, uncommitted unit does nothing. */
    public void abort() {
        units.abort(this);
    }

    long deadlineNanos() {
        return deadlineNanos;
    }

    /** Returns the buffered ops; call under {@link #lock}. */
    List<Op> ops() {
        return ops;
    }

    /** Returns the result of the commit, or null; call under {@link #lock}. */
    WriteResult result() {
        return result;
    }

    /** Ends the unit; call under the scope's guard and {@link #lock}. */
    void end(State outcome, long preemptingToken, WriteResult committed) {
        assert lock.isHeldByCurrentThread() : "unit " + id + " ended without its lock";
        assert state == State.OPEN : "unit " + id + " ended twice: " + state + " then " + outcome;
        state = outcome;
        preemptedBy = preemptingToken;
        result = committed;
        ops = List.of(); // the buffered ops are never applied now: free them
    }

    boolean isOpen() {
        return state == State.OPEN;
    }

    /** Throws the error that explains why this unit is not open; call under {@link #lock}. */
    void checkOpen() {
        switch (state) {
            case OPEN -> {
                // open: nothing to explain
            }
            case COMMITTED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' is already committed");
            case PREEMPTED -> throw new StaleTokenException(scope, token.value(), preemptedBy, policy);
            case EXPIRED -> throw expired();
            case ABORTED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' was aborted; nothing was applied");
            case FAILED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' failed at its commit; it may or may not have been applied");
            default -> throw new IllegalStateException("unknown unit state " + state);
        }
    }

    private LimitExceededException expired() {
        return new LimitExceededException("unitTimeout", timeout.toMillis(), "unit " + id + " of scope '" + scope
                + "' (token " + token + ") was aborted: not committed within its timeout " + timeout
                + "; nothing was applied");
    }

    @Override
    public String toString() {
        return "Unit[" + id + ", " + scope + ", " + token + ", " + state() + "]";
    }
}

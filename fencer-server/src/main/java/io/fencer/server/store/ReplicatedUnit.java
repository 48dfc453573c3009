package io.fencer.server.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.StaleTokenException;
import io.fencer.store.Op;
import io.fencer.store.StoreOptions;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A unit of the replicated store, held by the leader that began it: its ops are buffered here, in the leader's
 * memory, and go to the log only at commit, as one entry that every replica applies as one engine unit (see
 * {@code StoreLogUnit}). Nothing of an uncommitted unit is in the log, so a unit open on a leader that is deposed or
 * restarted is simply gone: its next call on the new leader finds no such unit, and none of its ops was applied.
 *
 * <p>While open, the unit holds its scope on this leader as an engine's unit does: a write with the same token is
 * refused (unitsPerScopeMax), one with a lower token is stale, a write or unit with a higher token preempts it. Its
 * deadline runs on this leader's clock. Thread-safe: every method is synchronized.
 */
final class ReplicatedUnit implements StoreUnit {
    private final String id;
    private final String scope;
    private final String sequencer;
    private final FencingToken token;
    private final FencePolicy policy;
    private final Duration timeout;
    private final io.fencer.core.Ticker ticker;
    private final long deadlineNanos;
    private final StoreOptions limits;
    /** The engine's checks of one op's key and value ({@link io.fencer.store.StoreEngine#checkUnitOp}). */
    private final Consumer<Op> opCheck;
    private final Function<ReplicatedUnit, WriteResult> committer;
    private ArrayList<Op> ops = new ArrayList<>();
    private long bytes;
    private Unit.State state = Unit.State.OPEN;
    private long preemptedBy;
    private WriteResult result;

    ReplicatedUnit(String id, String scope, String sequencer, FencingToken token, FencePolicy policy,
            Duration timeout, io.fencer.core.Ticker ticker, StoreOptions limits, Consumer<Op> opCheck,
            Function<ReplicatedUnit, WriteResult> committer) {
        this.id = id;
        this.scope = scope;
        this.sequencer = sequencer;
        this.token = token;
        this.policy = policy;
        this.timeout = timeout;
        this.ticker = ticker;
        this.deadlineNanos = ticker.nanoTime() + timeout.toNanos();
        this.limits = limits;
        this.opCheck = opCheck;
        this.committer = committer;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public String scope() {
        return scope;
    }

    String sequencer() {
        return sequencer;
    }

    @Override
    public FencingToken token() {
        return token;
    }

    /** Returns the policy of the unit's scope when it began. */
    FencePolicy policy() {
        return policy;
    }

    /** Returns the state; past its deadline an open unit is expired, so the service forgets it as a node's. */
    @Override
    public synchronized Unit.State state() {
        isOpenAt(ticker.nanoTime());
        return state;
    }

    /** Returns true when the deadline has passed at {@code nowNanos}, whatever the state; without the monitor. */
    boolean pastDeadlineAt(long nowNanos) {
        return nowNanos - deadlineNanos >= 0;
    }

    /** Returns true while open and within its deadline at {@code nowNanos}; ends it as expired once past. */
    synchronized boolean isOpenAt(long nowNanos) {
        if (state == Unit.State.OPEN && nowNanos - deadlineNanos >= 0) {
            end(Unit.State.EXPIRED);
        }
        return state == Unit.State.OPEN;
    }

    /** Ends the open unit because a higher token wrote to its scope or began a unit there. */
    synchronized void preempt(long higherToken) {
        if (state == Unit.State.OPEN) {
            preemptedBy = higherToken;
            end(Unit.State.PREEMPTED);
        }
    }

    /** Ends the open unit because this peer no longer leads (its ops could only be committed by the leader). */
    synchronized void abandon() {
        if (state == Unit.State.OPEN) {
            end(Unit.State.ABORTED);
        }
    }

    /**
     * Ends the unit in {@code next} and lets its buffered ops go: the service remembers an ended unit for up to a
     * minute, to answer a retried call, and what that needs is its state and result, not a batch's bytes of ops.
     */
    private void end(Unit.State next) {
        state = next;
        ops = new ArrayList<>(0);
        bytes = 0;
    }

    /** Returns the buffered ops, for the commit's log entry. */
    synchronized List<Op> ops() {
        return List.copyOf(ops);
    }

    @Override
    public synchronized void add(Op op) {
        checkOpen();
        opCheck.accept(op); // here, not at the commit's apply: there the unit would begin before the op is refused
        long opBytes = op.key().length + (op.kind() == Op.Kind.PUT ? op.value().length : 0);
        if (ops.size() + 1 > limits.opsPerWriteMax()) {
            throw new InvalidArgumentException("ops", Integer.toString(ops.size() + 1), "unit " + id + " of scope '"
                    + scope + "' would hold " + (ops.size() + 1) + " ops, more than the opsPerWriteMax of "
                    + limits.opsPerWriteMax());
        }
        if (bytes + opBytes > limits.batchBytesMax()) {
            throw new InvalidArgumentException("ops", (bytes + opBytes) + " bytes", "unit " + id + " of scope '"
                    + scope + "' would carry " + (bytes + opBytes) + " bytes of keys and values, more than the "
                    + limits.batchBytesMax() + " a unit of the replicated store may carry");
        }
        ops.add(op);
        bytes += opBytes;
    }

    /**
     * Commits through the log; a retried commit of a committed unit returns the same result. A failure whose outcome
     * is unknown (the leader lost its leadership while the entry was in flight) ends the unit FAILED.
     */
    @Override
    public synchronized WriteResult commit() {
        if (state == Unit.State.COMMITTED) {
            return result;
        }
        checkOpen();
        try {
            result = committer.apply(this);
            end(Unit.State.COMMITTED);
            return result;
        } catch (io.fencer.core.NotLeaderException e) {
            end(Unit.State.ABORTED); // refused before the log: nothing was applied, and only a leader holds units
            throw e;
        } catch (StaleTokenException e) {
            preemptedBy = e.accepted();
            end(Unit.State.PREEMPTED);
            throw e;
        } catch (FencerException e) {
            end(Unit.State.FAILED);
            throw e;
        }
    }

    @Override
    public synchronized void abort() {
        if (state == Unit.State.OPEN) {
            end(Unit.State.ABORTED);
        }
    }

    private void checkOpen() {
        isOpenAt(ticker.nanoTime());
        switch (state) {
            case OPEN -> {
                // open: nothing to explain
            }
            case COMMITTED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' is already committed");
            case PREEMPTED -> throw new StaleTokenException(scope, token.value(), preemptedBy,
                    io.fencer.core.FencePolicy.AT_LEAST);
            case EXPIRED -> throw new LimitExceededException("unitTimeout", timeout.toMillis(), "unit " + id
                    + " of scope '" + scope + "' (token " + token + ") was aborted: not committed within its timeout "
                    + timeout + "; nothing was applied");
            case ABORTED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' was aborted (by its client, or because this peer stopped leading); nothing was applied");
            case FAILED -> throw new InvalidArgumentException("unit", id, "unit " + id + " of scope '" + scope
                    + "' failed at its commit; it may or may not have been applied");
            default -> throw new IllegalStateException("unknown unit state " + state);
        }
    }

    @Override
    public String toString() {
        return "ReplicatedUnit[" + id + ", " + scope + ", " + token + ", " + state() + "]";
    }
}

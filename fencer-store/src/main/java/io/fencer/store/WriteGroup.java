package io.fencer.store;

import io.fencer.core.FencingToken;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The writes of one scope in a commit, under construction: the writes admitted so far, in admission order, their
 * ops and idempotency records added to the commit's {@code WriteBatch} (shared by the groups of every scope in it),
 * and the scope's running accepted token, revision and open unit as the next write of the group must see them.
 * Nothing in the scope's state changes until the engine publishes the group once the batch is durable.
 *
 * <p>Used by one thread, under the scope's guard, for the life of one commit; the batch belongs to the caller.
 */
final class WriteGroup {
    /**
     * One admitted write (or unit commit) of the group.
     *
     * @param acceptedBefore the running accepted token this write was admitted against
     * @param idempotencyEntry the entry to index once durable, or null without an idempotency key
     */
    record Applied(long token, long acceptedBefore, WriteResult result, IdempotencyIndex.Entry idempotencyEntry) {}

    final ScopeState state;
    private final ColumnFamilyHandle dataFamily;
    private final ColumnFamilyHandle fenceFamily;
    private final ColumnFamilyHandle idempotencyFamily;
    private final IdempotencyIndex idempotency;
    private final WriteBatch batch;
    private final List<Applied> applied = new ArrayList<>();
    private final Map<IdempotencyIndex.Key, Applied> appliedByKey = new HashMap<>();
    private long accepted;
    private long revision;
    /** The open unit a write of this group preempted, or null; ended when the group is published. */
    private Unit preempted;
    private long preemptingToken;
    /** True when the group reserved a place for its scope, which was not persisted yet. */
    private boolean scopeReserved;
    private boolean durable;

    WriteGroup(ScopeState state, WriteBatch batch, ColumnFamilyHandle dataFamily, ColumnFamilyHandle fenceFamily,
            ColumnFamilyHandle idempotencyFamily, IdempotencyIndex idempotency) {
        assert state.guard.isHeldByCurrentThread() : "group of scope " + state.scope + " built without its guard";
        this.state = state;
        this.batch = batch;
        this.dataFamily = dataFamily;
        this.fenceFamily = fenceFamily;
        this.idempotencyFamily = idempotencyFamily;
        this.idempotency = idempotency;
        this.accepted = state.accepted;
        this.revision = state.revision;
    }

    /** Returns the accepted token after the writes admitted so far. */
    long accepted() {
        return accepted;
    }

    /** Returns the revision after the writes admitted so far. */
    long revision() {
        return revision;
    }

    /** Returns the unit holding the scope as the next write of the group sees it: none once one was preempted. */
    Unit openUnit() {
        return preempted == null ? state.openUnit : null;
    }

    /** Records that the write of {@code token} preempts {@code unit}; the unit ends when the group is published. */
    void preempt(Unit unit, long token) {
        assert unit == state.openUnit : "unit " + unit + " preempted but the open unit is " + state.openUnit;
        assert preempted == null : "unit " + unit + " preempted after " + preempted + " in one group";
        preempted = unit;
        preemptingToken = token;
    }

    Unit preempted() {
        return preempted;
    }

    long preemptingToken() {
        return preemptingToken;
    }

    boolean isScopeReserved() {
        return scopeReserved;
    }

    /** Records whether the group reserved a place for its scope; asked only until it has one. */
    void scopeReserved(boolean reserved) {
        assert !scopeReserved : "scope " + state.scope + " reserved twice by one group";
        scopeReserved = reserved;
    }

    /** Returns the write of this group admitted with idempotency key {@code key}, the latest one; or null. */
    Applied appliedWithKey(IdempotencyIndex.Key key) {
        return appliedByKey.get(key);
    }

    List<Applied> applied() {
        return applied;
    }

    boolean isDurable() {
        return durable;
    }

    /**
     * Adds an admitted write: its ops and idempotency record go into the batch, the revision advances by one and
     * the accepted token becomes {@code acceptedAfter}. Returns the write's result, valid once the group is durable.
     */
    WriteResult add(FencingToken token, List<Op> ops, IdempotencyIndex.Key key, long acceptedAfter, long now)
            throws RocksDBException {
        assert !durable : "write of token " + token + " added to a written group of scope " + state.scope;
        long revisionAfter = revision + 1;
        for (Op op : ops) {
            byte[] dataKey = StoreCodec.dataKey(state.scope, op.keyBytes());
            if (op.kind() == Op.Kind.PUT) {
                batch.put(dataFamily, dataKey, StoreCodec.dataValue(token.value(), op.valueBytes()));
            } else {
                batch.delete(dataFamily, dataKey);
            }
        }
        IdempotencyIndex.Entry entry = null;
        if (key != null) {
            StoreCodec.IdempotencyRecord record = new StoreCodec.IdempotencyRecord(token.value(), acceptedAfter,
                    revisionAfter, ops.size(), idempotency.nextSequence());
            batch.put(idempotencyFamily, StoreCodec.idempotencyKey(state.scope, key.idempotencyKey()),
                    StoreCodec.idempotencyValue(record));
            entry = new IdempotencyIndex.Entry(key, record, now);
        }
        WriteResult result = new WriteResult(state.scope, token.value(), acceptedAfter, revisionAfter, ops.size(),
                false);
        Applied admitted = new Applied(token.value(), accepted, result, entry);
        applied.add(admitted);
        if (key != null) {
            appliedByKey.put(key, admitted);
        }
        accepted = acceptedAfter;
        revision = revisionAfter;
        return result;
    }

    /**
     * Adds the scope's fence record (the final accepted token and revision) to the batch; call once, after the
     * group's last write, before the batch is written.
     */
    void addFence() throws RocksDBException {
        assert !applied.isEmpty() : "fence of an empty group of scope " + state.scope + " added";
        assert !durable : "fence of scope " + state.scope + " added to a written group";
        batch.put(fenceFamily, StoreCodec.fenceKey(state.scope),
                StoreCodec.fenceValue(state.lock, state.policy, accepted, revision));
    }

    /** Records that the batch holding this group was written synced; the engine may publish the group. */
    void durable() {
        assert !applied.isEmpty() : "empty group of scope " + state.scope + " written";
        assert !durable : "group of scope " + state.scope + " written twice";
        durable = true;
    }
}

package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The writes of one scope in a commit, under construction: it admits each write against the scope's running
 * accepted token, revision and open unit as the writes before it in the group left them (a replay, a refusal, or
 * admission), reserves the scope's place when the group creates it, and adds the admitted writes' ops and
 * idempotency records to the commit's {@code WriteBatch} (shared by the groups of every scope in it). Nothing in the
 * scope's state changes until {@link #publish()}, once the batch is durable.
 *
 * <p>Used by one thread, under the scope's guard, for the life of one commit; the batch belongs to the caller. The
 * running accepted token never falls ({@code max} in {@link #admit}); it reaches the scope's state only through
 * {@link #publish()} after {@link #durable()}: this is where "no token is acknowledged above an accepted token not
 * on disk" is established.
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
    private final ScopeTable scopes;
    private final Units units;
    private final StoreObservers observers;
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

    WriteGroup(ScopeState state, WriteBatch batch, StoreDatabase database, IdempotencyIndex idempotency,
            ScopeTable scopes, Units units, StoreObservers observers) {
        assert state.guard.isHeldByCurrentThread() : "group of scope " + state.scope + " built without its guard";
        this.state = state;
        this.batch = batch;
        this.dataFamily = database.dataFamily();
        this.fenceFamily = database.fenceFamily();
        this.idempotencyFamily = database.idempotencyFamily();
        this.idempotency = idempotency;
        this.scopes = scopes;
        this.units = units;
        this.observers = observers;
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

    /** Returns true when the group reserved a place for its scope; the caller releases it when not persisted. */
    boolean isScopeReserved() {
        return scopeReserved;
    }

    /** Returns true when no write was admitted into the group (refusals and replays only, or none yet). */
    boolean isEmpty() {
        return applied.isEmpty();
    }

    boolean isDurable() {
        return durable;
    }

    /**
     * Decides the outcome of {@code write} against the group's running state: a replay of an earlier result, a
     * refusal, or admission into the group's batch. Refusals concern this write alone.
     */
    void admit(PendingWrite write, long now) throws RocksDBException {
        FencingToken token = write.token;
        try {
            state.checkBound(token);
            IdempotencyIndex.Key key = write.idempotencyKey == null ? null
                    : new IdempotencyIndex.Key(state.scope, write.idempotencyKey);
            WriteResult replay = key == null ? null : replayOf(key, token, write.opsDigest, now);
            if (replay != null) {
                write.decide(replay);
                return;
            }
            state.checkAdmits(token, accepted);
            Unit preemptedNow = units.checkOpenUnit(state, token, openUnit(), now);
            if (!scopeReserved) {
                scopeReserved = scopes.reserve(state, token);
            }
            if (preemptedNow != null) {
                preempt(preemptedNow, token.value());
            }
            long acceptedAfter = Math.max(accepted, token.value());
            assert acceptedAfter >= accepted && acceptedAfter >= state.accepted
                    : "accepted " + acceptedAfter + " below " + accepted + " for scope " + state.scope;
            write.decide(add(token, write.ops, key, write.opsDigest, acceptedAfter, now));
        } catch (StaleTokenException | ScopeMismatchException | IdempotencyMismatchException
                | LimitExceededException e) {
            write.decide(e);
        }
    }

    /**
     * Returns the first result of a retry of a write with the same idempotency key and token, earlier in this
     * group or on record, when that token is not superseded; or null when {@code token} must be admitted anew.
     *
     * @throws IdempotencyMismatchException when that write had other ops than {@code opsDigest} stands for
     */
    private WriteResult replayOf(IdempotencyIndex.Key key, FencingToken token, byte[] opsDigest, long now) {
        if (token.value() < accepted) {
            return null; // superseded: refused as stale, whatever its ops
        }
        Applied earlier = appliedByKey.get(key); // newer than any record on disk
        StoreCodec.IdempotencyRecord first = earlier != null ? earlier.idempotencyEntry().record()
                : recordOf(idempotency.find(key, now));
        if (first == null || first.token() != token.value()) {
            return null;
        }
        if (!OpsDigest.matches(first.opsDigest(), opsDigest)) {
            throw new IdempotencyMismatchException(state.scope, key.idempotencyKey(), token.value());
        }
        return earlier != null ? earlier.result().asReplay() : resultOf(state.scope, first).asReplay();
    }

    private static StoreCodec.IdempotencyRecord recordOf(IdempotencyIndex.Entry entry) {
        return entry == null ? null : entry.record();
    }

    /** Returns the unit holding the scope as the next write of the group sees it: none once one was preempted. */
    private Unit openUnit() {
        return preempted == null ? state.openUnit : null;
    }

    /** Records that the write of {@code token} preempts {@code unit}; the unit ends when the group is published. */
    private void preempt(Unit unit, long token) {
        assert unit == state.openUnit : "unit " + unit + " preempted but the open unit is " + state.openUnit;
        assert preempted == null : "unit " + unit + " preempted after " + preempted + " in one group";
        preempted = unit;
        preemptingToken = token;
    }

    /**
     * Adds an admitted write: its ops and idempotency record go into the batch, the revision advances by one and
     * the accepted token becomes {@code acceptedAfter}. Returns the write's result, valid once the group is durable.
     */
    WriteResult add(FencingToken token, List<Op> ops, IdempotencyIndex.Key key, byte[] opsDigest, long acceptedAfter,
            long now) throws RocksDBException {
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
            // the digest goes into the same batch as the data: a record on disk always names the ops it answered
            StoreCodec.IdempotencyRecord record = new StoreCodec.IdempotencyRecord(token.value(), acceptedAfter,
                    revisionAfter, ops.size(), idempotency.nextSequence(), opsDigest);
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

    /** Records that the batch holding this group was written synced; the group may be published. */
    void durable() {
        assert !applied.isEmpty() : "empty group of scope " + state.scope + " written";
        assert !durable : "group of scope " + state.scope + " written twice";
        durable = true;
    }

    /**
     * Updates the scope's state after the group's batch is durable: accepted token and revision, the apply listener
     * in admission order, and the unit the group preempted; the caller indexes {@link #idempotencyEntries()}. Call
     * under the guard.
     */
    void publish() {
        assert durable : "group of scope " + state.scope + " published before its batch was durable";
        state.applied(accepted, revision);
        for (Applied admitted : applied) {
            observers.applyListener().applied(state.scope, admitted.token(), admitted.acceptedBefore());
        }
        if (preempted != null) {
            units.end(state, preempted, Unit.State.PREEMPTED, preemptingToken, null);
        }
    }

    /**
     * Returns the idempotency entries of the group's admitted writes, in admission order, for the caller to index
     * once the group is published, in sequence order across every group of its batch (see {@code GroupCommit}).
     */
    List<IdempotencyIndex.Entry> idempotencyEntries() {
        assert durable : "entries of group of scope " + state.scope + " taken before its batch was durable";
        List<IdempotencyIndex.Entry> entries = new ArrayList<>();
        for (Applied admitted : applied) {
            if (admitted.idempotencyEntry() != null) {
                entries.add(admitted.idempotencyEntry());
            }
        }
        return entries;
    }

    private static WriteResult resultOf(String scope, StoreCodec.IdempotencyRecord record) {
        return new WriteResult(scope, record.token(), record.accepted(), record.revision(), record.opsApplied(),
                false);
    }
}

package io.fencer.store;

import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The commit of one batch of queued writes, run by the {@link WriteCommitter}'s thread: it groups the writes by
 * scope in arrival order, lets each scope's {@link WriteGroup} admit them under the scope's guard, writes every
 * admitted write, with one fence record per scope, in one synced RocksDB write (one fsync for the batch), and only
 * then publishes each group, releases the guards and completes every write. When that write fails, every write of
 * the scopes it held fails with {@link UnavailableException} and their states stay as they were.
 *
 * <p>The guards of every scope in the batch are held from admission until after publication: this is where "a
 * scope's writes are admitted, written and published as if they had come one at a time" is established. Only the
 * committer's thread holds more than one guard at once, so the guards cannot deadlock.
 */
final class GroupCommit {
    /** The writes of one scope in a batch, in arrival order, and the group they are admitted into. */
    private record ScopeCommit(List<PendingWrite> writes, WriteGroup group) {}

    private final StoreDatabase database;
    private final ScopeTable scopes;
    private final Units units;
    private final IdempotencyIndex idempotency;
    private final IdempotencySweeper sweeper;
    /** False for a replica, which sweeps at the end of each log entry only, where every replica does. */
    private volatile boolean sweepsInline = true;
    private final StoreObservers observers;
    private final Ticker ticker;
    /** Synced RocksDB writes made for batches of queued writes; for tests. */
    private final AtomicLong batchesWritten = new AtomicLong();

    GroupCommit(StoreDatabase database, ScopeTable scopes, Units units, IdempotencyIndex idempotency,
            IdempotencySweeper sweeper, StoreObservers observers, Ticker ticker) {
        this.database = database;
        this.scopes = scopes;
        this.units = units;
        this.idempotency = idempotency;
        this.sweeper = sweeper;
        this.observers = observers;
        this.ticker = ticker;
    }

    /** Returns the number of synced RocksDB writes made for batches of queued writes so far. */
    long batchesWritten() {
        return batchesWritten.get();
    }

    /** Stops the sweep after a batch whose writes overfill the index: a replica's batches differ from its peers'. */
    void stopInlineSweeps() {
        sweepsInline = false;
    }

    /** Commits {@code batch} and completes every write of it; call on the committer's thread only. */
    void commit(List<PendingWrite> batch) {
        Map<String, List<PendingWrite>> byScope = new LinkedHashMap<>();
        boolean keyed = false;
        for (PendingWrite write : batch) {
            byScope.computeIfAbsent(write.scope, scope -> new ArrayList<>()).add(write);
            keyed |= write.idempotencyKey != null;
        }
        List<ScopeCommit> commits = new ArrayList<>(byScope.size());
        Map<String, WriteGroup> groups = new HashMap<>();
        database.enter();
        try (WriteBatch rocksBatch = new WriteBatch()) {
            try {
                long now = ticker.nanoTime();
                for (List<PendingWrite> writes : byScope.values()) {
                    ScopeState state = scopes.lock(writes.get(0).scope);
                    ScopeCommit commit = new ScopeCommit(writes, new WriteGroup(state, rocksBatch, database,
                            idempotency, scopes, units, observers));
                    commits.add(commit);
                    groups.put(writes.get(0).scope, commit.group());
                    observers.groupListener().taken(state.scope, writes.size());
                }
                // In arrival order across scopes, not scope by scope: the idempotency records then take their
                // sequence, which orders their eviction, from the writes' own order, however the writes were
                // batched. Replicas batch the same log differently, and must still evict the same records.
                for (PendingWrite write : batch) {
                    groups.get(write.scope).admit(write, now);
                }
                writeAndPublish(rocksBatch, commits);
            } catch (RocksDBException e) {
                failBatch(commits, byScope.values(), e);
            } finally {
                for (ScopeCommit commit : commits) {
                    scopes.release(commit.group().state, commit.group().isScopeReserved());
                    scopes.unlock(commit.group().state);
                }
            }
        } finally {
            database.exit();
        }
        if (keyed && sweepsInline && idempotency.isOverfull()) { // before the answers: a writer never sees the index over its bound
            try {
                sweeper.sweep();
            } catch (UnavailableException e) {
                // the writes are durable and their results stand; the next sweep evicts what this one could not
            }
        }
        for (PendingWrite write : batch) {
            assert !write.isAppliedNow() || scopes.find(write.scope).accepted >= write.token.value()
                    : "write of token " + write.token + " to scope " + write.scope + " acknowledged unpublished";
            write.complete();
        }
    }

    /** Writes the batch of every group that admitted a write, synced, then publishes those groups. */
    private void writeAndPublish(WriteBatch rocksBatch, List<ScopeCommit> commits) throws RocksDBException {
        List<WriteGroup> writing = new ArrayList<>(commits.size());
        for (ScopeCommit commit : commits) {
            WriteGroup group = commit.group();
            if (!group.isEmpty()) {
                assert group.accepted() >= group.state.accepted : "group of scope " + group.state.scope
                        + " would lower the accepted token from " + group.state.accepted + " to " + group.accepted();
                group.addFence();
                writing.add(group);
            }
        }
        if (writing.isEmpty()) {
            return;
        }
        database.writeSynced(rocksBatch);
        batchesWritten.incrementAndGet();
        List<IdempotencyIndex.Entry> indexed = new ArrayList<>();
        for (WriteGroup group : writing) {
            group.durable();
            group.publish();
            indexed.addAll(group.idempotencyEntries());
        }
        // indexed in sequence (arrival) order, the order the sweep evicts in: see the admission in commit
        indexed.sort(Comparator.comparingLong(entry -> entry.record().sequence()));
        indexed.forEach(idempotency::put);
    }

    /**
     * Fails, after the batch's RocksDB write (or building it) failed, every write of a scope that had a write in
     * it, and every write not decided yet; refusals and replays of scopes with nothing in the batch stand.
     */
    private static void failBatch(List<ScopeCommit> commits, Iterable<List<PendingWrite>> byScope,
            RocksDBException e) {
        for (ScopeCommit commit : commits) {
            if (!commit.group().isEmpty()) {
                for (PendingWrite write : commit.writes()) {
                    write.decide(unavailable(write, commit.writes().size(), e));
                }
            }
        }
        for (List<PendingWrite> writes : byScope) {
            for (PendingWrite write : writes) {
                if (!write.isDecided()) {
                    write.decide(unavailable(write, writes.size(), e));
                }
            }
        }
    }

    private static UnavailableException unavailable(PendingWrite write, int groupWrites, RocksDBException e) {
        return new UnavailableException("the write to scope '" + write.scope + "' with token " + write.token
                + " failed with its group of " + groupWrites + " and may or may not have been applied: "
                + e.getMessage(), e);
    }
}

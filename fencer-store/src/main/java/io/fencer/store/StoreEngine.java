package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockNames;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The fenced key-value engine: Fencer's reference resource, which orders effects by the tokens the lock service
 * grants. Keys live in scopes; each scope is bound to one lock and keeps, durably and with its data, the highest
 * token it has accepted.
 *
 * <p>A {@linkplain #write write} checks its token and applies its ops in one atomic step under the scope's guard:
 * the data, the new accepted token and the idempotency record go into one RocksDB {@code WriteBatch} written with
 * {@code sync=true} before the write returns (invariants 3 and 4). A token of another lock is refused with
 * {@link ScopeMismatchException}; a stale one with {@link StaleTokenException} carrying the accepted token, by the
 * scope's {@link FencePolicy} (invariant 5).
 *
 * <p>Writes are committed in batches by one committer thread. Writes to any scope queue in arrival order; the
 * committer takes every queued write (up to {@value WriteCommitter#BATCH_WRITES_MAX}, within {@code batchBytesMax})
 * as one batch, admits each scope's writes under its guard one after another against the accepted token the writes
 * before them left, exactly as if they had come one at a time (a stale one is refused alone), and writes the
 * admitted ones, with one fence record per scope, in one synced RocksDB write: one fsync for the batch. Only then
 * does it update each scope's state and answer the writers, each with its own revision; when that write fails,
 * every write of the scopes it held fails with {@link UnavailableException} and their state stays as it was.
 * {@link #write} waits for its answer; {@link #writeAsync} lets a server answer without a thread per write.
 *
 * <pre>{@code
 * try (StoreEngine store = StoreEngine.open(dir, StoreOptions.defaults())) {
 *     store.write("orders", grant.sequencer(), List.of(Op.put(key, value)), requestId);  // refused once stale
 *     ReadResult read = store.get("orders", key, grant.sequencer());                    // a fenced read
 * }
 * }</pre>
 *
 * <p>Layout: column families {@code data}, {@code fence} and {@code idem}, described in {@code StoreCodec}. On
 * open, every scope's accepted token is read back from {@code fence}, so a restart refuses what it refused before.
 * Thread-safe; {@link #close()} waits for the operations in progress.
 */
public final class StoreEngine implements AutoCloseable {
    private static final byte[] DATA_FAMILY = "data".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FENCE_FAMILY = "fence".getBytes(StandardCharsets.UTF_8);
    private static final byte[] IDEMPOTENCY_FAMILY = "idem".getBytes(StandardCharsets.UTF_8);
    private static final int SWEEP_BATCH = 256;
    /** The most writes waiting for the committer; beyond it writes are refused with LIMIT_EXCEEDED. */
    public static final int WRITES_QUEUED_MAX = 16_384;
    /** The most bytes of keys and values waiting for the committer (a larger write alone is let in). */
    public static final long WRITE_BYTES_QUEUED_MAX = 64L << 20;
    private static final int UNIT_ID_BYTES = 16;
    private static final SecureRandom UNIT_IDS = new SecureRandom();

    private final Path directory;
    private final StoreOptions options;
    private final Ticker ticker;
    private final DBOptions databaseOptions;
    private final ColumnFamilyOptions familyOptions;
    private final List<ColumnFamilyHandle> handles;
    private final RocksDB db;
    private final ColumnFamilyHandle dataFamily;
    private final ColumnFamilyHandle fenceFamily;
    private final ColumnFamilyHandle idempotencyFamily;
    private final WriteOptions syncWrite = new WriteOptions().setSync(true);
    /** For idempotency evictions: losing one in a crash only resurrects a valid first result. */
    private final WriteOptions sweepWrite = new WriteOptions().setSync(false);
    /** Read-held by every operation that touches RocksDB, write-held by close: no use after free. */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    /** Guarded by {@link #lifecycle}. */
    private boolean closed;
    private final ConcurrentHashMap<String, ScopeState> scopes = new ConcurrentHashMap<>();
    /** Persisted scopes plus reservations of scopes being created. */
    private final AtomicInteger scopeCount = new AtomicInteger();
    private final ConcurrentHashMap<String, Unit> units = new ConcurrentHashMap<>();
    /** Open units plus reservations of units being begun. */
    private final AtomicInteger unitCount = new AtomicInteger();
    private final IdempotencyIndex idempotency;
    private volatile ApplyListener applyListener = ApplyListener.NONE;
    private volatile GroupListener groupListener = GroupListener.NONE;
    private final WriteCommitter committer;
    /** Synced RocksDB writes made for batches of queued writes; for tests. */
    private final AtomicLong batchesWritten = new AtomicLong();

    private StoreEngine(Path directory, StoreOptions options, DBOptions databaseOptions,
            ColumnFamilyOptions familyOptions, RocksDB db, List<ColumnFamilyHandle> handles) {
        this.directory = directory;
        this.options = options;
        this.ticker = options.ticker();
        this.databaseOptions = databaseOptions;
        this.familyOptions = familyOptions;
        this.db = db;
        this.handles = handles;
        this.dataFamily = handles.get(1);
        this.fenceFamily = handles.get(2);
        this.idempotencyFamily = handles.get(3);
        this.idempotency = new IdempotencyIndex(options.idempotencyEntriesMax(),
                options.idempotencyAgeMax().toNanos());
        // last: the committer's thread starts here and calls back into the engine
        this.committer = new WriteCommitter("fencer-store-committer-" + directory.getFileName(), WRITES_QUEUED_MAX,
                WRITE_BYTES_QUEUED_MAX, options.batchBytesMax(), this::commitBatch);
    }

    /**
     * Opens (or creates) the store in {@code directory} and reads back every scope's accepted token.
     *
     * @throws UnavailableException when the directory cannot be created or RocksDB cannot open it (for example,
     *     another process holds it)
     */
    public static StoreEngine open(Path directory, StoreOptions options) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(options, "options");
        RocksDB.loadLibrary();
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new UnavailableException("cannot create the store directory " + directory + ": " + e, e);
        }
        // Writes to different scopes meet in RocksDB's own group commit. Its concurrent memtable inserts pay off
        // for large batches on many cores; for the engine's small batches each RocksDB group then pays a second
        // round of wake-ups (measured in process, 64 writers on 64 scopes, 2 cores: ~40 instead of ~57 us of CPU
        // per write), so the group's leader inserts every batch itself.
        DBOptions databaseOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true)
                .setKeepLogFileNum(4).setAllowConcurrentMemtableWrite(false)
                .setEnableWriteThreadAdaptiveYield(Boolean.parseBoolean(System.getProperty("fencer.exp.yield", "true")))
                .setEnablePipelinedWrite(Boolean.getBoolean("fencer.exp.pipelined"));
        ColumnFamilyOptions familyOptions = new ColumnFamilyOptions();
        List<ColumnFamilyDescriptor> descriptors = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, familyOptions),
                new ColumnFamilyDescriptor(DATA_FAMILY, familyOptions),
                new ColumnFamilyDescriptor(FENCE_FAMILY, familyOptions),
                new ColumnFamilyDescriptor(IDEMPOTENCY_FAMILY, familyOptions));
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        RocksDB db;
        try {
            db = RocksDB.open(databaseOptions, directory.toString(), descriptors, handles);
        } catch (RocksDBException e) {
            familyOptions.close();
            databaseOptions.close();
            throw new UnavailableException("cannot open the store at " + directory + ": " + e.getMessage(), e);
        }
        StoreEngine engine = new StoreEngine(directory, options, databaseOptions, familyOptions, db, handles);
        try {
            engine.load();
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        return engine;
    }

    /** Reads every scope's fence and the idempotency index back from disk. */
    private void load() {
        try (RocksIterator fences = db.newIterator(fenceFamily)) {
            for (fences.seekToFirst(); fences.isValid(); fences.next()) {
                String scope = StoreCodec.scopeOfFenceKey(fences.key());
                scopes.put(scope, ScopeState.persisted(scope, StoreCodec.decodeFence(fences.value())));
            }
            fences.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("cannot read the fences of the store at " + directory + ": " + e, e);
        }
        scopeCount.set(scopes.size());
        long now = ticker.nanoTime();
        List<IdempotencyIndex.Entry> entries = new ArrayList<>();
        try (RocksIterator records = db.newIterator(idempotencyFamily)) {
            for (records.seekToFirst(); records.isValid(); records.next()) {
                String[] parts = StoreCodec.splitIdempotencyKey(records.key());
                entries.add(new IdempotencyIndex.Entry(new IdempotencyIndex.Key(parts[0], parts[1]),
                        StoreCodec.decodeIdempotency(records.value()), now));
            }
            records.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("cannot read the idempotency records at " + directory + ": " + e, e);
        }
        entries.sort(Comparator.comparingLong(entry -> entry.record().sequence()));
        entries.forEach(idempotency::load);
    }

    /**
     * Applies {@code ops} to {@code scope} when the token in {@code sequencer} is admitted, durably, before
     * returning; or changes nothing.
     *
     * <p>Concurrent writes are committed in batches: each is admitted in arrival order against the accepted token
     * the writes to its scope before it left, and the admitted ones share one synced batch. The outcome is the
     * same as if they had come one after another; only the fsync is shared. The wait ignores interrupts (and keeps
     * the flag): a queued write may already be on its way to disk.
     *
     * <p>With an idempotency key, a retry of a write already applied with the same token, which is not superseded,
     * returns the first result with {@code replayed=true} and applies nothing; a retry whose token is now
     * superseded is refused as stale. A token higher than an open unit's preempts that unit.
     *
     * @param idempotencyKey null, or 1 to 256 bytes naming this write within the scope
     * @throws InvalidArgumentException for a malformed scope, sequencer, idempotency key, or op, and for ops
     *     beyond {@code opsPerWriteMax}, {@code keyBytesMax}, {@code valueBytesMax} or {@code batchBytesMax}
     * @throws io.fencer.core.BadTokenSignatureException when keys are configured and the signature is not valid
     * @throws ScopeMismatchException when the token's lock is not the scope's
     * @throws StaleTokenException when the scope's policy refuses the token
     * @throws LimitExceededException when a unit of the same token holds the scope ({@code unitsPerScopeMax}),
     *     the write would create a scope beyond {@code scopesMax}, or too many writes wait for the committer
     * @throws UnavailableException when the store is closed or the disk write failed (then it may have applied)
     */
    public WriteResult write(String scope, String sequencer, List<Op> ops, String idempotencyKey) {
        if (committer.isCommitterThread()) {
            throw new IllegalStateException("write to scope '" + scope + "' from a callback on the store's committer"
                    + " thread: it would wait for itself; use writeAsync");
        }
        CompletableFuture<WriteResult> outcome = submit(scope, sequencer, ops, idempotencyKey).outcome();
        try {
            return outcome.join(); // ignores interrupts: a queued write may already be in a batch on its way to disk
        } catch (CompletionException e) {
            throw (RuntimeException) e.getCause(); // every outcome is a result or a RuntimeException
        }
    }

    /**
     * Queues the write that {@link #write} makes and returns its outcome at once: the asynchronous form, for a
     * server that must not hold a thread per write. The future completes once the write is durable, or refused, or
     * failed, with the result or exception {@code write} would return or throw; its callbacks run on the store's
     * committer thread, so they must be short (hand an answer to the transport, wake a thread).
     *
     * @throws InvalidArgumentException for a malformed request, before anything is queued (as {@link #write})
     * @throws ScopeMismatchException when the scope does not exist and is not the token's lock
     * @throws LimitExceededException when {@value #WRITES_QUEUED_MAX} writes or {@value #WRITE_BYTES_QUEUED_MAX}
     *     bytes already wait for the committer
     * @throws UnavailableException when the store is closed or closing
     */
    public CompletableFuture<WriteResult> writeAsync(String scope, String sequencer, List<Op> ops,
            String idempotencyKey) {
        return submit(scope, sequencer, ops, idempotencyKey).outcome().copy();
    }

    private PendingWrite submit(String scope, String sequencer, List<Op> ops, String idempotencyKey) {
        LockNames.check("scope", scope);
        FencingToken token = parseToken(sequencer);
        List<Op> opsCopy = List.copyOf(ops);
        long bytes = checkOps(scope, opsCopy);
        if (idempotencyKey != null) {
            LockNames.check("idempotencyKey", idempotencyKey);
        }
        if (!scopes.containsKey(scope) && !scope.equals(token.lock())) { // refused before it makes a placeholder
            throw new ScopeMismatchException(scope, token);
        }
        PendingWrite write = new PendingWrite(scope, token, opsCopy, idempotencyKey, bytes);
        enter();
        try {
            committer.submit(write);
        } finally {
            exit();
        }
        return write;
    }

    /** The writes of one scope in a batch, in arrival order, and the group they are admitted into. */
    private record ScopeCommit(List<PendingWrite> writes, WriteGroup group) {}

    /**
     * Commits one batch of queued writes, on the committer's thread. Groups them by scope in arrival order; admits
     * each scope's writes under its guard, one after another against the accepted token the writes before them
     * left (a stale one is refused alone); writes every admitted write, with one fence record per scope, in one
     * synced RocksDB write: one fsync for the batch. Only then does it update each scope's state, release the
     * guards and complete every write. When that write fails, every write of the scopes it held fails with
     * {@link UnavailableException} and their states stay as they were.
     */
    private void commitBatch(List<PendingWrite> batch) {
        Map<String, List<PendingWrite>> byScope = new LinkedHashMap<>();
        boolean keyed = false;
        for (PendingWrite write : batch) {
            byScope.computeIfAbsent(write.scope, scope -> new ArrayList<>()).add(write);
            keyed |= write.idempotencyKey != null;
        }
        List<ScopeCommit> commits = new ArrayList<>(byScope.size());
        enter();
        try (WriteBatch rocksBatch = new WriteBatch()) {
            try {
                long now = ticker.nanoTime();
                for (List<PendingWrite> writes : byScope.values()) {
                    ScopeState state = lockScope(writes.get(0).scope);
                    ScopeCommit commit = new ScopeCommit(writes, new WriteGroup(state, rocksBatch, dataFamily,
                            fenceFamily, idempotencyFamily, idempotency));
                    commits.add(commit);
                    groupListener.taken(state.scope, writes.size());
                    for (PendingWrite write : writes) {
                        admitIntoGroup(commit.group(), write, now);
                    }
                }
                writeAndPublish(rocksBatch, commits);
            } catch (RocksDBException e) {
                failBatch(commits, byScope.values(), e);
            } finally {
                for (ScopeCommit commit : commits) {
                    releaseScope(commit.group().state, commit.group().isScopeReserved());
                    unlockScope(commit.group().state);
                }
            }
        } finally {
            exit();
        }
        if (keyed && idempotency.isOverfull()) { // before the answers: a writer never sees the index over its bound
            try {
                sweepIdempotency();
            } catch (UnavailableException e) {
                // the writes are durable and their results stand; the next sweep evicts what this one could not
            }
        }
        for (PendingWrite write : batch) {
            assert !write.isAppliedNow() || scopes.get(write.scope).accepted >= write.token.value()
                    : "write of token " + write.token + " to scope " + write.scope + " acknowledged unpublished";
            write.complete();
        }
    }

    /** Writes the batch of every group that admitted a write, synced, then publishes those groups. */
    private void writeAndPublish(WriteBatch rocksBatch, List<ScopeCommit> commits) throws RocksDBException {
        List<WriteGroup> writing = new ArrayList<>(commits.size());
        for (ScopeCommit commit : commits) {
            WriteGroup group = commit.group();
            if (!group.applied().isEmpty()) {
                assert group.accepted() >= group.state.accepted : "group of scope " + group.state.scope
                        + " would lower the accepted token from " + group.state.accepted + " to " + group.accepted();
                group.addFence();
                writing.add(group);
            }
        }
        if (writing.isEmpty()) {
            return;
        }
        db.write(syncWrite, rocksBatch);
        batchesWritten.incrementAndGet();
        for (WriteGroup group : writing) {
            group.durable();
            publish(group);
        }
    }

    /**
     * Fails, after the batch's RocksDB write (or building it) failed, every write of a scope that had a write in
     * it, and every write not decided yet; refusals and replays of scopes with nothing in the batch stand.
     */
    private static void failBatch(List<ScopeCommit> commits, Iterable<List<PendingWrite>> byScope,
            RocksDBException e) {
        for (ScopeCommit commit : commits) {
            if (!commit.group().applied().isEmpty()) {
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

    /**
     * Decides the outcome of {@code write} against the group's running state: a replay of an earlier result, a
     * refusal, or admission into the group's batch. Refusals concern this write alone.
     */
    private void admitIntoGroup(WriteGroup group, PendingWrite write, long now) throws RocksDBException {
        ScopeState state = group.state;
        FencingToken token = write.token;
        try {
            checkBinding(state, token);
            IdempotencyIndex.Key key = write.idempotencyKey == null ? null
                    : new IdempotencyIndex.Key(state.scope, write.idempotencyKey);
            WriteResult replay = key == null ? null : replayOf(group, key, token, now);
            if (replay != null) {
                write.decide(replay);
                return;
            }
            Unit preempted = admit(state, token, group.accepted(), group.openUnit(), now);
            if (!group.isScopeReserved()) {
                group.scopeReserved(reserveScope(state, token));
            }
            if (preempted != null) {
                group.preempt(preempted, token.value());
            }
            long accepted = Math.max(group.accepted(), token.value());
            assert accepted >= group.accepted() && accepted >= state.accepted
                    : "accepted " + accepted + " below " + group.accepted() + " for scope " + state.scope;
            write.decide(group.add(token, write.ops, key, accepted, now));
        } catch (StaleTokenException | ScopeMismatchException | LimitExceededException e) {
            write.decide(e);
        }
    }

    /**
     * Returns the first result of a retry of a write with the same idempotency key and token, earlier in this
     * group or on record, when that token is not superseded; or null when {@code token} must be admitted anew.
     */
    private WriteResult replayOf(WriteGroup group, IdempotencyIndex.Key key, FencingToken token, long now) {
        if (token.value() < group.accepted()) {
            return null;
        }
        WriteGroup.Applied earlier = group.appliedWithKey(key); // newer than any record on disk
        if (earlier != null) {
            return earlier.token() == token.value() ? earlier.result().asReplay() : null;
        }
        IdempotencyIndex.Entry prior = idempotency.find(key, now);
        return prior != null && prior.record().token() == token.value()
                ? resultOf(group.state.scope, prior.record()).asReplay() : null;
    }

    /**
     * Updates the scope's state after the group's batch is durable: accepted token and revision, idempotency
     * records and apply listener in admission order, and the unit the group preempted. Call under the guard.
     */
    private void publish(WriteGroup group) {
        ScopeState state = group.state;
        assert group.isDurable() : "group of scope " + state.scope + " published before its batch was durable";
        state.applied(group.accepted(), group.revision());
        for (WriteGroup.Applied applied : group.applied()) {
            if (applied.idempotencyEntry() != null) {
                idempotency.put(applied.idempotencyEntry());
            }
            applyListener.applied(state.scope, applied.token(), applied.acceptedBefore());
        }
        if (group.preempted() != null) {
            endUnit(state, group.preempted(), Unit.State.PREEMPTED, group.preemptingToken(), null);
        }
    }

    /**
     * Writes {@code ops} with {@code accepted} as a group of one (a unit's commit, or the control's write): data,
     * fence and idempotency record in one synced batch, then updates the scope's state; call under the guard.
     */
    private WriteResult applyAlone(ScopeState state, FencingToken token, List<Op> ops, long accepted, long now) {
        try (WriteBatch batch = new WriteBatch()) {
            WriteGroup group = new WriteGroup(state, batch, dataFamily, fenceFamily, idempotencyFamily, idempotency);
            WriteResult result = group.add(token, ops, null, accepted, now);
            group.addFence();
            db.write(syncWrite, batch);
            group.durable();
            publish(group);
            return result;
        } catch (RocksDBException e) {
            throw new UnavailableException("the write to scope '" + state.scope + "' with token " + token
                    + " failed and may or may not have been applied: " + e.getMessage(), e);
        }
    }

    /**
     * Checks {@code token} against {@code accepted} and {@code openUnit}, the scope's as the request sees them;
     * call under the scope's guard. Ends an open unit whose deadline passed.
     *
     * @return the open unit that {@code token}, being higher, preempts; or null
     */
    private Unit admit(ScopeState state, FencingToken token, long accepted, Unit openUnit, long now) {
        if (!state.policy.admits(token.value(), accepted)) {
            throw new StaleTokenException(state.scope, token.value(), accepted, state.policy);
        }
        if (openUnit == null) {
            return null;
        }
        if (now - openUnit.deadlineNanos() >= 0) {
            endUnit(state, openUnit, Unit.State.EXPIRED, 0, null);
            return null;
        }
        if (token.value() > openUnit.token().value()) {
            return openUnit;
        }
        assert token.value() == openUnit.token().value()
                : "token " + token + " below open unit " + openUnit + " passed the fence of " + state.scope;
        throw new LimitExceededException("unitsPerScopeMax", 1, "scope '" + state.scope + "' is held by open unit "
                + openUnit.id() + " of token " + openUnit.token() + " until it commits, aborts or times out; token "
                + token + " may not write meanwhile (a higher token would preempt the unit)");
    }

    /**
     * Reads {@code key} of {@code scope} with the token that wrote it and the scope's accepted token, from one
     * snapshot. With a sequencer, this is a fenced read: a token below the accepted one is refused (under either
     * policy: the current holder may read what it wrote), so a stale holder learns it on reads too. Reads never
     * change the fence.
     *
     * @param fencingSequencer null for a plain read
     * @throws StaleTokenException when the presented token is below the scope's accepted token
     * @throws ScopeMismatchException when the presented token's lock is not the scope's
     */
    public ReadResult get(String scope, byte[] key, String fencingSequencer) {
        LockNames.check("scope", scope);
        Objects.requireNonNull(key, "key");
        checkKey(scope, key);
        FencingToken token = fencingSequencer == null ? null : parseToken(fencingSequencer);
        enter();
        try {
            byte[] fenceBytes;
            byte[] dataBytes;
            Snapshot snapshot = db.getSnapshot();
            try (ReadOptions read = new ReadOptions().setSnapshot(snapshot)) {
                fenceBytes = db.get(fenceFamily, read, StoreCodec.fenceKey(scope));
                dataBytes = db.get(dataFamily, read, StoreCodec.dataKey(scope, key));
            } catch (RocksDBException e) {
                throw new UnavailableException("the read of scope '" + scope + "' failed: " + e.getMessage(), e);
            } finally {
                db.releaseSnapshot(snapshot);
            }
            StoreCodec.FenceRecord fence = fenceBytes == null
                    ? new StoreCodec.FenceRecord(scope, FencePolicy.AT_LEAST, FencingToken.NONE, 0)
                    : StoreCodec.decodeFence(fenceBytes);
            if (token != null && !fence.lock().equals(token.lock())) {
                throw new ScopeMismatchException(scope, token);
            }
            if (token != null && token.value() < fence.accepted()) {
                throw new StaleTokenException(scope, token.value(), fence.accepted(), fence.policy());
            }
            StoreCodec.DataRecord data = dataBytes == null ? null : StoreCodec.decodeData(dataBytes);
            return new ReadResult(scope, data == null ? null : data.value(),
                    data == null ? FencingToken.NONE : data.token(), fence.accepted());
        } finally {
            exit();
        }
    }

    /** Returns the scope's accepted token value, or 0 when it has accepted none. */
    public long accepted(String scope) {
        LockNames.check("scope", scope);
        ScopeState state = scopes.get(scope);
        return state == null ? FencingToken.NONE : state.accepted;
    }

    /** Returns the state of {@code scope}; a scope never written to reports {@code exists=false} and defaults. */
    public ScopeInfo scope(String scope) {
        LockNames.check("scope", scope);
        ScopeState state = lockScope(scope);
        try {
            return state.info();
        } finally {
            unlockScope(state);
        }
    }

    /**
     * Creates {@code scope} bound to {@code lock} with {@code policy}, durably. Creating an existing scope with
     * the same binding returns it; with another binding is refused. Without this call, the first write creates a
     * scope bound to the lock of the scope's own name, with policy {@link FencePolicy#AT_LEAST}.
     *
     * @throws InvalidArgumentException when the scope exists with another lock or policy
     * @throws LimitExceededException beyond {@code scopesMax}
     */
    public ScopeInfo createScope(String scope, String lock, FencePolicy policy) {
        LockNames.check("scope", scope);
        LockNames.check("lock", lock);
        Objects.requireNonNull(policy, "policy");
        enter();
        try {
            ScopeState state = lockScope(scope);
            try {
                if (state.persisted) {
                    if (state.lock.equals(lock) && state.policy == policy) {
                        return state.info();
                    }
                    throw new InvalidArgumentException("scope", scope, "scope '" + scope
                            + "' is already bound to lock '" + state.lock + "' with policy " + state.policy
                            + "; it cannot be bound to lock '" + lock + "' with policy " + policy);
                }
                boolean reserved = reserveScope(state, null);
                try {
                    state.lock = lock;
                    state.policy = policy;
                    writeFence(state, FencingToken.NONE);
                    return state.info();
                } finally {
                    if (!state.persisted) {
                        state.lock = scope;
                        state.policy = FencePolicy.AT_LEAST;
                    }
                    releaseScope(state, reserved);
                }
            } finally {
                unlockScope(state);
            }
        } finally {
            exit();
        }
    }

    /**
     * Begins a unit on {@code scope}: checks the token once, raises the scope's accepted token to it durably, and
     * holds the scope until the unit commits, aborts, is preempted by a higher token, or passes its deadline
     * ({@code timeout} from now by the ticker).
     *
     * @throws InvalidArgumentException for a malformed scope or sequencer, or a timeout not in
     *     (0, {@code unitDurationMax}]
     * @throws StaleTokenException as {@link #write}
     * @throws ScopeMismatchException as {@link #write}
     * @throws io.fencer.core.BadTokenSignatureException as {@link #write}
     * @throws LimitExceededException when a unit of the same token holds the scope ({@code unitsPerScopeMax}),
     *     or beyond {@code unitsOpenMax} or {@code scopesMax}
     */
    public Unit begin(String scope, String sequencer, Duration timeout) {
        LockNames.check("scope", scope);
        FencingToken token = parseToken(sequencer);
        checkTimeout(scope, timeout);
        enter();
        try {
            ScopeState state = lockScopeFor(scope, token);
            try {
                return beginGuarded(state, token, timeout);
            } finally {
                unlockScope(state);
            }
        } finally {
            exit();
        }
    }

    private Unit beginGuarded(ScopeState state, FencingToken token, Duration timeout) {
        checkBinding(state, token);
        long now = ticker.nanoTime();
        Unit preempted = admit(state, token, state.accepted, state.openUnit, now);
        if (unitCount.incrementAndGet() > options.unitsOpenMax()) {
            unitCount.decrementAndGet();
            throw new LimitExceededException("unitsOpenMax", options.unitsOpenMax(), options.unitsOpenMax()
                    + " units are open, the most allowed; token " + token + " cannot begin one on scope '"
                    + state.scope + "'");
        }
        boolean begun = false;
        boolean reserved = false;
        try {
            reserved = reserveScope(state, token);
            if (preempted != null) {
                endUnit(state, preempted, Unit.State.PREEMPTED, token.value(), null);
            }
            if (!state.persisted || token.value() > state.accepted) {
                writeFence(state, token.value());
            }
            Unit unit = new Unit(this, newUnitId(), state.scope, token, state.policy, timeout,
                    now + timeout.toNanos());
            state.openUnit = unit;
            units.put(unit.id(), unit);
            begun = true;
            return unit;
        } finally {
            if (!begun) {
                unitCount.decrementAndGet();
            }
            releaseScope(state, reserved);
        }
    }

    /** Returns the open unit of id {@code id}, if any; units leave this registry when they end. */
    public Optional<Unit> unit(String id) {
        return id == null ? Optional.empty() : Optional.ofNullable(units.get(id));
    }

    /** Returns the number of open units. */
    public int unitsOpen() {
        return units.size();
    }

    /**
     * Aborts every open unit whose deadline has passed by the ticker, releasing its scope; a server calls it
     * periodically. Returns the number of units aborted.
     */
    public int expireUnits() {
        long now = ticker.nanoTime();
        int expired = 0;
        for (Unit unit : units.values()) {
            if (now - unit.deadlineNanos() < 0) {
                continue;
            }
            ScopeState state = lockScope(unit.scope());
            try {
                unit.lock.lock();
                try {
                    if (unit.state() == Unit.State.OPEN && state.openUnit == unit) {
                        endUnit(state, unit, Unit.State.EXPIRED, 0, null);
                        expired++;
                    }
                } finally {
                    unit.lock.unlock();
                }
            } finally {
                unlockScope(state);
            }
        }
        return expired;
    }

    WriteResult commit(Unit unit) {
        enter();
        try {
            ScopeState state = lockScope(unit.scope());
            try {
                unit.lock.lock();
                try {
                    return commitGuarded(state, unit);
                } finally {
                    unit.lock.unlock();
                }
            } finally {
                unlockScope(state);
            }
        } finally {
            exit();
        }
    }

    private WriteResult commitGuarded(ScopeState state, Unit unit) {
        if (unit.state() == Unit.State.COMMITTED) {
            return unit.result();
        }
        unit.checkOpen();
        assert state.openUnit == unit : "open unit " + unit + " is not the open unit of scope " + state.scope;
        long now = ticker.nanoTime();
        if (now - unit.deadlineNanos() >= 0) {
            endUnit(state, unit, Unit.State.EXPIRED, 0, null);
            unit.checkOpen();
        }
        assert state.accepted == unit.token().value()
                : "accepted " + state.accepted + " != unit token " + unit.token() + " while the unit is open";
        try {
            WriteResult result = applyAlone(state, unit.token(), unit.ops(), state.accepted, now);
            endUnit(state, unit, Unit.State.COMMITTED, 0, result);
            return result;
        } catch (UnavailableException e) {
            endUnit(state, unit, Unit.State.FAILED, 0, null);
            throw e;
        }
    }

    void abort(Unit unit) {
        ScopeState state = lockScope(unit.scope());
        try {
            unit.lock.lock();
            try {
                Unit.State current = unit.state();
                if (current == Unit.State.COMMITTED) {
                    throw new InvalidArgumentException("unit", unit.id(), "unit " + unit.id() + " of scope '"
                            + unit.scope() + "' is already committed; it cannot be aborted");
                }
                if (current == Unit.State.OPEN) {
                    endUnit(state, unit, Unit.State.ABORTED, 0, null);
                }
            } finally {
                unit.lock.unlock();
            }
        } finally {
            unlockScope(state);
        }
    }

    /** Ends {@code unit} and releases its scope; call under the scope's guard. */
    private void endUnit(ScopeState state, Unit unit, Unit.State outcome, long preemptingToken, WriteResult result) {
        assert state.guard.isHeldByCurrentThread() : "unit " + unit + " ended without the guard of " + state.scope;
        assert state.openUnit == unit : "unit " + unit + " is not the open unit of scope " + state.scope;
        unit.lock.lock();
        try {
            unit.end(outcome, preemptingToken, result);
        } finally {
            unit.lock.unlock();
        }
        state.openUnit = null;
        units.remove(unit.id());
        unitCount.decrementAndGet();
    }

    /**
     * Evicts idempotency records beyond {@code idempotencyEntriesMax} (oldest first) and older than
     * {@code idempotencyAgeMax}, each under its scope's guard. Writes call it when the index is over full; a
     * server also calls it periodically for the age bound. Returns the number of records evicted.
     */
    public int sweepIdempotency() {
        int roundsMax = options.idempotencyEntriesMax() / SWEEP_BATCH + 2;
        int slack = Math.max(1, options.idempotencyEntriesMax() / 100);
        int evicted = 0;
        enter();
        try {
            for (int round = 0; round < roundsMax; round++) {
                List<IdempotencyIndex.Entry> victims = idempotency.victims(ticker.nanoTime(), SWEEP_BATCH, slack);
                int evictedNow = victims.isEmpty() ? 0 : evict(victims);
                evicted += evictedNow;
                if (evictedNow == 0) {
                    break;
                }
            }
        } finally {
            exit();
        }
        return evicted;
    }

    private int evict(List<IdempotencyIndex.Entry> victims) {
        Map<String, List<IdempotencyIndex.Entry>> byScope = new LinkedHashMap<>();
        for (IdempotencyIndex.Entry victim : victims) {
            byScope.computeIfAbsent(victim.key().scope(), scope -> new ArrayList<>()).add(victim);
        }
        int evicted = 0;
        for (Map.Entry<String, List<IdempotencyIndex.Entry>> group : byScope.entrySet()) {
            ScopeState state = lockScope(group.getKey());
            try (WriteBatch batch = new WriteBatch()) {
                List<IdempotencyIndex.Entry> current = group.getValue().stream().filter(idempotency::isCurrent)
                        .toList();
                for (IdempotencyIndex.Entry entry : current) {
                    batch.delete(idempotencyFamily,
                            StoreCodec.idempotencyKey(entry.key().scope(), entry.key().idempotencyKey()));
                }
                if (!current.isEmpty()) {
                    db.write(sweepWrite, batch);
                }
                for (IdempotencyIndex.Entry entry : current) {
                    evicted += idempotency.removeIfCurrent(entry) ? 1 : 0;
                }
            } catch (RocksDBException e) {
                throw new UnavailableException("evicting idempotency records of scope '" + group.getKey()
                        + "' failed: " + e.getMessage(), e);
            } finally {
                unlockScope(state);
            }
        }
        return evicted;
    }

    /** Returns the number of idempotency records held. */
    public int idempotencyEntries() {
        return idempotency.size();
    }

    public Path directory() {
        return directory;
    }

    public StoreOptions options() {
        return options;
    }

    /**
     * Closes the store after the operations in progress; later operations throw {@link UnavailableException}.
     * Open units end unapplied. Idempotent.
     */
    @Override
    public void close() {
        committer.stop(); // commits the writes already queued; later ones are refused
        lifecycle.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (PendingWrite write : committer.leftovers()) {
                write.decide(new UnavailableException("the store at " + directory + " closed before the write to"
                        + " scope '" + write.scope + "' with token " + write.token + " was committed; it was not applied"));
                write.complete();
            }
            for (ColumnFamilyHandle handle : handles) {
                handle.close();
            }
            db.close();
            syncWrite.close();
            sweepWrite.close();
            familyOptions.close();
            databaseOptions.close();
        } finally {
            lifecycle.writeLock().unlock();
        }
    }

    @Override
    public String toString() {
        return "StoreEngine[" + directory + ", scopes=" + scopeCount.get() + ", units=" + units.size() + "]";
    }

    // ---- checks shared with Unit ----

    /** Checks the ops of one write against the limits; returns their bytes of keys and values. */
    long checkOps(String scope, List<Op> ops) {
        if (ops.isEmpty()) {
            throw new InvalidArgumentException("ops", "[]", "a write to scope '" + scope + "' needs at least one op");
        }
        if (ops.size() > options.opsPerWriteMax()) {
            throw new InvalidArgumentException("ops", Integer.toString(ops.size()), "a write to scope '" + scope
                    + "' has " + ops.size() + " ops, more than the opsPerWriteMax of " + options.opsPerWriteMax());
        }
        long bytes = 0;
        for (Op op : ops) {
            checkOp(scope, op);
            bytes += op.bytes();
        }
        checkBatchBytes(scope, bytes);
        return bytes;
    }

    void checkOp(String scope, Op op) {
        checkKey(scope, op.keyBytes());
        byte[] value = op.valueBytes();
        if (value != null && value.length > options.valueBytesMax()) {
            throw new InvalidArgumentException("value", value.length + " bytes", "the value of key "
                    + StoreCodec.describe(op.keyBytes()) + " in scope '" + scope + "' is " + value.length
                    + " bytes, more than the valueBytesMax of " + options.valueBytesMax());
        }
    }

    /** Checks a unit's totals after adding one op; call under the unit's lock. */
    void checkUnitTotals(Unit unit, int opsCount, long bytes) {
        if (opsCount > options.opsPerWriteMax()) {
            throw new InvalidArgumentException("ops", Integer.toString(opsCount), "unit " + unit.id() + " of scope '"
                    + unit.scope() + "' would hold " + opsCount + " ops, more than the opsPerWriteMax of "
                    + options.opsPerWriteMax());
        }
        checkBatchBytes(unit.scope(), bytes);
    }

    private void checkBatchBytes(String scope, long bytes) {
        if (bytes > options.batchBytesMax()) {
            throw new InvalidArgumentException("ops", bytes + " bytes", "a write to scope '" + scope + "' carries "
                    + bytes + " bytes of keys and values, more than the batchBytesMax of " + options.batchBytesMax());
        }
    }

    private void checkKey(String scope, byte[] key) {
        if (key.length == 0) {
            throw new InvalidArgumentException("key", "", "keys must not be empty (scope '" + scope + "')");
        }
        if (key.length > options.keyBytesMax()) {
            throw new InvalidArgumentException("key", StoreCodec.describe(key), "key " + StoreCodec.describe(key)
                    + " in scope '" + scope + "' is " + key.length + " bytes, more than the keyBytesMax of "
                    + options.keyBytesMax());
        }
    }

    private void checkTimeout(String scope, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new InvalidArgumentException("timeout", timeout.toString(), "a unit timeout must be positive, got "
                    + timeout + " for scope '" + scope + "'");
        }
        if (timeout.compareTo(options.unitDurationMax()) > 0) {
            throw new InvalidArgumentException("timeout", timeout.toString(), "unit timeout " + timeout
                    + " for scope '" + scope + "' is more than the unitDurationMax of " + options.unitDurationMax());
        }
    }

    private FencingToken parseToken(String sequencer) {
        return Sequencer.parse(sequencer, options.keys());
    }

    private static void checkBinding(ScopeState state, FencingToken token) {
        if (!state.lock.equals(token.lock())) {
            throw new ScopeMismatchException(state.scope, token);
        }
    }

    // ---- scope guards and reservations ----

    /**
     * Locks the scope's guard for a request carrying {@code token}. A token that cannot match a scope that does
     * not exist (bound by default to its own name) is refused before a placeholder is made for it.
     */
    private ScopeState lockScopeFor(String scope, FencingToken token) {
        if (!scopes.containsKey(scope) && !scope.equals(token.lock())) {
            throw new ScopeMismatchException(scope, token);
        }
        return lockScope(scope);
    }

    /** Locks the guard of {@code scope}, making a placeholder state when the scope does not exist. */
    private ScopeState lockScope(String scope) {
        while (true) {
            ScopeState state = scopes.computeIfAbsent(scope, ScopeState::new);
            state.guard.lock();
            if (!state.discarded) {
                return state;
            }
            state.guard.unlock(); // another request discarded this placeholder meanwhile: take the new one
        }
    }

    /** Unlocks the guard, first discarding the state when it is a placeholder nothing persisted. */
    private void unlockScope(ScopeState state) {
        try {
            if (!state.persisted && !state.discarded) {
                assert state.openUnit == null : "unpersisted scope " + state.scope + " has open unit " + state.openUnit;
                state.discarded = true;
                scopes.remove(state.scope, state);
            }
        } finally {
            state.guard.unlock();
        }
    }

    /** Reserves a place for a scope about to be persisted; returns true when it reserved one. */
    private boolean reserveScope(ScopeState state, FencingToken token) {
        if (state.persisted) {
            return false;
        }
        if (scopeCount.incrementAndGet() > options.scopesMax()) {
            scopeCount.decrementAndGet();
            throw new LimitExceededException("scopesMax", options.scopesMax(), "the store holds "
                    + options.scopesMax() + " scopes, the most allowed; scope '" + state.scope + "' cannot be created"
                    + (token == null ? "" : " by token " + token));
        }
        return true;
    }

    /** Gives back a reservation whose scope was not persisted after all. */
    private void releaseScope(ScopeState state, boolean reserved) {
        if (reserved && !state.persisted) {
            scopeCount.decrementAndGet();
        }
    }

    /** Writes the scope's fence record alone, synced, with {@code accepted}; call under the guard. */
    private void writeFence(ScopeState state, long accepted) {
        try {
            db.put(fenceFamily, syncWrite, StoreCodec.fenceKey(state.scope),
                    StoreCodec.fenceValue(state.lock, state.policy, accepted, state.revision));
        } catch (RocksDBException e) {
            throw new UnavailableException("writing the fence of scope '" + state.scope
                    + "' failed and may or may not have been applied: " + e.getMessage(), e);
        }
        state.applied(accepted, state.revision);
    }

    private static WriteResult resultOf(String scope, StoreCodec.IdempotencyRecord record) {
        return new WriteResult(scope, record.token(), record.accepted(), record.revision(), record.opsApplied(),
                false);
    }

    private static String newUnitId() {
        byte[] id = new byte[UNIT_ID_BYTES];
        UNIT_IDS.nextBytes(id);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(id);
    }

    private void enter() {
        lifecycle.readLock().lock();
        if (closed) {
            lifecycle.readLock().unlock();
            throw new UnavailableException("the store at " + directory + " is closed");
        }
    }

    private void exit() {
        lifecycle.readLock().unlock();
    }

    // ---- test hooks ----

    /** Observes every applied write inside the scope's guard, in apply order; for tests. */
    interface ApplyListener {
        ApplyListener NONE = (scope, token, acceptedBefore) -> { };

        void applied(String scope, long token, long acceptedBefore);
    }

    void applyListener(ApplyListener listener) {
        this.applyListener = Objects.requireNonNull(listener, "listener");
    }

    /** Observes every group commit inside the scope's guard, after it took its writes, before it admits them. */
    interface GroupListener {
        GroupListener NONE = (scope, writes) -> { };

        void taken(String scope, int writes);
    }

    void groupListener(GroupListener listener) {
        this.groupListener = Objects.requireNonNull(listener, "listener");
    }

    /** Returns the number of writes queued on {@code scope} and not yet taken into a group; for tests. */
    int pendingWrites(String scope) {
        return committer.queued(scope);
    }

    /** Returns the number of synced RocksDB writes made for batches of queued writes so far; for tests. */
    long batchesWritten() {
        return batchesWritten.get();
    }

    /**
     * Makes RocksDB itself refuse every synced write while {@code refuse} is true (a synced write without a WAL is
     * invalid), so tests reach the failure path of a real {@code db.write}; for tests only.
     */
    void refuseSyncedWritesForTest(boolean refuse) {
        syncWrite.setDisableWAL(refuse);
    }

    /**
     * The seed's broken pattern, kept for the control test only: checks the token under the guard, releases the
     * guard, then writes in a second step setting accepted to the presented token, so a lower token can land after
     * a higher one. Never call it elsewhere.
     */
    WriteResult writeCheckThenActForControl(String scope, String sequencer, List<Op> ops) {
        FencingToken token = parseToken(sequencer);
        checkOps(scope, ops);
        enter();
        try {
            ScopeState checked = lockScopeFor(scope, token);
            try {
                checkBinding(checked, token);
                admit(checked, token, checked.accepted, checked.openUnit, ticker.nanoTime());
            } finally {
                unlockScope(checked);
            }
            ScopeState state = lockScopeFor(scope, token);
            boolean reserved = false;
            try {
                reserved = reserveScope(state, token);
                return applyAlone(state, token, ops, token.value(), ticker.nanoTime());
            } finally {
                releaseScope(state, reserved);
                unlockScope(state);
            }
        } finally {
            exit();
        }
    }
}

package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockNames;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Statistics;

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
    /** The most writes waiting for the committer; beyond it writes are refused with LIMIT_EXCEEDED. */
    public static final int WRITES_QUEUED_MAX = 16_384;
    /** The most bytes of keys and values waiting for the committer (a larger write alone is let in). */
    public static final long WRITE_BYTES_QUEUED_MAX = 64L << 20;

    // The engine checks requests and hands them to its parts, each package-private: the database (RocksDB, its
    // column families and lifecycle lock), the scope table (states, guards, placeholders), the open units, the
    // group commit run by the committer's thread (with WriteGroup admitting each scope's writes), and the sweeper
    // of idempotency records.
    private final StoreOptions options;
    private final RequestChecks checks;
    private final StoreDatabase database;
    private final ScopeTable scopes;
    private final IdempotencyIndex idempotency;
    private final IdempotencySweeper sweeper;
    private final StoreObservers observers = new StoreObservers();
    private final Units units;
    private final ScopeImports imports;
    private final GroupCommit commits;
    private final WriteCommitter committer;
    /** The backups being taken, released by close if still open. */
    private final Set<StoreBackup> backups = ConcurrentHashMap.newKeySet();

    private StoreEngine(StoreOptions options, StoreDatabase database) {
        this.options = options;
        this.checks = new RequestChecks(options);
        this.database = database;
        this.scopes = new ScopeTable(database, options.scopesMax());
        this.idempotency = new IdempotencyIndex(options.idempotencyEntriesMax(),
                options.idempotencyAgeMax().toNanos());
        this.sweeper = new IdempotencySweeper(database, scopes, idempotency, options.idempotencyEntriesMax(),
                options.ticker());
        this.units = new Units(database, scopes, idempotency, observers, checks, options.ticker(),
                options.unitsOpenMax());
        this.imports = new ScopeImports(database, scopes);
        this.commits = new GroupCommit(database, scopes, units, idempotency, sweeper, observers, options.ticker());
        // last: the committer's thread starts here and calls back into the group commit
        this.committer = new WriteCommitter("fencer-store-committer-" + database.directory().getFileName(),
                WRITES_QUEUED_MAX, WRITE_BYTES_QUEUED_MAX, options.batchBytesMax(), commits::commit);
    }

    /**
     * Opens (or creates) the store in {@code directory} and reads back every scope's accepted token.
     *
     * @throws UnavailableException when the directory cannot be created or RocksDB cannot open it (for example,
     *     another process holds it)
     */
    public static StoreEngine open(Path directory, StoreOptions options) {
        return open(directory, options, SyncedWrites.ROCKSDB);
    }

    /**
     * Returns true when the store in {@code directory} holds at least one scope: what a peer of a group asks of a
     * single-node store left in its data directory (one that holds none has no data and no accepted token to lose).
     * Opens the store and closes it again; false when {@code directory} does not exist or is empty.
     *
     * @throws UnavailableException when RocksDB cannot open it (for example, another process holds it)
     */
    public static boolean holdsScopes(Path directory) {
        if (!java.nio.file.Files.isDirectory(directory)) {
            return false;
        }
        try (java.util.stream.Stream<Path> entries = java.nio.file.Files.list(directory)) {
            if (entries.findAny().isEmpty()) {
                return false; // opened, it would become a database: leave an empty directory empty
            }
        } catch (java.io.IOException e) {
            throw new UnavailableException("cannot list the store directory " + directory + ": " + e.getMessage(), e);
        }
        try (StoreEngine engine = open(directory, StoreOptions.defaults())) {
            return engine.scopes.count() > 0;
        }
    }

    /**
     * Opens a replica of the replicated store in {@code directory}: the engine a peer applies the Raft log's store
     * entries to, in log order, one at a time. Its writes do not wait for the disk (the log is the durable copy; the
     * replica is rebuilt from a snapshot and the log on every start), and it checks no token signature (the leader
     * verified the token before proposing the entry, and peers must not decide differently because their keys
     * differ during a rotation). Idempotency records are evicted by count alone, oldest first by their recorded
     * sequence, never by age: the age of a record is counted from when a replica opened, which differs between
     * replicas, while the records each holds must not. Its clock stands still, for the same reason.
     */
    public static StoreEngine openReplica(Path directory, StoreOptions options) {
        Objects.requireNonNull(options, "options");
        StoreEngine engine = open(directory, options.withKeys(null).withIdempotencyAgeMax(REPLICA_IDEMPOTENCY_AGE_MAX)
                .withTicker(REPLICA_TICKER), SyncedWrites.UNSYNCED);
        engine.commits.stopInlineSweeps(); // the replica's applier sweeps after each log entry (sweepIdempotency)
        return engine;
    }

    /**
     * A replica's clock: stopped. Nothing a replica decides may depend on when it applies an entry, so no unit it
     * holds expires (a unit lives within one apply step there) and no idempotency record ages.
     */
    private static final io.fencer.core.Ticker REPLICA_TICKER = () -> 0L;

    /** The age bound of a replica's idempotency records: none that a store lives to reach (see openReplica). */
    static final Duration REPLICA_IDEMPOTENCY_AGE_MAX = Duration.ofDays(365L * 100);

    /**
     * Checks a write as {@link #write} does before it queues it, and applies nothing: the scope and idempotency key
     * names, the token (verified when the options carry keys; a shared-mode grant refused) and the ops against the
     * limits. For the leader of the replicated store, before it proposes the write to the log.
     *
     * @throws InvalidArgumentException for a malformed request
     * @throws io.fencer.core.BadTokenSignatureException when keys are configured and the token does not verify
     * @throws io.fencer.core.ModeMismatchException for a shared-mode token
     */
    public void checkWrite(String scope, String sequencer, List<Op> ops, String idempotencyKey) {
        LockNames.check("scope", scope);
        checks.parseWriteToken(scope, sequencer);
        checks.checkOps(scope, List.copyOf(ops));
        if (idempotencyKey != null) {
            LockNames.check("idempotencyKey", idempotencyKey);
        }
    }

    /**
     * Checks one op of a unit as {@link Unit#add} does before it buffers it, and applies nothing: its key (not empty,
     * within {@code keyBytesMax}) and its value (within {@code valueBytesMax}). For the leader of the replicated
     * store, which buffers a unit's ops itself: an op refused only when the commit's log entry is applied would be
     * refused after the unit began there, for ops the client was told were buffered.
     *
     * @throws InvalidArgumentException naming the key, or the value's size
     */
    public void checkUnitOp(String scope, Op op) {
        checks.checkOp(scope, Objects.requireNonNull(op, "op"));
    }

    /** Opens the store as {@link #open(Path, StoreOptions)} does; {@code syncedWrites} makes its synced writes. */
    static StoreEngine open(Path directory, StoreOptions options, SyncedWrites syncedWrites) {
        return open(directory, options, syncedWrites, null);
    }

    /**
     * Opens the store as {@link #open(Path, StoreOptions, SyncedWrites)} does, with RocksDB counting into
     * {@code statistics} (null for none), which the caller closes after the store; for tests.
     */
    static StoreEngine open(Path directory, StoreOptions options, SyncedWrites syncedWrites, Statistics statistics) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(syncedWrites, "syncedWrites");
        StoreEngine engine = new StoreEngine(options, StoreDatabase.open(directory, syncedWrites, statistics));
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
        scopes.load();
        long now = options.ticker().nanoTime();
        List<IdempotencyIndex.Entry> entries = new ArrayList<>();
        try (RocksIterator records = database.newIterator(database.idempotencyFamily())) {
            for (records.seekToFirst(); records.isValid(); records.next()) {
                String[] parts = StoreCodec.splitIdempotencyKey(records.key());
                entries.add(new IdempotencyIndex.Entry(new IdempotencyIndex.Key(parts[0], parts[1]),
                        StoreCodec.decodeIdempotency(records.value()), now));
            }
            records.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("cannot read the idempotency records at " + directory() + ": " + e, e);
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
     * superseded is refused as stale. A retry is the same request again: one with the same key and token but other
     * ops (by the {@code OpsDigest} kept with the first result) is refused with
     * {@link IdempotencyMismatchException} and applies nothing. A record written before digests were kept has
     * none and matches any retry. A token higher than an open unit's preempts that unit.
     *
     * @param idempotencyKey null, or 1 to 256 bytes naming this write within the scope
     * @throws InvalidArgumentException for a malformed scope, sequencer, idempotency key, or op, and for ops
     *     beyond {@code opsPerWriteMax}, {@code keyBytesMax}, {@code valueBytesMax} or {@code batchBytesMax}
     * @throws io.fencer.core.BadTokenSignatureException when keys are configured and the signature is not valid
     * @throws ScopeMismatchException when the token's lock is not the scope's
     * @throws StaleTokenException when the scope's policy refuses the token
     * @throws io.fencer.core.ModeMismatchException when the token is a shared-mode grant, which may read only
     * @throws IdempotencyMismatchException when the idempotency key and token were first used with other ops
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
        FencingToken token = checks.parseWriteToken(scope, sequencer);
        List<Op> opsCopy = List.copyOf(ops);
        long bytes = checks.checkOps(scope, opsCopy);
        if (idempotencyKey != null) {
            LockNames.check("idempotencyKey", idempotencyKey);
        }
        if (!scopes.isPersisted(scope)) { // refused before it makes a placeholder, or waits for a read's
            ScopeTable.checkCreatable(scope, token);
        }
        // hashed on the submitting thread: the committer's one thread serves every scope
        byte[] opsDigest = idempotencyKey == null ? null : OpsDigest.of(scope, token, opsCopy);
        PendingWrite write = new PendingWrite(scope, token, opsCopy, idempotencyKey, opsDigest, bytes);
        database.enter();
        try {
            committer.submit(write);
        } finally {
            database.exit();
        }
        return write;
    }

    /**
     * Reads {@code key} of {@code scope} with the token that wrote it and the scope's accepted token, from one
     * snapshot. With a sequencer, this is a fenced read: a token below the accepted one is refused (under either
     * policy: the current holder may read what it wrote), so a stale holder learns it on reads too. Reads never
     * change the fence. A shared-mode token (a reader of a read-write lock) is compared as any token: it reads
     * until a higher token is accepted, so a stale reader is refused once a later exclusive grant has written.
     *
     * @param fencingSequencer null for a plain read
     * @throws StaleTokenException when the presented token is below the scope's accepted token
     * @throws ScopeMismatchException when the presented token's lock is not the scope's
     */
    public ReadResult get(String scope, byte[] key, String fencingSequencer) {
        LockNames.check("scope", scope);
        Objects.requireNonNull(key, "key");
        checks.checkKey(scope, key);
        FencingToken token = fencingSequencer == null ? null : checks.parseToken(fencingSequencer);
        database.enter();
        try {
            StoreDatabase.SnapshotRead read = database.readFenceAndData(scope, key);
            StoreCodec.FenceRecord fence = read.fence() == null
                    ? new StoreCodec.FenceRecord(scope, FencePolicy.AT_LEAST, FencingToken.NONE, 0)
                    : StoreCodec.decodeFence(read.fence());
            if (token != null && !fence.lock().equals(token.lock())) {
                throw new ScopeMismatchException(scope, token);
            }
            if (token != null && token.value() < fence.accepted()) {
                throw new StaleTokenException(scope, token.value(), fence.accepted(), fence.policy());
            }
            StoreCodec.DataRecord data = read.data() == null ? null : StoreCodec.decodeData(read.data());
            return new ReadResult(scope, data == null ? null : data.value(),
                    data == null ? FencingToken.NONE : data.token(), fence.accepted());
        } finally {
            database.exit();
        }
    }

    /** Returns the scope's accepted token value, or 0 when it has accepted none. */
    public long accepted(String scope) {
        LockNames.check("scope", scope);
        ScopeState state = scopes.find(scope);
        return state == null ? FencingToken.NONE : state.accepted;
    }

    /**
     * Returns the lock {@code scope} is durably bound to, or empty while no fence record of it exists (its first write
     * binds it to the lock of its own name). Takes no guard, so it never waits for a commit; a binding being made (a
     * {@link #createScope} not yet durable) is not seen yet.
     */
    public Optional<String> binding(String scope) {
        LockNames.check("scope", scope);
        ScopeState state = scopes.find(scope);
        return state == null ? Optional.empty() : Optional.ofNullable(state.binding);
    }

    /** Returns the state of {@code scope}; a scope never written to reports {@code exists=false} and defaults. */
    public ScopeInfo scope(String scope) {
        LockNames.check("scope", scope);
        ScopeState state = scopes.lock(scope);
        try {
            return state.info();
        } finally {
            scopes.unlock(state);
        }
    }

    /**
     * Creates {@code scope} bound to {@code lock} with {@code policy}, durably. Creating an existing scope with
     * the same binding returns it; with another binding is refused. Without this call, the first write creates a
     * scope bound to the lock of the scope's own name, with policy {@link FencePolicy#AT_LEAST}. A new scope's name
     * must be one a new name may be ({@link LockNames#checkNew}).
     *
     * <p>The engine trusts its caller here: a server checks who may claim a scope before it calls this (the lock's
     * current holder, see {@code CreateScopeRequest.sequencer} in {@code store.proto}), since whoever binds a scope
     * decides for good which lock's tokens it admits.
     *
     * @throws InvalidArgumentException when the scope exists with another lock or policy, or its name is refused
     * @throws LimitExceededException beyond {@code scopesMax}
     */
    public ScopeInfo createScope(String scope, String lock, FencePolicy policy) {
        LockNames.check("scope", scope);
        LockNames.check("lock", lock);
        Objects.requireNonNull(policy, "policy");
        database.enter();
        try {
            ScopeState state = scopes.lock(scope);
            try {
                return createGuarded(state, lock, policy);
            } finally {
                scopes.unlock(state);
            }
        } finally {
            database.exit();
        }
    }

    private ScopeInfo createGuarded(ScopeState state, String lock, FencePolicy policy) {
        if (state.persisted) {
            if (state.lock.equals(lock) && state.policy == policy) {
                return state.info();
            }
            throw new InvalidArgumentException("scope", state.scope, "scope '" + state.scope
                    + "' is already bound to lock '" + state.lock + "' with policy " + state.policy
                    + "; it cannot be bound to lock '" + lock + "' with policy " + policy);
        }
        LockNames.checkNew("scope", state.scope);
        boolean reserved = scopes.reserve(state, null);
        try {
            state.lock = lock;
            state.policy = policy;
            scopes.writeFence(state, FencingToken.NONE);
            return state.info();
        } finally {
            if (!state.persisted) {
                state.lock = state.scope;
                state.policy = FencePolicy.AT_LEAST;
            }
            scopes.release(state, reserved);
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
        FencingToken token = checks.parseWriteToken(scope, sequencer);
        checks.checkTimeout(scope, timeout);
        return units.begin(scope, token, timeout);
    }

    /** Returns the open unit of id {@code id}, if any; units leave this registry when they end. */
    public Optional<Unit> unit(String id) {
        return units.find(id);
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
        return units.expire();
    }

    /**
     * Evicts idempotency records beyond {@code idempotencyEntriesMax} (oldest first) and older than
     * {@code idempotencyAgeMax}, each under its scope's guard. Writes call it when the index is over full; a
     * server also calls it periodically for the age bound. Returns the number of records evicted.
     */
    public int sweepIdempotency() {
        return sweeper.sweep();
    }

    /** Returns the number of idempotency records held. */
    public int idempotencyEntries() {
        return idempotency.size();
    }

    /**
     * Imports whole scopes of another store, in order, durably before returning. Each is created as given when this
     * store does not hold it (its fence and every key in one batch), left alone when it holds it identically (same
     * binding, revision and keys: a rerun of an import), except that its accepted token is raised to the imported one
     * when that is higher (never lowered), and refused when it holds it differently. Each is checked against this
     * store's limits first ({@link ImportedScope#check}).
     *
     * <p>The scopes' batches are written without a sync and RocksDB's log is synced once after the last: an import
     * of a thousand scopes waited for the disk a thousand times before, which on a slow disk outlasted a client's
     * attempt, so its retry found every scope "held identically". A scope is readable once written, before that
     * sync; a crash of the machine before it may lose a scope a reader saw, but not one the import answered, and any
     * synced write made after it (a write to that scope) makes it durable too, since RocksDB's log is one sequence.
     *
     * <p>The engine trusts its caller here, as for {@link #createScope}: an import sets an accepted token, which only
     * an operator may do (the server asks for {@code admin} on every scope).
     *
     * @return one outcome a scope, in order: {@link ImportOutcome.Kind#CONFLICT} naming what differs, or
     *     {@link ImportOutcome.Kind#REFUSED} naming the limit (such as {@code scopesMax}); nothing of the scope is
     *     written then (a scope that breaks a limit or is inconsistent, see {@link ImportedScope#check}, is refused
     *     so too)
     * @throws UnavailableException when the store is closed or a disk write or the sync failed (then any of the
     *     scopes may have applied)
     */
    public List<ImportOutcome> importScopes(List<ImportedScope> scopes) {
        return imports.importScopes(scopes, scope -> {
            try {
                scope.check(options);
                return null;
            } catch (InvalidArgumentException | LimitExceededException e) {
                return new ImportOutcome(scope.scope(), ImportOutcome.Kind.REFUSED, 0, e.getMessage());
            }
        });
    }

    /** Imports one whole scope as {@link #importScopes} does. */
    public ImportOutcome importScope(ImportedScope scope) {
        return importScopes(List.of(scope)).get(0);
    }

    /**
     * Starts a backup: a consistent copy of every scope's fence (binding, policy, accepted token), every key (value
     * and the token that wrote it) and every idempotency record, from one RocksDB snapshot taken now, as the bytes of
     * a {@link StoreBackupFile} made as they are asked for. Writes go on meanwhile; what they commit after the
     * snapshot is not in the backup. Close the backup when done: its snapshot pins the versions it sees.
     *
     * @param createdAtMillis the time written into the file's head, for people to read; nothing depends on it
     * @throws UnavailableException when the store is closed
     */
    public StoreBackup openBackup(long createdAtMillis) {
        database.enter();
        try {
            StoreBackup backup = new StoreBackup(database, createdAtMillis, backups::remove);
            backups.add(backup);
            return backup;
        } finally {
            database.exit();
        }
    }

    public Path directory() {
        return database.directory();
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
        database.close(() -> {
            failLeftovers();
            List.copyOf(backups).forEach(StoreBackup::releaseNow);
        });
    }

    /** Fails the writes queued after the committer stopped; runs while the database closes, once. */
    private void failLeftovers() {
        for (PendingWrite write : committer.leftovers()) {
            write.decide(new UnavailableException("the store at " + directory() + " closed before the write to"
                    + " scope '" + write.scope + "' with token " + write.token + " was committed; it was not applied"));
            write.complete();
        }
    }

    @Override
    public String toString() {
        return "StoreEngine[" + directory() + ", scopes=" + scopes.count() + ", units=" + units.size() + "]";
    }

    // ---- for tests in this package ----

    /** Observes every applied write inside the scope's guard, in apply order; for tests. */
    interface ApplyListener {
        ApplyListener NONE = (scope, token, acceptedBefore) -> { };

        void applied(String scope, long token, long acceptedBefore);
    }

    void applyListener(ApplyListener listener) {
        observers.applyListener(listener);
    }

    /** Observes every group commit inside the scope's guard, after it took its writes, before it admits them. */
    interface GroupListener {
        GroupListener NONE = (scope, writes) -> { };

        void taken(String scope, int writes);
    }

    void groupListener(GroupListener listener) {
        observers.groupListener(listener);
    }

    /** Returns the number of writes queued on {@code scope} and not yet taken into a group; for tests. */
    int pendingWrites(String scope) {
        return committer.queued(scope);
    }

    /** Returns the number of synced RocksDB writes made for batches of queued writes so far; for tests. */
    long batchesWritten() {
        return commits.batchesWritten();
    }

    /** Returns the request checks; for tests that build a write path of their own from the engine's parts. */
    RequestChecks checks() {
        return checks;
    }

    /** Returns the database; for tests that build a write path of their own from the engine's parts. */
    StoreDatabase database() {
        return database;
    }

    /** Returns the scope table; for tests that build a write path of their own from the engine's parts. */
    ScopeTable scopes() {
        return scopes;
    }

    /** Returns the open units; for tests that build a write path of their own from the engine's parts. */
    Units units() {
        return units;
    }
}

package io.fencer.server.store;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.StoreLogEntry;
import io.fencer.api.v1.StoreLogError;
import io.fencer.api.v1.StoreLogReply;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.raft.ReplicatedResource;
import io.fencer.server.rpc.ErrorCatalogue;
import io.fencer.store.Op;
import io.fencer.store.ReadResult;
import io.fencer.store.ScopeInfo;
import io.fencer.store.StoreBackup;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import io.fencer.store.StoreRestore;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced store of a group of peers, replicated in the lock group's Raft log (see {@link ReplicatedResource} for
 * why one log).
 *
 * <p>Writes: the leader checks a call as a single node's store would before it queues it (names, limits, the token's
 * signature), then proposes it as a {@link Command.StoreEntry} holding a {@link StoreLogEntry}. Every peer applies
 * the entry in log order to its replica, a {@link StoreEngine#openReplica replica engine}: the fence check and the
 * write happen there, one entry at a time, so they are atomic on every replica and in the same order on each. The
 * leader answers with its own replica's outcome, once a majority has the entry on disk (Ratis commits it only then).
 * Idempotency records are written by the same apply, so a retry sent to a new leader after a failover finds the first
 * result.
 *
 * <p>Reads are linearizable: they run through the proposer's read (Ratis's read index, answered at once under the
 * leader's lease) on the leader's replica, after every entry committed before the read began is applied, and are
 * answered only while this peer still holds the leader lease of the term the read began in (see {@link #read}). A
 * peer that does not lead refuses every call NOT_LEADER naming the leader, as the lock service does; clients follow it.
 *
 * <p>The replica is rebuilt on every start: its directory is emptied, then filled from the latest snapshot (which
 * holds the store beside the lock state) and the log after it. A restart therefore never trusts a database that a
 * crash may have left ahead of or behind the log. Units are held by the leader and committed as one entry
 * ({@link ReplicatedUnit}).
 *
 * <p>Thread-safety: {@link #apply}, {@link #beginSnapshot} and {@link #load} are called by the state machine under
 * its apply lock; the calls run on gRPC's and the store's threads, and read the replica engine through a volatile
 * field, which {@link #load} replaces.
 */
public final class ReplicatedStore implements ReplicatedResource, StoreCalls, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicatedStore.class);
    /** The version of {@link StoreLogEntry} this release writes and applies. */
    static final int ENTRY_VERSION = 1;
    /**
     * The version of a {@link StoreLogEntry} holding {@code import_scopes}: a peer that applies version 1 only halts
     * at it rather than answer it differently from its peers (it would refuse a call it does not know).
     */
    static final int ENTRY_VERSION_IMPORT = 2;
    /** The names of the copy of a snapshot's store that {@link #load} restores the replica from. */
    private static final String SNAPSHOT_COPY_PREFIX = "store-snapshot";
    private static final String SNAPSHOT_COPY_SUFFIX = ".fencerbk";
    /** The names {@code Files.createTempFile} gives such a copy (prefix, digits, suffix): none an operator's. */
    private static final Pattern SNAPSHOT_COPY = Pattern.compile(SNAPSHOT_COPY_PREFIX + "[0-9]+"
            + Pattern.quote(SNAPSHOT_COPY_SUFFIX));
    /**
     * The most bytes of one ImportScopes request, encoded: what one log entry holds
     * ({@link Command.StoreEntry#STORE_ENTRY_BYTES_MAX}), less room for the entry's own fields.
     */
    public static final int IMPORT_REQUEST_BYTES_MAX = Command.StoreEntry.STORE_ENTRY_BYTES_MAX - 1024;
    /** The most bytes of keys and values in one write: what fits in one log entry ({@link Command.StoreEntry}). */
    public static final int BATCH_BYTES_MAX = 1 << 20;
    private static final int BACKUP_PIECE_BYTES = 1 << 20;
    private static final int UNIT_ID_BYTES = 16;
    private static final java.security.SecureRandom UNIT_IDS = new java.security.SecureRandom();

    /** How often a read whose leader lease lapsed looks at it again. */
    private static final long LEASE_POLL_MILLIS = 5;

    private final Path directory;
    /**
     * The test-only switch ({@link RaftNode#UNSAFE_LEASE_ACK_PROPERTY}, read once as the store opens): reads are
     * answered on Ratis's read index alone, without the leader lease check.
     */
    private final boolean unsafeLeaseAck = RaftNode.unsafeLeaseAckRequested();
    /** The options the leader checks calls with: the configured ones, with the token keys. */
    private final StoreOptions options;
    private volatile StoreEngine replica;
    /** The server's clock: the leader's unit deadlines and the service's timings (the replica's stands still). */
    private final io.fencer.core.Ticker ticker;
    private volatile Cluster cluster;
    /** True once the group's format level admits store entries; a level never goes down. */
    private volatile boolean levelReached;
    /**
     * The open units this peer holds as leader, by scope: at most one per scope. Checked and changed holding its
     * monitor, which then takes a unit's; a unit's commit leaves it without the monitor (see {@link #commitUnit}).
     */
    private final java.util.Map<String, ReplicatedUnit> units = new java.util.concurrent.ConcurrentHashMap<>();

    /** The Raft node and proposer, known once the node started (after the state machine loaded its snapshot). */
    private record Cluster(RaftNode raft, Proposer proposer, RaftLockStateMachine stateMachine) {}

    private ReplicatedStore(Path directory, StoreOptions options) {
        this.directory = directory;
        this.options = options;
        this.ticker = options.ticker();
        this.replica = StoreEngine.openReplica(directory, options);
    }

    /**
     * Empties {@code directory} and opens an empty replica in it; the state machine then loads the snapshot into it.
     * {@code options}' limits are capped to what one log entry holds.
     */
    public static ReplicatedStore open(Path directory, StoreOptions options) throws IOException {
        Objects.requireNonNull(options, "options");
        deleteTree(directory);
        deleteLeftovers(directory);
        return new ReplicatedStore(directory, options.withBatchBytesMax(Math.min(options.batchBytesMax(),
                BATCH_BYTES_MAX)));
    }

    /** Connects the store to its group once the Raft node runs; calls before are refused UNAVAILABLE. */
    public void attach(RaftNode raft, Proposer proposer, RaftLockStateMachine stateMachine) {
        this.cluster = new Cluster(raft, proposer, stateMachine);
        stateMachine.addLeadershipHook(() -> {
            if (!raft.isLeader()) {
                abandonUnits(); // their ops were only in this peer's memory: no other leader can commit them
            }
        });
    }

    @Override
    public StoreEngine engine() {
        return replica;
    }

    /** Returns the server's clock, which the options opened with carry. */
    io.fencer.core.Ticker ticker() {
        return ticker;
    }

    @Override
    public CompletableFuture<WriteResult> write(String scope, String sequencer, List<Op> ops,
            String idempotencyKey) {
        Cluster group;
        WriteRequest.Builder write;
        try {
            group = leaderCluster();
            LockNames.check("scope", scope);
            FencingToken token = Sequencer.parse(sequencer, options.keys()); // verified once: replicas do not
            replica.checkWrite(scope, sequencer, ops, idempotencyKey); // limits, the batch capped to one entry
            synchronized (units) {
                checkOpenUnit(scope, token); // after the checks: a write they refuse must not preempt a unit
            }
            write = WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                    .setIdempotencyKey(idempotencyKey == null ? "" : idempotencyKey);
            for (Op op : ops) {
                write.addOps(wireOp(op));
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return propose(group, entry().setWrite(write)).thenApply(reply -> StoreWire.writeResult(reply.getWrite()));
    }

    @Override
    public ScopeInfo createScope(String scope, String lock, FencePolicy policy) {
        LockNames.check("scope", scope);
        LockNames.check("lock", lock);
        CreateScopeRequest create = CreateScopeRequest.newBuilder().setScope(scope).setLock(lock)
                .setPolicy(StoreWire.policy(policy)).build();
        StoreLogReply reply = join(propose(leaderCluster(), entry().setCreateScope(create)));
        return StoreWire.scopeInfo(reply.getScope());
    }

    /** Imports whole scopes as one log entry; every replica applies it ({@link StoreEngine#importScopes}). */
    @Override
    public List<io.fencer.store.ImportOutcome> importScopes(List<io.fencer.store.ImportedScope> scopes) {
        io.fencer.api.v1.ImportScopesRequest.Builder request = io.fencer.api.v1.ImportScopesRequest.newBuilder();
        scopes.forEach(scope -> request.addScopes(StoreWire.importedScope(scope)));
        StoreLogReply reply = join(propose(leaderCluster(), entry().setVersion(ENTRY_VERSION_IMPORT)
                .setImportScopes(request)));
        return StoreWire.outcomes(reply.getImported());
    }

    @Override
    public ReadResult get(String scope, byte[] key, String fencingSequencer) {
        if (fencingSequencer != null) {
            Sequencer.parse(fencingSequencer, options.keys());
        }
        return read(() -> replica.get(scope, key, fencingSequencer));
    }

    @Override
    public ScopeInfo scope(String scope) {
        return read(() -> replica.scope(scope));
    }

    /**
     * Begins a unit held by this leader ({@link ReplicatedUnit}): checks the token against the scope's fence as a
     * linearizable read, and against the unit open on the scope here, if any (the same token is refused, a lower one
     * is preempted, a higher one refuses this). The accepted token is raised when the unit commits, in the commit's
     * log entry; until then this leader refuses lower tokens' writes and units on the scope.
     */
    @Override
    public StoreUnit begin(String scope, String sequencer, Duration timeout) {
        LockNames.check("scope", scope);
        FencingToken token = Sequencer.parse(sequencer, options.keys());
        if (token.mode() != io.fencer.core.LockMode.EXCLUSIVE) {
            throw new io.fencer.core.ModeMismatchException(scope, token.value(), token.mode());
        }
        if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(options.unitDurationMax()) > 0) {
            throw new InvalidArgumentException("timeout", timeout.toString(), "unit timeout " + timeout
                    + " for scope '" + scope + "' is outside (0, " + options.unitDurationMax() + "]");
        }
        ScopeInfo fence = scope(scope);
        if (fence.exists() && !fence.lock().equals(token.lock())) {
            throw new io.fencer.core.ScopeMismatchException(scope, token);
        }
        if (!fence.policy().admits(token.value(), fence.accepted())) {
            throw new io.fencer.core.StaleTokenException(scope, token.value(), fence.accepted(), fence.policy());
        }
        synchronized (units) {
            checkOpenUnit(scope, token);
            if (units.size() >= options.unitsOpenMax()) {
                dropExpiredUnits();
            }
            if (units.size() >= options.unitsOpenMax()) {
                throw new io.fencer.core.LimitExceededException("unitsOpenMax", options.unitsOpenMax(),
                        options.unitsOpenMax() + " units are open, the most allowed; token " + token
                                + " cannot begin one on scope '" + scope + "'");
            }
            ReplicatedUnit unit = new ReplicatedUnit(newUnitId(), scope, sequencer, token, fence.policy(), timeout,
                    ticker, options, op -> replica.checkUnitOp(scope, op), this::commitUnit);
            units.put(scope, unit);
            return unit;
        }
    }

    /**
     * Checks {@code token} against the unit open on {@code scope} here: the same token may not write while the unit
     * holds the scope, a lower one is stale, and a higher one preempts it. Call holding {@link #units}.
     */
    private void checkOpenUnit(String scope, FencingToken token) {
        ReplicatedUnit open = units.get(scope);
        if (open == null || !open.isOpenAt(ticker.nanoTime())) {
            units.remove(scope, open);
            return;
        }
        if (!token.lock().equals(open.token().lock())) {
            return; // a token of another lock is never compared: the scope's binding refuses one of them in the log
        }
        if (token.value() > open.token().value()) {
            open.preempt(token.value());
            units.remove(scope, open);
        } else if (token.value() < open.token().value()) {
            // A single node's unit raised the scope's fence at its begin; this one raises it at its commit. Refused
            // here meanwhile, a superseded holder's write cannot land between the unit's reads and its commit.
            throw new StaleTokenException(scope, token.value(), open.token().value(), open.policy(), "scope '"
                    + scope + "' is held by open unit " + open.id() + " of the newer token " + open.token());
        } else {
            throw new io.fencer.core.LimitExceededException("unitsPerScopeMax", 1, "scope '" + scope
                    + "' is held by open unit " + open.id() + " of token " + open.token() + " until it commits,"
                    + " aborts or times out; token " + token + " may not write meanwhile (a higher token would"
                    + " preempt the unit)");
        }
    }

    /**
     * Drops the units past their deadline, as a single node's sweep expires its units: nothing else ends a unit its
     * client abandoned but a call to its scope. Call holding {@link #units}; a unit whose commit began before its
     * deadline is waited for, as {@link #checkOpenUnit} waits for it.
     */
    private void dropExpiredUnits() {
        long now = ticker.nanoTime();
        units.values().removeIf(unit -> unit.pastDeadlineAt(now) && !unit.isOpenAt(now));
    }

    /** Commits {@code unit} as one log entry; see {@link ReplicatedUnit#commit}. */
    private WriteResult commitUnit(ReplicatedUnit unit) {
        try {
            Cluster group = leaderCluster();
            io.fencer.api.v1.StoreLogUnit.Builder commit = io.fencer.api.v1.StoreLogUnit.newBuilder()
                    .setScope(unit.scope()).setSequencer(unit.sequencer());
            for (Op op : unit.ops()) {
                commit.addOps(wireOp(op));
            }
            return StoreWire.writeResult(join(propose(group, entry().setUnitCommit(commit))).getWrite());
        } finally {
            // Without the map's monitor: the unit's is held here, and a write to the scope holds the map's while it
            // waits for the unit's (checkOpenUnit); taking the map's here would deadlock the two.
            units.remove(unit.scope(), unit);
        }
    }

    /** Ends every unit this peer holds: it stopped leading, so none of them can commit here. */
    public void abandonUnits() {
        synchronized (units) {
            units.values().forEach(ReplicatedUnit::abandon);
            units.clear();
        }
    }

    private static String newUnitId() {
        byte[] bytes = new byte[UNIT_ID_BYTES];
        UNIT_IDS.nextBytes(bytes);
        return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /**
     * Runs {@code reader} on this peer's replica as a linearizable read of the leader, answered only while this peer
     * holds the leader lease of the term the read began in.
     *
     * <p>Why the lease, on top of Ratis's read index: Ratis answers a read index at once while its lease holds, and
     * otherwise after a heartbeat round that it skips when the commit index was already confirmed by a majority. A
     * leader cut off from the others, with no new entries, so answered every read at once until it stepped down,
     * which may come after the majority elected another leader and committed a write: a read begun after that write
     * was acknowledged could return the value it overwrote. The lease held after the read means a majority
     * acknowledged this peer, in this term, within the lease timeout, so no other leader could have committed
     * anything yet (see {@link RaftNode#holdsLeaderLease}). A lease that lapsed for a moment (a late heartbeat) gets
     * up to a lease timeout to come back before the read is refused UNAVAILABLE, which clients retry.
     */
    private <T> T read(Supplier<T> reader) {
        Cluster group = leaderCluster();
        long term = group.raft().currentTerm();
        T value = join(group.proposer().read(machine -> reader.get()));
        if (unsafeLeaseAck) {
            return value; // the test-only switch: answered on the read index alone, as before the lease check
        }
        long deadline = System.nanoTime() + RaftNode.leaderLeaseTimeout().toNanos();
        while (!group.raft().holdsLeaderLease(term)) {
            if (System.nanoTime() - deadline > 0 || group.raft().currentTerm() != term) {
                throw new UnavailableException("this peer cannot confirm it still leads (no majority acknowledged"
                        + " it within the lease timeout of " + RaftNode.leaderLeaseTimeout().toMillis()
                        + " ms): the read is not answered; retry, another peer may lead");
            }
            sleepQuietly(LEASE_POLL_MILLIS);
        }
        return value;
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnavailableException("interrupted while confirming the leader lease");
        }
    }

    private Cluster leaderCluster() {
        Cluster group = cluster;
        if (group == null) {
            throw new UnavailableException("the replicated store is starting: its Raft node is not running yet");
        }
        group.raft().checkLeader();
        if (levelReached) {
            return group;
        }
        // Read under the apply lock, so only until the level is reached: it never goes down again.
        int level = group.stateMachine().readLocal(LockStateMachine::formatLevel);
        levelReached = level >= LockStateMachine.FORMAT_LEVEL_STORE;
        if (!levelReached) {
            throw new UnavailableException("the replicated store needs format level "
                    + LockStateMachine.FORMAT_LEVEL_STORE + " and the group is at " + level + ": a peer of the"
                    + " previous release may still run; the leader raises the level once every peer reads it");
        }
        return group;
    }

    private static StoreLogEntry.Builder entry() {
        return StoreLogEntry.newBuilder().setVersion(ENTRY_VERSION).setLeaderTimeMillis(System.currentTimeMillis());
    }

    /** Proposes an entry; completes with its reply, or fails with the refusal the reply carries. */
    private static CompletableFuture<StoreLogReply> propose(Cluster group, StoreLogEntry.Builder entry) {
        byte[] bytes = entry.build().toByteArray();
        if (bytes.length > Command.StoreEntry.STORE_ENTRY_BYTES_MAX) {
            return CompletableFuture.failedFuture(new InvalidArgumentException("ops", bytes.length + " bytes",
                    "the write is " + bytes.length + " bytes encoded, more than the "
                            + Command.StoreEntry.STORE_ENTRY_BYTES_MAX + " one log entry of the replicated store"
                            + " holds"));
        }
        return group.proposer().propose(new Command.StoreEntry(bytes)).thenApply(ReplicatedStore::reply);
    }

    private static StoreLogReply reply(Result result) {
        if (!(result instanceof Result.StoreReply stored)) {
            throw new InternalException("a store entry was answered " + result + ", not a store reply");
        }
        StoreLogReply reply;
        try {
            reply = StoreLogReply.parseFrom(stored.reply());
        } catch (InvalidProtocolBufferException e) {
            throw new InternalException("the store's reply does not decode: " + e.getMessage());
        }
        if (reply.hasError()) {
            StoreLogError error = reply.getError();
            throw WireErrors.toException(WireErrors.toStatusException(Status.fromCodeValue(error.getCode())
                    .withDescription(error.getDetail().getMessage()), error.getDetail()));
        }
        if (reply.getOutcomeCase() == StoreLogReply.OutcomeCase.OUTCOME_NOT_SET) {
            throw new InternalException("the store's reply is empty: a peer without the replicated store led");
        }
        return reply;
    }

    private static io.fencer.api.v1.Op wireOp(Op op) {
        ByteString key = ByteString.copyFrom(op.key());
        return op.kind() == Op.Kind.DELETE
                ? io.fencer.api.v1.Op.newBuilder().setDelete(io.fencer.api.v1.Delete.newBuilder().setKey(key)).build()
                : io.fencer.api.v1.Op.newBuilder().setPut(io.fencer.api.v1.Put.newBuilder().setKey(key)
                        .setValue(ByteString.copyFrom(op.value()))).build();
    }

    private static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            Throwable cause = ErrorCatalogue.unwrap(e);
            throw cause instanceof RuntimeException runtime ? runtime : new CompletionException(cause);
        }
    }

    /**
     * Applies one log entry's store entries. Consecutive writes are queued with the replica's committer together and
     * committed in one RocksDB write, which admits each exactly as if it came alone, in order; any other call first
     * waits for the writes queued before it. Evictions of idempotency records run once, at the end, where they run on
     * every replica.
     */
    @Override
    public List<byte[]> apply(List<byte[]> entries, long index) {
        StoreEngine engine = replica;
        List<CompletableFuture<StoreLogReply>> replies = new java.util.ArrayList<>(entries.size());
        for (byte[] bytes : entries) {
            StoreLogEntry entry = decode(bytes, index);
            if (entry == null) {
                replies.add(CompletableFuture.completedFuture(refusal(new InternalException(
                        "a store entry at log index " + index + " does not decode"))));
            } else if (entry.getCallCase() == StoreLogEntry.CallCase.WRITE) {
                replies.add(queueWrite(engine, entry.getWrite()));
            } else {
                replies.forEach(ReplicatedStore::settle); // in log order: the writes before it first
                replies.add(CompletableFuture.completedFuture(applyNow(entry)));
            }
        }
        List<byte[]> encoded = new java.util.ArrayList<>(replies.size());
        for (CompletableFuture<StoreLogReply> reply : replies) {
            encoded.add(settle(reply).toByteArray());
        }
        engine.sweepIdempotency();
        return encoded;
    }

    /** Decodes an entry; null when it does not decode (the same on every replica); halts on an unknown version. */
    private static StoreLogEntry decode(byte[] bytes, long index) {
        StoreLogEntry entry;
        try {
            entry = StoreLogEntry.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            return null;
        }
        if (entry.getVersion() != ENTRY_VERSION && entry.getVersion() != ENTRY_VERSION_IMPORT) {
            // Applying it as something else would make this peer differ from peers that know the version.
            throw new IllegalStateException("store entry at log index " + index + " has version "
                    + entry.getVersion() + "; this release applies versions " + ENTRY_VERSION + " and "
                    + ENTRY_VERSION_IMPORT + " only");
        }
        return entry;
    }

    private static CompletableFuture<StoreLogReply> queueWrite(StoreEngine engine, WriteRequest write) {
        try {
            List<Op> ops = StoreWire.ops(write.getOpsList(), engine.options().opsPerWriteMax());
            String key = write.getIdempotencyKey().isEmpty() ? null : write.getIdempotencyKey();
            return engine.writeAsync(write.getScope(), write.getSequencer(), ops, key)
                    .thenApply(result -> StoreLogReply.newBuilder().setWrite(StoreWire.response(result)).build());
        } catch (UnavailableException e) {
            throw e; // this replica's disk or state, not the entry: halt rather than answer differently
        } catch (FencerException e) {
            return CompletableFuture.completedFuture(refusal(e));
        }
    }

    private StoreLogReply applyNow(StoreLogEntry entry) {
        try {
            return applyCall(entry);
        } catch (UnavailableException e) {
            throw e;
        } catch (FencerException e) {
            return refusal(e);
        }
    }

    /** Waits for a queued write's outcome: its reply, or its refusal; a failure of this replica is rethrown. */
    private static StoreLogReply settle(CompletableFuture<StoreLogReply> reply) {
        try {
            return reply.join();
        } catch (CompletionException e) {
            Throwable cause = ErrorCatalogue.unwrap(e);
            if (cause instanceof FencerException refused && !(cause instanceof UnavailableException)) {
                return refusal(refused);
            }
            throw cause instanceof RuntimeException runtime ? runtime : e;
        }
    }

    private StoreLogReply applyCall(StoreLogEntry entry) {
        StoreEngine engine = replica;
        switch (entry.getCallCase()) {
            case WRITE -> {
                WriteRequest write = entry.getWrite();
                List<Op> ops = StoreWire.ops(write.getOpsList(), engine.options().opsPerWriteMax());
                String key = write.getIdempotencyKey().isEmpty() ? null : write.getIdempotencyKey();
                WriteResult result = engine.write(write.getScope(), write.getSequencer(), ops, key);
                return StoreLogReply.newBuilder().setWrite(StoreWire.response(result)).build();
            }
            case CREATE_SCOPE -> {
                CreateScopeRequest create = entry.getCreateScope();
                ScopeInfo info = engine.createScope(create.getScope(), create.getLock(),
                        StoreWire.policy(create.getPolicy()));
                return StoreLogReply.newBuilder().setScope(StoreWire.scopeInfo(info)).build();
            }
            case UNIT_COMMIT -> {
                io.fencer.api.v1.StoreLogUnit commit = entry.getUnitCommit();
                Unit unit = engine.begin(commit.getScope(), commit.getSequencer(), engine.options().unitDurationMax());
                try {
                    for (Op op : StoreWire.ops(commit.getOpsList(), engine.options().opsPerWriteMax())) {
                        unit.add(op);
                    }
                    return StoreLogReply.newBuilder().setWrite(StoreWire.response(unit.commit())).build();
                } finally {
                    if (unit.state() == Unit.State.OPEN) {
                        unit.abort(); // an op was refused: release the scope, nothing applied
                    }
                }
            }
            case IMPORT_SCOPES -> {
                List<io.fencer.store.ImportOutcome> outcomes = engine.importScopes(entry.getImportScopes()
                        .getScopesList().stream().map(StoreWire::importedScope).toList());
                return StoreLogReply.newBuilder().setImported(StoreWire.outcomes(outcomes)).build();
            }
            default -> throw new InvalidArgumentException("call", entry.getCallCase().name(),
                    "a store entry holds no call this release applies");
        }
    }

    private static StoreLogReply refusal(FencerException error) {
        return StoreLogReply.newBuilder().setError(StoreLogError.newBuilder()
                .setCode(WireErrors.status(error.reason()).getCode().value())
                .setDetail(WireErrors.toDetail(error))).build();
    }

    @Override
    public SnapshotWriter beginSnapshot() {
        StoreBackup backup = replica.openBackup(System.currentTimeMillis());
        return new SnapshotWriter() {
            @Override
            public void writeTo(OutputStream out) throws IOException {
                for (byte[] piece = backup.next(BACKUP_PIECE_BYTES); piece != null;
                        piece = backup.next(BACKUP_PIECE_BYTES)) {
                    out.write(piece);
                }
            }

            @Override
            public void close() {
                backup.close();
            }
        };
    }

    @Override
    public void load(InputStream in) throws IOException {
        replica.close();
        deleteTree(directory);
        if (in != null) {
            Path file = Files.createTempFile(directory.toAbsolutePath().getParent(), SNAPSHOT_COPY_PREFIX,
                    SNAPSHOT_COPY_SUFFIX);
            try {
                Files.copy(in, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                StoreRestore.Result restored = StoreRestore.restore(file, directory, scope -> 0);
                LOG.info("replicated store loaded from the snapshot: {} scopes, {} keys",
                        restored.backup().scopes().size(), restored.backup().dataRecords());
            } finally {
                Files.deleteIfExists(file);
            }
        }
        replica = StoreEngine.openReplica(directory, options);
    }

    @Override
    public void close() {
        replica.close();
    }

    /**
     * Deletes what a rebuild of the replica cut short by a crash left beside it: the database it was building
     * ({@link StoreRestore#building}) and its copy of the snapshot. Derived data only, like the replica itself; left
     * there, the building directory made every later rebuild refuse, so the peer could not start again.
     */
    private static void deleteLeftovers(Path directory) throws IOException {
        deleteTree(StoreRestore.building(directory));
        Path parent = directory.toAbsolutePath().getParent();
        if (!Files.isDirectory(parent)) {
            return;
        }
        try (Stream<Path> files = Files.list(parent)) {
            for (Path file : files.filter(ReplicatedStore::isSnapshotCopy).toList()) {
                Files.deleteIfExists(file);
            }
        }
    }

    private static boolean isSnapshotCopy(Path file) {
        return SNAPSHOT_COPY.matcher(file.getFileName().toString()).matches()
                && Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS);
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}

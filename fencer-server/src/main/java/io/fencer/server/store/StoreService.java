package io.fencer.server.store;

import com.google.protobuf.ByteString;
import com.google.protobuf.MessageLite;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.AbortUnitResponse;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ImportScopesRequest;
import io.fencer.api.v1.ImportScopesResponse;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.StoreBackupChunk;
import io.fencer.api.v1.StoreBackupRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.UnitWriteResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencePolicy;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockNames;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.Ticker;
import io.fencer.server.net.DiskReserve;
import io.fencer.core.UnavailableException;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.auth.Quota;
import io.fencer.server.rpc.ErrorCatalogue;
import io.fencer.server.rpc.Identities;
import io.fencer.server.rpc.InFlightLimit;
import io.fencer.server.rpc.PipelineStream;
import io.fencer.server.rpc.StreamFlow;
import io.fencer.server.rpc.Replies;
import io.fencer.store.ImportedScope;
import io.fencer.store.Op;
import io.fencer.store.ReadResult;
import io.fencer.store.ScopeInfo;
import io.fencer.store.StoreBackup;
import io.fencer.store.StoreEngine;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;
import io.grpc.Context;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The gRPC service {@code fencer.v1.Store} on a {@link StoreEngine}: converts requests, runs every engine call
 * on the store's worker pool (engine calls block on fsync; gRPC's transport threads must not), and maps results
 * and the engine's typed errors to the wire through the {@link ErrorCatalogue}.
 *
 * <p>Units are addressed by id across requests. The engine forgets a unit when it ends; this service keeps ended
 * units for {@link #ENDED_UNIT_RETENTION} (at most {@link #ENDED_UNITS_MAX} of them), so a retried CommitUnit of a
 * committed unit returns the same result and a CommitUnit of a preempted unit is refused as stale.
 *
 * <p>Under an ACL a unit serves only the identity that began it ({@link #ownUnit}): its id is not a bearer secret.
 */
final class StoreService extends StoreGrpc.StoreImplBase {
    /** How long an ended unit's outcome is kept for retries. */
    static final Duration ENDED_UNIT_RETENTION = Duration.ofSeconds(60);
    /** The most ended units kept; beyond it the oldest are forgotten first. */
    static final int ENDED_UNITS_MAX = 10_000;
    /** The longest unit timeout a request may ask for, in milliseconds (store.proto). */
    static final long UNIT_TIMEOUT_MILLIS_MAX = 60_000;
    /**
     * The longest unit id a unit call may name: the store issues ids of 22 characters (16 random bytes, base64url),
     * so this leaves room and refuses only what no store could have issued.
     */
    static final int UNIT_ID_CHARS_MAX = 64;
    /** The most scopes of one ImportScopes request (store.proto). */
    static final int IMPORT_SCOPES_MAX = 1_000;
    /** The most store backups in flight on one server ({@code storeBackupsInFlightMax}, operations.md). */
    static final int BACKUPS_IN_FLIGHT_MAX = 2;

    private final StoreCalls calls;
    /** The data directory's reserve: writes are refused while its file system is short of it. */
    private final DiskReserve disk;
    private final Executor workers;
    private final int workQueueMax;
    private final StoreMetrics metrics;
    private final Ticker ticker;
    private final Authorizer authorizer;
    private final ScopeClaims claims;
    private final ScheduledExecutorService timers;
    private final Duration backupStallTimeout;
    private final Map<String, TrackedUnit> units = new ConcurrentHashMap<>();
    private final UnitQuota unitQuota;
    private final UnitBytes unitBytes;
    private final RequestBytes requestBytes;
    private final Set<PipelineStream<?, ?>> pipelineStreams = ConcurrentHashMap.newKeySet();
    private final StreamFlow pipelineFlow = new StreamFlow("store.pipeline");
    private final InFlightLimit backups = new InFlightLimit("storeBackupsInFlightMax", BACKUPS_IN_FLIGHT_MAX,
            "store backup");

    /**
     * A unit addressed by id, with the identity that began it ({@link Identities#current()}), the count of ops
     * buffered in it, the bytes it holds of {@link #unitBytes} and when this service saw it ended.
     */
    private record TrackedUnit(StoreUnit unit, String owner, AtomicInteger opsBuffered, AtomicLong bytesHeld,
            AtomicLong endedAtNanos) {
        static final long OPEN = Long.MIN_VALUE;
    }

    StoreService(StoreCalls calls, DiskReserve disk, Ticker ticker, Executor workers, int workQueueMax,
            StoreMetrics metrics, Authorizer authorizer, ScopeClaims claims, ScheduledExecutorService timers,
            Duration backupStallTimeout) {
        this.calls = calls;
        this.disk = disk;
        this.authorizer = authorizer;
        this.claims = claims;
        this.workers = workers;
        this.workQueueMax = workQueueMax;
        this.metrics = metrics;
        this.ticker = ticker;
        this.timers = timers;
        this.backupStallTimeout = backupStallTimeout;
        int unitsShare = UnitQuota.defaultQuota(calls.engine().options().unitsOpenMax());
        this.unitQuota = new UnitQuota(identity -> authorizer.quota(identity, Quota.UNITS).orElse(unitsShare));
        this.unitBytes = new UnitBytes(calls.engine().options().unitBytesBufferedMax());
        this.requestBytes = new RequestBytes(calls.engine().options().requestBytesQueuedMax());
        metrics.gaugeHeldBytes(unitBytes, requestBytes);
    }

    /**
     * Checks the write and queues it with the engine's committer, on the transport's thread; the committer answers
     * once the write's batch is durable (or the write is refused). No thread waits for a write: a batch costs one
     * wake-up, however many writes it holds.
     */
    @Override
    public void write(WriteRequest request, StreamObserver<WriteResponse> out) {
        long startNanos = System.nanoTime();
        CompletableFuture<WriteResult> outcome;
        try {
            List<Op> ops = StoreWire.ops(request.getOpsList(), calls.engine().options().opsPerWriteMax());
            String idempotencyKey = StoreWire.idempotencyKey(request.getIdempotencyKey());
            authorize(Permission.WRITE, request.getScope());
            claims.checkFirstWrite(request.getScope(), request.getSequencer(), calls.engine());
            disk.check(true); // before RocksDB: a write that fails for space turns its database read-only
            outcome = calls.write(request.getScope(), request.getSequencer(), ops, idempotencyKey);
        } catch (RuntimeException e) {
            metrics.recordWrite(request.getScope(), startNanos, e);
            Replies.send(out, null, e);
            return;
        }
        outcome.whenComplete((result, failure) -> {
            Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
            metrics.recordWrite(request.getScope(), startNanos, cause);
            Replies.send(out, cause == null ? StoreWire.response(result) : null, cause);
        });
    }

    /**
     * Opens a {@code Store.Pipeline} stream. Its calls are timed by the store's own write metrics; the request
     * timer of the metrics interceptor sees the stream as one call.
     */
    @Override
    public StreamObserver<StorePipelineRequest> pipeline(StreamObserver<StorePipelineResponse> out) {
        PipelineStream<StorePipelineRequest, StorePipelineResponse> stream = new PipelineStream<>(
                (ServerCallStreamObserver<StorePipelineResponse>) out, new StorePipeline(this), (method, nanos) -> { },
                pipelineStreams::remove, pipelineFlow);
        pipelineStreams.add(stream);
        return stream;
    }

    /**
     * Streams a backup of the whole store (store.proto): needs {@code admin} on every scope under an ACL, checked
     * before the snapshot is taken; the pieces are made on the workers as the client reads them. Each pins a
     * snapshot until it ends, so at most {@link #BACKUPS_IN_FLIGHT_MAX} are in flight.
     */
    @Override
    public void backup(StoreBackupRequest request, StreamObserver<StoreBackupChunk> out) {
        StoreBackup backup;
        Runnable slot = null;
        try {
            authorizer.checkPrefix(Permission.ADMIN, "");
            slot = backups.take();
            backup = calls.engine().openBackup(System.currentTimeMillis());
        } catch (RuntimeException e) {
            if (slot != null) {
                slot.run();
            }
            Replies.send(out, null, e);
            return;
        }
        new BackupStream((ServerCallStreamObserver<StoreBackupChunk>) out, backup, workers, slot).start(timers,
                backupStallTimeout);
    }

    /**
     * Imports whole scopes (store.proto): needs {@code admin} on every scope under an ACL, as a backup does, since an
     * import sets accepted tokens; the request is checked whole (its size, its count of scopes, each scope against
     * the store's limits) before any scope is imported.
     */
    @Override
    public void importScopes(ImportScopesRequest request, StreamObserver<ImportScopesResponse> out) {
        serve(request, out, () -> {
            authorizer.checkPrefix(Permission.ADMIN, "");
            List<ImportedScope> scopes = checkImport(request);
            disk.check(true);
            return StoreWire.outcomes(calls.importScopes(scopes));
        });
    }

    /** Checks an import request whole and returns its scopes; see {@link #importScopes}. */
    private List<ImportedScope> checkImport(ImportScopesRequest request) {
        int bytes = request.getSerializedSize();
        if (bytes > ReplicatedStore.IMPORT_REQUEST_BYTES_MAX) {
            throw new InvalidArgumentException("scopes", bytes + " bytes", "the import request is " + bytes
                    + " bytes encoded, more than the " + ReplicatedStore.IMPORT_REQUEST_BYTES_MAX + " one request"
                    + " (one log entry of the replicated store) may have");
        }
        int count = request.getScopesCount();
        if (count < 1 || count > IMPORT_SCOPES_MAX) {
            throw new InvalidArgumentException("scopes", Integer.toString(count), "the import request holds " + count
                    + " scopes, outside [1, " + IMPORT_SCOPES_MAX + "]");
        }
        List<ImportedScope> scopes = new ArrayList<>(count);
        Set<String> names = new java.util.HashSet<>();
        for (io.fencer.api.v1.ImportedScope wire : request.getScopesList()) {
            ImportedScope scope = StoreWire.importedScope(wire);
            scope.check(calls.engine().options());
            if (!names.add(scope.scope())) {
                throw new InvalidArgumentException("scopes", scope.scope(), "the import request holds scope '"
                        + scope.scope() + "' twice");
            }
            scopes.add(scope);
        }
        return scopes;
    }

    /** Returns the flow-control counters of the Pipeline streams. */
    StreamFlow pipelineFlow() {
        return pipelineFlow;
    }

    /** Ends every open pipeline stream with UNAVAILABLE, so clients move on while the server shuts down. */
    void shutdown() {
        UnavailableException error = new UnavailableException("the store is shutting down");
        for (PipelineStream<?, ?> stream : pipelineStreams) {
            stream.fail(error);
        }
    }

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> out) {
        serve(request, out, () -> {
            String sequencer = request.getSequencer().isEmpty() ? null : request.getSequencer();
            authorize(Permission.READ, request.getScope());
            ReadResult read = calls.get(request.getScope(), request.getKey().toByteArray(), sequencer);
            GetResponse.Builder response = GetResponse.newBuilder().setFound(read.present())
                    .setWrittenBy(read.writtenBy()).setAccepted(read.accepted());
            if (read.present()) {
                response.setValue(ByteString.copyFrom(read.value()));
            }
            return response.build();
        });
    }

    @Override
    public void fence(FenceRequest request, StreamObserver<io.fencer.api.v1.ScopeInfo> out) {
        serve(request, out, () -> {
            authorize(Permission.READ, request.getScope());
            return StoreWire.scopeInfo(calls.scope(request.getScope()));
        });
    }

    /**
     * Creates a scope: needs {@code admin} on it under an ACL, and the claim of {@link ScopeClaims} (a current grant
     * of the lock it binds, which must be the scope's own name on a server without an ACL).
     */
    @Override
    public void createScope(CreateScopeRequest request, StreamObserver<io.fencer.api.v1.ScopeInfo> out) {
        serve(request, out, () -> {
            String lock = request.getLock().isEmpty() ? request.getScope() : request.getLock();
            authorize(Permission.ADMIN, request.getScope());
            LockNames.check("lock", lock);
            claims.check(request.getScope(), lock, request.getSequencer());
            disk.check(true);
            return StoreWire.scopeInfo(calls.createScope(request.getScope(), lock,
                    StoreWire.policy(request.getPolicy())));
        });
    }

    @Override
    public void beginUnit(BeginUnitRequest request, StreamObserver<BeginUnitResponse> out) {
        serve(request, out, () -> {
            long timeoutMillis = request.getTimeoutMillis();
            if (timeoutMillis < 1 || timeoutMillis > UNIT_TIMEOUT_MILLIS_MAX) {
                throw new InvalidArgumentException("timeout_millis", Long.toUnsignedString(timeoutMillis),
                        "timeout_millis " + Long.toUnsignedString(timeoutMillis) + " is outside [1, "
                                + UNIT_TIMEOUT_MILLIS_MAX + "]");
            }
            authorize(Permission.WRITE, request.getScope());
            claims.checkFirstWrite(request.getScope(), request.getSequencer(), calls.engine());
            disk.check(true); // a begin raises the accepted token durably: a write, refused at the reserve as one
            StoreUnit unit = unitQuota.begin(Identities.quotaIdentity(), () -> calls.begin(request.getScope(),
                    request.getSequencer(), Duration.ofMillis(timeoutMillis)));
            units.put(unit.id(), new TrackedUnit(unit, Identities.current(), new AtomicInteger(), new AtomicLong(),
                    new AtomicLong(TrackedUnit.OPEN)));
            return BeginUnitResponse.newBuilder().setUnitId(unit.id()).setAccepted(unit.token().value()).build();
        });
    }

    /**
     * Buffers the request's ops; an op refused for its size aborts the unit, so no prefix of it can commit. The ops'
     * bytes are taken from {@link #unitBytes} first, all of them or none: a request that would pass the bound is
     * refused whole, and the unit keeps what it had.
     */
    @Override
    public void unitWrite(UnitWriteRequest request, StreamObserver<UnitWriteResponse> out) {
        serve(request, out, () -> {
            List<Op> ops = StoreWire.ops(request.getOpsList(), calls.engine().options().opsPerWriteMax());
            TrackedUnit tracked = ownUnit(request.getUnitId());
            long bytes = 0;
            for (io.fencer.api.v1.Op op : request.getOpsList()) {
                bytes += UnitBytes.of(op);
            }
            unitBytes.take(bytes, tracked.unit().id(), tracked.bytesHeld().get(), this::releaseEndedUnits);
            long added = 0;
            try {
                for (int index = 0; index < ops.size(); index++) {
                    tracked.unit().add(ops.get(index));
                    // counted once buffered: the release below then sees every byte the unit holds
                    long opBytes = UnitBytes.of(request.getOps(index));
                    tracked.bytesHeld().addAndGet(opBytes);
                    added += opBytes;
                    tracked.opsBuffered().incrementAndGet();
                }
            } catch (InvalidArgumentException e) {
                tracked.unit().abort();
                throw e;
            } finally {
                unitBytes.give(bytes - added); // those of the ops not buffered
                releaseIfEnded(tracked);
            }
            return UnitWriteResponse.newBuilder().setOpsBuffered(tracked.opsBuffered().get()).build();
        });
    }

    /**
     * Gives back the bytes {@code tracked} holds once it has ended, however it ended (its ops are then let go). A
     * unit's bytes are added only after its op is buffered, so a call that ran while it ended gives them back here.
     */
    private void releaseIfEnded(TrackedUnit tracked) {
        if (tracked.bytesHeld().get() != 0 && tracked.unit().state() != Unit.State.OPEN) {
            unitBytes.give(tracked.bytesHeld().getAndSet(0));
        }
    }

    /**
     * Gives back the bytes of every unit that has ended (preempted by a higher token, expired, or lost with its
     * leader) without a call of its own since. Units past their deadline are ended first: a single node's engine would
     * report them open until its sweep, up to a second on, and refuse a write for bytes no commit can use; a
     * replicated unit past its deadline ends as its state is read.
     */
    private void releaseEndedUnits() {
        calls.expireUnits();
        for (TrackedUnit tracked : units.values()) {
            releaseIfEnded(tracked);
        }
    }

    @Override
    public void commitUnit(CommitUnitRequest request, StreamObserver<WriteResponse> out) {
        serve(request, out, () -> {
            TrackedUnit tracked = ownUnit(request.getUnitId());
            if (tracked.unit().state() == Unit.State.OPEN) {
                // the commit writes its ops: refused at the reserve as a write is, before RocksDB fails for space;
                // a retried commit of a committed unit writes nothing and still gets its result
                disk.check(true);
            }
            try {
                return StoreWire.response(metrics.timeWrite(tracked.unit().scope(), () -> tracked.unit().commit()));
            } finally {
                releaseIfEnded(tracked); // committed, or ended by its refusal
            }
        });
    }

    /** Aborts a unit; without an ACL, aborting an unknown unit is no error (under one it is, see {@link #ownUnit}). */
    @Override
    public void abortUnit(AbortUnitRequest request, StreamObserver<AbortUnitResponse> out) {
        serve(request, out, () -> {
            TrackedUnit tracked = authorizer.enforcing() ? ownUnit(request.getUnitId())
                    : units.get(checkUnitId(request.getUnitId()));
            boolean aborted = false;
            if (tracked != null && tracked.unit().state() == Unit.State.OPEN) {
                try {
                    tracked.unit().abort();
                } catch (InvalidArgumentException committedMeanwhile) {
                    // the unit committed between the check and the abort: it ended, which is not an error
                }
                aborted = tracked.unit().state() == Unit.State.ABORTED;
            }
            if (tracked != null) {
                releaseIfEnded(tracked);
            }
            return AbortUnitResponse.newBuilder().setAborted(aborted).build();
        });
    }

    /**
     * Forgets ended units older than the retention, and the oldest ended ones beyond {@link #ENDED_UNITS_MAX}, and
     * drops the ended ones from the per-identity count and gives back their bytes (those expired by the engine's sweep
     * just before, or past their deadline on this leader, preempted, or lost with the leadership); the store role calls
     * it periodically.
     */
    void forgetEndedUnits() {
        unitQuota.sweep();
        long now = ticker.nanoTime();
        long retentionNanos = ENDED_UNIT_RETENTION.toNanos();
        int ended = 0;
        for (Iterator<TrackedUnit> iterator = units.values().iterator(); iterator.hasNext(); ) {
            TrackedUnit tracked = iterator.next();
            if (tracked.unit().state() == Unit.State.OPEN) {
                continue;
            }
            releaseIfEnded(tracked);
            tracked.endedAtNanos().compareAndSet(TrackedUnit.OPEN, now);
            if (now - tracked.endedAtNanos().get() >= retentionNanos) {
                iterator.remove();
            } else {
                ended++;
            }
        }
        if (ended > ENDED_UNITS_MAX) {
            units.values().stream().filter(tracked -> tracked.unit().state() != Unit.State.OPEN)
                    .sorted((a, b) -> Long.compare(a.endedAtNanos().get(), b.endedAtNanos().get()))
                    .limit(ended - ENDED_UNITS_MAX)
                    .forEach(tracked -> units.remove(tracked.unit().id(), tracked));
        }
    }

    /**
     * Returns the unit {@code unitId} names, for the caller to use. Under an ACL, only the identity that began it may,
     * and only while it holds {@code write} on the unit's scope: a unit id travels in clients' logs and traces, and
     * must not let whoever reads it write under another's token. A caller gets one refusal for another identity's
     * unit and for an id this store does not hold, checked before anything else of the unit is looked at, so the
     * refusal tells it nothing of other identities' units: not whether the id exists, nor its scope, nor its owner.
     * Without an ACL every caller may make every call (a plaintext caller is always {@code anonymous}).
     *
     * @throws PermissionDeniedException under an ACL, naming the caller and the unit id
     * @throws InvalidArgumentException without an ACL, when the unit is unknown
     */
    private TrackedUnit ownUnit(String unitId) {
        TrackedUnit tracked = units.get(checkUnitId(unitId));
        if (authorizer.enforcing()) {
            String identity = Identities.current();
            if (tracked == null || !tracked.owner().equals(identity)) {
                throw new PermissionDeniedException(identity, Permission.WRITE.word(), unitId, "a unit serves only"
                        + " the identity that began it, and this store holds no unit of that id begun by '"
                        + InvalidArgumentException.printable(identity) + "' (another identity began it, none was"
                        + " begun, it ended more than " + ENDED_UNIT_RETENTION.toSeconds() + " s ago, or its"
                        + " leader was deposed since)");
            }
            authorizer.check(Permission.WRITE, tracked.unit().scope()); // the owner's write may have been withdrawn
            return tracked;
        }
        if (tracked == null) {
            throw new InvalidArgumentException("unit_id", unitId, "unit '" + InvalidArgumentException.printable(unitId)
                    + "' is unknown: it was never begun here, or it ended more than "
                    + ENDED_UNIT_RETENTION.toSeconds() + " s ago");
        }
        return tracked;
    }

    /**
     * Returns {@code unitId} when it could be an id this store issued: 1 to {@link #UNIT_ID_CHARS_MAX} characters of
     * base64url. Any other is refused as malformed, before it is looked up or echoed in a refusal (a 5 MiB id would
     * otherwise come back whole in the refusal's detail, beyond what a client takes in a trailer).
     *
     * @throws InvalidArgumentException naming the id (truncated, escaped), or its length, and what is wrong
     */
    private static String checkUnitId(String unitId) {
        if (unitId.isEmpty()) {
            throw new InvalidArgumentException("unit_id", unitId, "unit_id is empty: name the unit BeginUnit began");
        }
        if (unitId.length() > UNIT_ID_CHARS_MAX) {
            throw new InvalidArgumentException("unit_id", unitId, "unit_id of " + unitId.length() + " characters is"
                    + " not a unit id: this store's are at most " + UNIT_ID_CHARS_MAX + " characters");
        }
        for (int i = 0; i < unitId.length(); i++) {
            char c = unitId.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')) {
                throw new InvalidArgumentException("unit_id", unitId, "unit_id '"
                        + InvalidArgumentException.printable(unitId) + "' is not a unit id: character '"
                        + InvalidArgumentException.printable(String.valueOf(c)) + "' at position " + i
                        + " is not one of A-Z, a-z, 0-9, '-' and '_' (this store's ids are base64url)");
            }
        }
        return unitId;
    }

    /** Checks that the caller holds {@code needed} on {@code scope}, once the scope's name is known valid. */
    private void authorize(Permission needed, String scope) {
        authorizer.check(needed, LockNames.check("scope", scope));
    }

    /**
     * Runs {@code call} on a worker, in the call's gRPC context (which names the caller), and answers with its
     * outcome; {@code request} is counted against {@link #requestBytes} until the call has run. A full work queue,
     * or requests past {@code requestBytesQueuedMax}, is RESOURCE_EXHAUSTED, the call not run.
     */
    private <T> void serve(MessageLite request, StreamObserver<T> out, Supplier<T> call) {
        ServerCallStreamObserver<T> observer = (ServerCallStreamObserver<T>) out;
        int bytes = request.getSerializedSize(); // memoized by the parsed message: no second encoding
        try {
            requestBytes.take(bytes);
        } catch (LimitExceededException e) {
            Replies.send(observer, null, e);
            return;
        }
        try {
            workers.execute(Context.current().wrap(() -> {
                try {
                    run(observer, call);
                } finally {
                    requestBytes.give(bytes); // the request is let go with its call
                }
            }));
        } catch (RejectedExecutionException e) {
            requestBytes.give(bytes);
            Replies.send(observer, null, new LimitExceededException("storeQueueMax", workQueueMax,
                    "the store has " + workQueueMax + " calls waiting for a worker, the most allowed; retry later"));
        }
    }

    /** Runs {@code call} on this worker and answers with its outcome, unless the client gave up meanwhile. */
    private static <T> void run(ServerCallStreamObserver<T> observer, Supplier<T> call) {
        if (observer.isCancelled()) {
            return; // the client gave up before the call ran: do not apply it
        }
        T response;
        try {
            response = call.get();
        } catch (RuntimeException e) {
            Replies.send(observer, null, e);
            return;
        }
        Replies.send(observer, response, null);
    }

    /** Returns the bytes of requests the workers hold now, waiting or being served (for tests). */
    long requestBytesHeld() {
        return requestBytes.held();
    }

    /** Returns how many units this service tracks, open or ended (for tests). */
    int unitsTracked() {
        return units.size();
    }
}

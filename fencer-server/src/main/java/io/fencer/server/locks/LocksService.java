package io.fencer.server.locks;

import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.DescribeSemaphoreRequest;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.SemaphoreInfo;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.LockName;
import io.fencer.core.PermitSlots;
import io.fencer.core.NotLeaderException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.TokenKeys;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.lock.LockView;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.lock.Validation;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.rpc.ErrorCatalogue;
import io.fencer.server.rpc.PacedRequests;
import io.fencer.server.rpc.Identities;
import io.fencer.server.rpc.PipelineStream;
import io.fencer.server.rpc.Replies;
import io.fencer.server.rpc.StreamFlow;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC service {@code fencer.v1.Locks}: checks leadership, validates every field, proposes commands through
 * the {@link Proposer} and maps results and errors to the wire. Calls never block a gRPC thread: answers are sent
 * from the completion of proposals and reads.
 *
 * <p>Sessions: OpenSession hands out the secret {@link SessionSecrets} draws (the command carries only its hash and
 * the caller's {@link Identities identity}); every call for a session presents the secret, checked against the
 * {@link SessionKeeper}'s lease before anything is proposed, and by the state machine again in the command. Only a
 * grantee's own Acquire answer carries a signed sequencer; every other answer names tokens unsigned.
 */
public final class LocksService extends LocksGrpc.LocksImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(LocksService.class);

    private final RaftNode raft;
    private final Proposer proposer;
    private final SessionKeeper keeper;
    private final PendingAcquires pending;
    private final RaftLockStateMachine stateMachine;
    private final Limits limits;
    private final ScheduledExecutorService timers;
    /** Signs the sequencer of a grant in its grantee's Acquire answer; null = unsigned. */
    private final TokenKeys keys;
    private final SessionSecrets secrets;
    private final Set<KeepAliveStream> keepAliveStreams = ConcurrentHashMap.newKeySet();
    private final Set<PipelineStream<?, ?>> pipelineStreams = ConcurrentHashMap.newKeySet();
    private final StreamFlow keepAliveFlow = new StreamFlow("locks.keepAlive");
    private final StreamFlow pipelineFlow = new StreamFlow("locks.pipeline");
    /** Records a pipelined call's latency under its unary method, as the metrics interceptor does for unary calls. */
    private final BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos;
    /** Checks each call's permission, after its fields are validated and before anything is proposed or read. */
    private final Authorizer authorizer;

    public LocksService(RaftNode raft, Proposer proposer, SessionKeeper keeper, PendingAcquires pending,
            RaftLockStateMachine stateMachine, Limits limits, ScheduledExecutorService timers, TokenKeys keys,
            SessionSecrets secrets, BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Authorizer authorizer) {
        this.raft = raft;
        this.proposer = proposer;
        this.keeper = keeper;
        this.pending = pending;
        this.stateMachine = stateMachine;
        this.limits = limits;
        this.timers = timers;
        this.keys = keys;
        this.secrets = secrets;
        this.latencyNanos = latencyNanos;
        this.authorizer = authorizer;
    }

    @Override
    public void openSession(OpenSessionRequest request, StreamObserver<OpenSessionResponse> out) {
        serve(out, () -> {
            long ttlMillis = RequestChecks.ttlMillis(request.getTtlMillis(), limits);
            String requestId = RequestChecks.requestId(request.getRequestId(), false);
            authorizer.checkSomewhere(Permission.LOCK);
            String identity = Identities.current();
            String secret = secrets.forOpen(identity, requestId);
            Command.OpenSession open = new Command.OpenSession(requestId, ttlMillis, identity, SecretHash.of(secret));
            return proposer.propose(open).thenApply(result -> {
                // A retry the state machine refuses (another identity, another secret) throws here: no secret leaves.
                Result.SessionOpened opened = expect(result, Result.SessionOpened.class);
                return OpenSessionResponse.newBuilder().setSessionId(opened.sessionId())
                        .setTtlMillis(opened.ttlMillis()).setSecret(secret).build();
            });
        });
    }

    @Override
    public void closeSession(CloseSessionRequest request, StreamObserver<CloseSessionResponse> out) {
        serve(out, () -> {
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            authorizer.checkSomewhere(Permission.LOCK);
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            return proposer.propose(new Command.CloseSession(sessionId, presented)).thenApply(result -> {
                Result.SessionEnded ended = expect(result, Result.SessionEnded.class);
                CloseSessionResponse.Builder response = CloseSessionResponse.newBuilder();
                ended.released().forEach(token -> response.addReleased(Protos.token(token, null)));
                return response.build();
            });
        });
    }

    @Override
    public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            LockName lock = RequestChecks.lock("lock", request.getLock());
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            authorizer.check(Permission.LOCK, lock.value());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            io.fencer.core.LockMode mode = Protos.mode("mode", request.getModeValue());
            Command.Acquire acquire = new Command.Acquire(sessionId, presented, lock, requestId, waitMillis > 0,
                    mode);
            if (waitMillis > 0) {
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys).start();
                return;
            }
            proposer.propose(acquire).thenApply(this::tryAcquireResponse)
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void acquirePermit(AcquirePermitRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            LockName semaphore = RequestChecks.lock("semaphore", request.getSemaphore());
            Limits.checkPermits(semaphore.value(), request.getPermits() & 0xffffffffL);
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            authorizer.checkPrefix(Permission.LOCK, semaphore.value() + PermitSlots.INFIX);
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.AcquirePermit acquire = new Command.AcquirePermit(sessionId, presented, semaphore,
                    request.getPermits(), requestId, waitMillis > 0);
            if (waitMillis > 0) {
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys).start();
                return;
            }
            proposer.propose(acquire).thenApply(result -> result instanceof Result.Granted granted
                    ? AcquireCall.permitAcquired(granted.token(), keys) : tryAcquireResponse(result))
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void acquireAll(AcquireAllRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            Command.AcquireAll.checkCount(request.getLocksCount()); // before checking thousands of names
            java.util.List<LockName> names = new java.util.ArrayList<>(request.getLocksCount());
            for (String lock : request.getLocksList()) {
                names.add(RequestChecks.lock("locks", lock));
                authorizer.check(Permission.LOCK, lock);
            }
            Command.AcquireAll.checkLocks(names);
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.AcquireAll acquire = new Command.AcquireAll(sessionId, presented, names, requestId,
                    waitMillis > 0);
            if (waitMillis > 0) {
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys).start();
                return;
            }
            proposer.propose(acquire).thenApply(result -> result instanceof Result.GrantedAll all
                    ? AcquireCall.allAcquired(all.tokens(), keys) : tryAcquireResponse(result))
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void describeSemaphore(DescribeSemaphoreRequest request, StreamObserver<SemaphoreInfo> out) {
        serve(out, () -> {
            String semaphore = RequestChecks.lock("semaphore", request.getSemaphore()).value();
            authorizer.check(Permission.READ, semaphore);
            return proposer.read(machine -> machine.describeSemaphore(semaphore).map(Protos::semaphoreInfo)
                    .orElseGet(() -> SemaphoreInfo.newBuilder().setSemaphore(semaphore).build()));
        });
    }

    private AcquireResponse tryAcquireResponse(Result result) {
        if (result instanceof Result.Busy busy) {
            return AcquireCall.notAcquired(busy.holder());
        }
        if (result instanceof Result.Queued queued && stateMachine.readLocal(machine -> machine.describeSemaphore(
                queued.lock())).isPresent()) {
            return AcquireCall.notAcquired(null); // waits for a permit through another call
        }
        if (result instanceof Result.Queued queued) {
            // The session already waits for the lock through another call: a try does not get the lock either.
            return AcquireCall.notAcquired(stateMachine.readLocal(machine -> machine.describe(queued.lock()))
                    .map(LockView::anyHolder).orElse(null));
        }
        Result.Granted granted = expect(result, Result.Granted.class);
        return AcquireCall.acquired(granted.token(), keys);
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> out) {
        serve(out, () -> {
            FencingToken token = RequestChecks.token("token", request.getToken());
            authorizer.check(Permission.LOCK, token.lock());
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.Release release = new Command.Release(sessionId, presented, token.lock(), token.value());
            return proposer.propose(release).thenApply(result -> {
                Result.Released released = expect(result, Result.Released.class);
                // Signed sequencers are credentials: the releaser has its own already, the next holder gets its own
                // in its Acquire answer. A release answer names both tokens unsigned.
                ReleaseResponse.Builder response = ReleaseResponse.newBuilder()
                        .setReleased(Protos.token(released.released(), null));
                if (released.next() != null) {
                    response.setNext(Protos.token(released.next(), null));
                }
                return response.build();
            });
        });
    }

    @Override
    public void validate(ValidateRequest request, StreamObserver<ValidateResponse> out) {
        serve(out, () -> {
            FencingToken token = RequestChecks.token("token", request.getToken());
            authorizer.check(Permission.READ, token.lock());
            return proposer.read(machine -> machine.validate(token)).thenApply(validation -> {
                long remainingMillis = validation.status() == Validation.Status.CURRENT
                        ? keeper.remainingMillis(validation.holderSessionId()) : 0;
                return Protos.validation(validation, remainingMillis);
            });
        });
    }

    @Override
    public void describe(DescribeRequest request, StreamObserver<LockInfo> out) {
        serve(out, () -> {
            String lock = RequestChecks.lock("lock", request.getLock()).value();
            authorizer.check(Permission.READ, lock);
            return proposer.read(machine -> machine.describe(lock).map(Protos::lockInfo)
                    .orElseGet(() -> Protos.freeLock(lock, machine.floor())));
        });
    }

    @Override
    public void list(ListRequest request, StreamObserver<ListResponse> out) {
        serve(out, () -> {
            String prefix = RequestChecks.prefix(request.getPrefix());
            int limit = RequestChecks.listLimit(request.getLimit());
            authorizer.checkPrefix(Permission.READ, prefix); // the whole prefix, or nothing: never a filtered list
            return proposer.read(machine -> {
                ListResponse.Builder response = ListResponse.newBuilder();
                for (LockView view : machine.list(prefix, limit)) {
                    response.addLocks(Protos.lockInfo(view));
                }
                return response.build();
            });
        });
    }

    @Override
    public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
        ServerCallStreamObserver<KeepAliveResponse> call = (ServerCallStreamObserver<KeepAliveResponse>) out;
        KeepAliveStream stream = new KeepAliveStream(call);
        keepAliveStreams.add(stream);
        call.setOnCancelHandler(() -> keepAliveStreams.remove(stream));
        // Each request is answered at once: read the next only when its answer can flow.
        return PacedRequests.pace(call, stream, keepAliveFlow);
    }

    @Override
    public StreamObserver<PipelineRequest> pipeline(StreamObserver<PipelineResponse> out) {
        ServerCallStreamObserver<PipelineResponse> call = (ServerCallStreamObserver<PipelineResponse>) out;
        PipelineStream<PipelineRequest, PipelineResponse> stream = new PipelineStream<>(call,
                new LocksPipeline(this), latencyNanos, pipelineStreams::remove, pipelineFlow);
        pipelineStreams.add(stream);
        return stream;
    }

    /** Exports the flow-control counters of the KeepAlive and Pipeline streams to {@code registry}. */
    public void registerStreamMetrics(MeterRegistry registry) {
        keepAliveFlow.register(registry);
        pipelineFlow.register(registry);
    }

    /** Returns the flow-control counters of the KeepAlive streams. */
    public StreamFlow keepAliveFlow() {
        return keepAliveFlow;
    }

    /** Returns the flow-control counters of the Pipeline streams. */
    public StreamFlow pipelineFlow() {
        return pipelineFlow;
    }

    /**
     * Ends every open keepalive and pipeline stream with UNAVAILABLE, so clients move on while the server shuts
     * down.
     */
    public void shutdown() {
        UnavailableException error = new UnavailableException("the server is shutting down");
        for (KeepAliveStream stream : keepAliveStreams) {
            stream.fail(error);
        }
        for (PipelineStream<?, ?> stream : pipelineStreams) {
            stream.fail(error);
        }
    }

    /**
     * One client's keepalive stream: each request is answered at once, in order. Synchronized because
     * {@link #shutdown()} may end it from another thread.
     */
    private final class KeepAliveStream implements StreamObserver<KeepAliveRequest> {
        private final ServerCallStreamObserver<KeepAliveResponse> call;
        private boolean closed; // guarded by this

        KeepAliveStream(ServerCallStreamObserver<KeepAliveResponse> call) {
            this.call = call;
        }

        @Override
        public synchronized void onNext(KeepAliveRequest request) {
            if (closed || call.isCancelled()) {
                return;
            }
            try {
                checkLeader();
                if (!keeper.isServing()) {
                    throw new UnavailableException("this peer was just elected leader and is not serving yet");
                }
                authorizer.checkSomewhere(Permission.LOCK); // each message: a reloaded ACL applies to open streams
                call.onNext(keepAliveAnswer(request));
            } catch (RuntimeException e) {
                fail(e);
            }
        }

        synchronized void fail(RuntimeException error) {
            if (closed) {
                return;
            }
            closed = true;
            keepAliveStreams.remove(this);
            try {
                call.onError(ErrorCatalogue.toStatusException(error));
            } catch (RuntimeException alreadyClosed) {
                LOG.debug("keepalive stream already closed", alreadyClosed);
            }
        }

        @Override
        public synchronized void onError(Throwable error) {
            closed = true;
            keepAliveStreams.remove(this);
        }

        @Override
        public synchronized void onCompleted() {
            keepAliveStreams.remove(this);
            if (!closed) {
                closed = true;
                try {
                    call.onCompleted();
                } catch (RuntimeException alreadyClosed) {
                    LOG.debug("keepalive stream already closed", alreadyClosed);
                }
            }
        }
    }

    /**
     * Answers one keepalive: renewed, expired (the session is not open), or refused for a missing or wrong secret of
     * an open session, in the answer's {@code error}, so that the stream stays open for the client's other sessions.
     */
    private KeepAliveResponse keepAliveAnswer(KeepAliveRequest request) {
        long sessionId = request.getSessionId();
        KeepAliveResponse.Builder response = KeepAliveResponse.newBuilder().setSessionId(sessionId);
        if (sessionId <= 0 || !keeper.keeps(sessionId)) {
            return response.setExpired(true).build();
        }
        try {
            SecretHash presented = RequestChecks.sessionSecret(sessionId, request.getSessionSecret());
            OptionalLong ttlMillis = keeper.keepAlive(sessionId, presented);
            if (ttlMillis.isPresent()) {
                response.setTtlMillis(ttlMillis.getAsLong());
            } else {
                response.setExpired(true);
            }
        } catch (SessionUnauthenticatedException e) {
            response.setError(Replies.callError(e));
        }
        return response.build();
    }

    /**
     * Returns the hash of the secret a call presented for {@code sessionId}, refusing it at once when this leader
     * keeps the session with another secret: a refusal then costs no log entry. The command carries the hash, and the
     * state machine checks it again while it applies the command.
     *
     * @throws SessionUnauthenticatedException when the secret is missing, too long or, known here, wrong
     */
    private SecretHash authenticate(long sessionId, String secret) {
        SecretHash presented = RequestChecks.sessionSecret(sessionId, secret);
        keeper.checkSecret(sessionId, presented);
        return presented;
    }

    private void checkLeader() {
        if (!raft.isLeader()) {
            throw new NotLeaderException(raft.leaderClientAddress());
        }
    }

    /** Checks leadership, runs {@code call}, and answers with its outcome. */
    private <T> void serve(StreamObserver<T> out, Supplier<CompletableFuture<T>> call) {
        CompletableFuture<T> answer;
        try {
            checkLeader();
            answer = call.get();
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete((response, error) -> Replies.send(out, response, error));
    }

    /** Returns {@code result} as the expected type; a rejection throws its typed error. */
    static <R extends Result> R expect(Result result, Class<R> type) {
        if (result instanceof Result.Rejected rejected) {
            throw rejected.error();
        }
        if (!type.isInstance(result)) {
            throw new InternalException("expected a " + type.getSimpleName() + " result, got " + result);
        }
        return type.cast(result);
    }
}

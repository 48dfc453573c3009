package io.fencer.client.internal;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.DurableMark;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
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
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.WatchRequest;
import io.fencer.core.internal.PermitSlots;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * A protocol peer for the client's tests: a small in-memory lock service that answers per {@code locks.proto},
 * records every request, and can be scripted to fail calls (NOT_LEADER, UNAVAILABLE, ...), to stay silent, or to
 * answer keepalives with {@code expired} or a refusal of the session's secret. It hands out a secret with every
 * session and refuses, as SESSION_UNAUTHENTICATED, a call for a session it knows that does not carry it.
 */
final class FakeLocks extends LocksGrpc.LocksImplBase {
    /** How the peer answers keepalives; HOLD keeps the answers until {@link #answerHeldKeepAlives()}. */
    enum KeepAliveMode { ACK, EXPIRE, REFUSE, SILENT, HOLD }

    /** The answer of a scripted call: a response, or an exception to fail it with. */
    @FunctionalInterface
    interface Handler<Q, R> {
        R handle(Q request) throws Exception;
    }

    final List<OpenSessionRequest> openSessions = new CopyOnWriteArrayList<>();
    final List<CloseSessionRequest> closeSessions = new CopyOnWriteArrayList<>();
    final List<AcquireRequest> acquires = new CopyOnWriteArrayList<>();
    final List<ReleaseRequest> releases = new CopyOnWriteArrayList<>();
    final List<KeepAliveRequest> keepAlives = new CopyOnWriteArrayList<>();
    final List<String> calls = new CopyOnWriteArrayList<>();
    /** Calls that the client cancelled while they waited for an answer (only silent calls wait). */
    final List<String> cancelledCalls = new CopyOnWriteArrayList<>();
    /** Calls that arrived with a gRPC deadline ({@code grpc-timeout}). */
    final List<String> callsWithDeadline = new CopyOnWriteArrayList<>();

    /** When set, every call (keepalive streams included) fails with it: e.g. a follower's NOT_LEADER. */
    volatile StatusRuntimeException failEverything;
    /** Calls that get no answer at all, as from a paused process. */
    volatile boolean silent;
    volatile KeepAliveMode keepAliveMode = KeepAliveMode.ACK;
    /** Whether {@code Locks.Pipeline} is served; off, the client falls back to unary calls. */
    volatile boolean servePipeline;
    /** How many of the next pipelined Releases to hold unapplied and unanswered. */
    final AtomicInteger holdReleases = new AtomicInteger();
    private final Queue<Runnable> heldReleases = new ConcurrentLinkedQueue<>();
    private final List<StreamObserver<PipelineResponse>> pipelines = new CopyOnWriteArrayList<>();
    /** Every Acquire answered with a grant, in order. */
    final List<AcquireResponse> grantsAnswered = new CopyOnWriteArrayList<>();
    /** The revoked grants every acknowledged keepalive names, as the service repeats them. */
    volatile List<io.fencer.api.v1.RevokedGrant> revokedInKeepAlives = List.of();
    /** The durable mark every acknowledged keepalive carries, when set: how far the peer's commands are durable. */
    volatile DurableMark durableInKeepAlives;
    volatile Handler<AcquireRequest, AcquireResponse> onAcquire = this::grant;
    volatile Handler<ReleaseRequest, ReleaseResponse> onRelease = this::release;
    volatile Function<DescribeRequest, LockInfo> onDescribe = request -> LockInfo.newBuilder()
            .setLock(request.getLock()).build();
    volatile Function<ValidateRequest, ValidateResponse> onValidate = request -> ValidateResponse.newBuilder()
            .setStatus(ValidateResponse.Status.NEVER_ISSUED).build();
    volatile Function<ListRequest, ListResponse> onList = request -> ListResponse.getDefaultInstance();
    /** Every Watch asked of this peer, in order. */
    final List<WatchRequest> watches = new CopyOnWriteArrayList<>();
    /** How a Watch is served: its events sent, the stream left open or ended. By default, as a peer without it. */
    volatile BiConsumer<WatchRequest, StreamObserver<io.fencer.api.v1.LockEvent>> onWatch = (request, events) ->
            events.onError(Status.UNIMPLEMENTED.withDescription("no Watch (scripted)").asRuntimeException());

    private final Map<String, Queue<StatusRuntimeException>> scriptedFailures = new ConcurrentHashMap<>();
    private final Map<String, Long> sessionsByRequestId = new ConcurrentHashMap<>();
    /** The secret handed out with each session, by session id. */
    private final Map<Long, String> secrets = new ConcurrentHashMap<>();
    private final AtomicLong nextSessionId = new AtomicLong(100);
    private final Map<String, long[]> holders = new ConcurrentHashMap<>(); // lock -> {session, token}
    private final Map<String, AtomicLong> lastTokens = new ConcurrentHashMap<>();
    private final List<StreamObserver<KeepAliveResponse>> keepAliveStreams = new CopyOnWriteArrayList<>();
    private final Queue<Runnable> heldKeepAliveAnswers = new ConcurrentLinkedQueue<>();

    /** Fails the next call of {@code method} (e.g. "Acquire") with {@code failure}; queued in order. */
    void failNext(String method, StatusRuntimeException failure) {
        scriptedFailures.computeIfAbsent(method, m -> new ConcurrentLinkedQueue<>()).add(failure);
    }

    /** Fails every open keepalive stream with {@code failure}, as a peer losing leadership does. */
    void failKeepAliveStreams(StatusRuntimeException failure) {
        for (StreamObserver<KeepAliveResponse> stream : keepAliveStreams) {
            try {
                synchronized (stream) {
                    stream.onError(failure);
                }
            } catch (RuntimeException alreadyClosed) {
                // the stream ended meanwhile
            }
        }
        keepAliveStreams.clear();
    }

    /**
     * Sends the answers held in {@link KeepAliveMode#HOLD} (those of streams the client has cancelled meanwhile are
     * dropped, as the network would); returns how many it sent.
     */
    int answerHeldKeepAlives() {
        int sent = 0;
        for (Runnable answer = heldKeepAliveAnswers.poll(); answer != null; answer = heldKeepAliveAnswers.poll()) {
            try {
                answer.run();
                sent++;
            } catch (RuntimeException streamGone) {
                // cancelled by the client
            }
        }
        return sent;
    }

    long count(String method) {
        return calls.stream().filter(method::equals).count();
    }

    static StatusRuntimeException error(Status.Code code, ErrorDetail detail) {
        return WireErrors.toStatusException(Status.fromCode(code).withDescription(detail.getMessage()), detail);
    }

    static StatusRuntimeException notLeader(String leaderAddress) {
        return error(Status.Code.UNAVAILABLE, ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_LEADER)
                .setLeaderAddress(leaderAddress).setMessage("not the leader; leader is '" + leaderAddress + "'")
                .build());
    }

    static StatusRuntimeException plainUnavailable() {
        return Status.UNAVAILABLE.withDescription("connection reset (scripted)").asRuntimeException();
    }

    static FencingToken token(String lock, long value) {
        return FencingToken.newBuilder().setLock(lock).setValue(value).build();
    }

    private <Q, R> void answer(String method, Q request, StreamObserver<R> responses, Handler<Q, R> handler) {
        calls.add(method);
        if (Context.current().getDeadline() != null) {
            callsWithDeadline.add(method);
        }
        if (silent) {
            ((ServerCallStreamObserver<R>) responses).setOnCancelHandler(() -> cancelledCalls.add(method));
            return;
        }
        StatusRuntimeException failure = failEverything;
        Queue<StatusRuntimeException> scripted = scriptedFailures.get(method);
        if (failure == null && scripted != null) {
            failure = scripted.poll();
        }
        if (failure != null) {
            responses.onError(failure);
            return;
        }
        try {
            responses.onNext(handler.handle(request));
            responses.onCompleted();
        } catch (StatusRuntimeException e) {
            responses.onError(e);
        } catch (Exception e) {
            responses.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
        }
    }

    @Override
    public void openSession(OpenSessionRequest request, StreamObserver<OpenSessionResponse> responses) {
        openSessions.add(request);
        answer("OpenSession", request, responses, r -> {
            long id = sessionsByRequestId.computeIfAbsent(r.getRequestId(), key -> nextSessionId.getAndIncrement());
            return OpenSessionResponse.newBuilder().setSessionId(id).setTtlMillis(r.getTtlMillis())
                    .setSecret(secrets.computeIfAbsent(id, FakeLocks::secretOf)).build();
        });
    }

    /** Returns the secret this peer hands out with session {@code id}. */
    static String secretOf(long id) {
        return "fake-secret-of-session-" + id;
    }

    /** Refuses a call for a session this peer opened that does not carry its secret, as the service does. */
    private void checkSecret(long sessionId, String secret) {
        String expected = secrets.get(sessionId);
        if (expected != null && !expected.equals(secret)) {
            throw unauthenticated(sessionId);
        }
    }

    static StatusRuntimeException unauthenticated(long sessionId) {
        return error(Status.Code.UNAUTHENTICATED, ErrorDetail.newBuilder()
                .setReason(Reason.REASON_SESSION_UNAUTHENTICATED).setSessionId(sessionId)
                .setMessage("session " + sessionId + " refused: the session secret presented is not this session's")
                .build());
    }

    @Override
    public void closeSession(CloseSessionRequest request, StreamObserver<CloseSessionResponse> responses) {
        closeSessions.add(request);
        answer("CloseSession", request, responses, r -> {
            checkSecret(r.getSessionId(), r.getSessionSecret());
            holders.values().removeIf(holder -> holder[0] == r.getSessionId());
            return CloseSessionResponse.getDefaultInstance();
        });
    }

    @Override
    public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> responses) {
        acquires.add(request);
        answer("Acquire", request, responses, r -> {
            checkSecret(r.getSessionId(), r.getSessionSecret());
            return onAcquire.handle(r);
        });
    }

    @Override
    public void acquirePermit(AcquirePermitRequest request, StreamObserver<AcquireResponse> responses) {
        answer("AcquirePermit", request, responses, r -> {
            checkSecret(r.getSessionId(), r.getSessionSecret());
            return grantPermit(r);
        });
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> responses) {
        releases.add(request);
        answer("Release", request, responses, r -> {
            checkSecret(r.getSessionId(), r.getSessionSecret());
            return onRelease.handle(r);
        });
    }

    @Override
    public void describe(DescribeRequest request, StreamObserver<LockInfo> responses) {
        answer("Describe", request, responses, r -> onDescribe.apply(r));
    }

    @Override
    public void validate(ValidateRequest request, StreamObserver<ValidateResponse> responses) {
        answer("Validate", request, responses, r -> onValidate.apply(r));
    }

    @Override
    public void watch(WatchRequest request, StreamObserver<io.fencer.api.v1.LockEvent> events) {
        calls.add("Watch");
        watches.add(request);
        onWatch.accept(request, events);
    }

    @Override
    public void list(ListRequest request, StreamObserver<ListResponse> responses) {
        answer("List", request, responses, r -> onList.apply(r));
    }

    @Override
    public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> responses) {
        calls.add("KeepAlive");
        StatusRuntimeException failure = failEverything;
        if (failure != null) {
            responses.onError(failure);
        } else {
            keepAliveStreams.add(responses);
        }
        return new StreamObserver<>() {
            @Override
            public void onNext(KeepAliveRequest request) {
                keepAlives.add(request);
                KeepAliveMode mode = keepAliveMode;
                if (silent || mode == KeepAliveMode.SILENT || failure != null) {
                    return;
                }
                KeepAliveResponse.Builder built = KeepAliveResponse.newBuilder().setSessionId(request.getSessionId());
                String expected = secrets.get(request.getSessionId());
                if (mode == KeepAliveMode.REFUSE
                        || (expected != null && !expected.equals(request.getSessionSecret()))) {
                    StatusRuntimeException refused = unauthenticated(request.getSessionId());
                    built.setError(CallError.newBuilder().setStatusCode(Status.Code.UNAUTHENTICATED.value())
                            .setDescription(refused.getStatus().getDescription())
                            .setDetail(WireErrors.detail(refused).orElseThrow()));
                } else {
                    built.setTtlMillis(1_000).setExpired(mode == KeepAliveMode.EXPIRE)
                            .addAllRevoked(revokedInKeepAlives);
                    DurableMark durable = durableInKeepAlives;
                    if (durable != null) {
                        built.setDurable(durable);
                    }
                }
                KeepAliveResponse answer = built.build();
                Runnable send = () -> {
                    synchronized (responses) { // a stream observer must not be called concurrently
                        responses.onNext(answer);
                    }
                };
                if (mode == KeepAliveMode.HOLD) {
                    heldKeepAliveAnswers.add(send);
                } else {
                    send.run();
                }
            }

            @Override
            public void onError(Throwable t) {
                keepAliveStreams.remove(responses);
            }

            @Override
            public void onCompleted() {
                keepAliveStreams.remove(responses);
                responses.onCompleted();
            }
        };
    }

    /**
     * Serves {@code Locks.Pipeline} when {@link #servePipeline} is set (otherwise UNIMPLEMENTED, as from a server
     * before it): each Acquire and Release is answered as its unary call is, in the order received; a Release is
     * held, neither applied nor answered, while {@link #holdReleases} is positive (one fewer each), until
     * {@link #answerHeldReleases()}.
     */
    @Override
    public StreamObserver<PipelineRequest> pipeline(StreamObserver<PipelineResponse> responses) {
        if (!servePipeline) {
            calls.add("Pipeline refused");
            return super.pipeline(responses);
        }
        calls.add("Pipeline");
        pipelines.add(responses);
        return new StreamObserver<>() {
            @Override
            public void onNext(PipelineRequest request) {
                long callId = request.getCallId();
                if (request.hasAcquire()) {
                    acquire(request.getAcquire(), pipelined(responses, callId,
                            (answer, built) -> built.setAcquire((AcquireResponse) answer)));
                } else if (request.hasRelease() && holdReleases.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    heldReleases.add(() -> release(request.getRelease(), pipelined(responses, callId,
                            (answer, built) -> built.setRelease((ReleaseResponse) answer))));
                } else if (request.hasRelease()) {
                    release(request.getRelease(), pipelined(responses, callId,
                            (answer, built) -> built.setRelease((ReleaseResponse) answer)));
                }
            }

            @Override
            public void onError(Throwable t) {
                pipelines.remove(responses);
            }

            @Override
            public void onCompleted() {
                pipelines.remove(responses);
            }
        };
    }

    int heldReleaseCount() {
        return heldReleases.size();
    }

    /** Applies and answers the releases held so far, in order; returns how many. */
    int answerHeldReleases() {
        int answered = 0;
        for (Runnable release = heldReleases.poll(); release != null; release = heldReleases.poll()) {
            release.run();
            answered++;
        }
        return answered;
    }

    /** Ends every open Pipeline stream with {@code failure}; the releases held on them are lost, never applied. */
    void failPipelines(StatusRuntimeException failure) {
        heldReleases.clear();
        for (StreamObserver<PipelineResponse> stream : pipelines) {
            synchronized (stream) {
                stream.onError(failure);
            }
        }
        pipelines.clear();
    }

    /** An observer of one unary answer that sends it on {@code stream} as the Pipeline message of {@code callId}. */
    private static <R> StreamObserver<R> pipelined(StreamObserver<PipelineResponse> stream, long callId,
            java.util.function.BiConsumer<Object, PipelineResponse.Builder> setAnswer) {
        return new StreamObserver<>() {
            @Override
            public void onNext(R answer) {
                PipelineResponse.Builder built = PipelineResponse.newBuilder().setCallId(callId);
                setAnswer.accept(answer, built);
                send(built.build());
            }

            @Override
            public void onError(Throwable t) {
                send(PipelineResponse.newBuilder().setCallId(callId)
                        .setError(WireErrors.toCallError(t instanceof StatusRuntimeException failure ? failure
                                : Status.fromThrowable(t).asRuntimeException())).build());
            }

            @Override
            public void onCompleted() {
            }

            private void send(PipelineResponse response) {
                synchronized (stream) { // a stream observer must not be called concurrently
                    stream.onNext(response);
                }
            }
        };
    }

    /** Grants a free lock (or the holder's own grant again); answers not acquired with the holder otherwise. */
    synchronized AcquireResponse grant(AcquireRequest request) {
        long[] holder = holders.get(request.getLock());
        if (holder != null && holder[0] != request.getSessionId()) {
            return AcquireResponse.newBuilder().setAcquired(false).setHolder(token(request.getLock(), holder[1]))
                    .build();
        }
        if (holder == null) {
            long value = lastTokens.computeIfAbsent(request.getLock(), l -> new AtomicLong()).incrementAndGet();
            holder = new long[] {request.getSessionId(), value};
            holders.put(request.getLock(), holder);
        }
        AcquireResponse granted = AcquireResponse.newBuilder().setAcquired(true)
                .setToken(token(request.getLock(), holder[1])).build();
        grantsAnswered.add(granted);
        return granted;
    }

    /**
     * Grants the permit the session holds again, or the first free slot as {@link #grant} grants a lock; answers not
     * acquired when every slot is held by others (no queue: tests ask with no wait).
     */
    synchronized AcquireResponse grantPermit(AcquirePermitRequest request) {
        for (int permit = 0; permit < request.getPermits(); permit++) {
            long[] holder = holders.get(PermitSlots.slotName(request.getSemaphore(), permit));
            if (holder != null && holder[0] == request.getSessionId()) {
                return grantSlot(request, permit);
            }
        }
        for (int permit = 0; permit < request.getPermits(); permit++) {
            if (!holders.containsKey(PermitSlots.slotName(request.getSemaphore(), permit))) {
                return grantSlot(request, permit);
            }
        }
        return AcquireResponse.newBuilder().setAcquired(false).build();
    }

    private AcquireResponse grantSlot(AcquirePermitRequest request, int permit) {
        return grant(AcquireRequest.newBuilder().setSessionId(request.getSessionId())
                .setLock(PermitSlots.slotName(request.getSemaphore(), permit)).build());
    }

    /** Releases when the token is the requesting session's hold; fails NOT_HOLDER otherwise. */
    synchronized ReleaseResponse release(ReleaseRequest request) {
        FencingToken presented = request.getToken();
        long[] holder = holders.get(presented.getLock());
        if (holder == null || holder[1] != presented.getValue() || holder[0] != request.getSessionId()) {
            throw notHolder(presented, holder == null ? 0 : holder[1]);
        }
        holders.remove(presented.getLock());
        return ReleaseResponse.newBuilder().setReleased(presented).build();
    }

    static StatusRuntimeException notHolder(FencingToken presented, long current) {
        return error(Status.Code.FAILED_PRECONDITION, ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_HOLDER)
                .setLock(presented.getLock()).setPresentedToken(presented.getValue()).setCurrentToken(current)
                .setMessage("token " + presented.getValue() + " is not the holder").build());
    }
}

package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CancelCall;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.Ticker;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Unary calls to one endpoint carried as messages of one long-lived Pipeline stream instead of one HTTP/2 stream
 * each: Acquire and Release on {@code Locks.Pipeline} ({@link #locks}), Write and Get on {@code Store.Pipeline}
 * ({@link #store}). A call blocks its thread as {@link UnaryCalls#call} does and fails the same
 * way (the server sends the status and detail the unary call would have ended with), so the {@link Router}'s
 * retries and the error catalogue treat both alike.
 *
 * <p>Why: on a 2-core machine a unary call's stream set-up, headers and hand-offs cost more CPU at both ends than
 * Fencer's work for an Acquire or a Release; a message on an open stream costs a fraction of it.
 *
 * <p>The stream is opened on first use and again after it ends. When it ends, every call in flight on it fails
 * with the stream's status (UNAVAILABLE when the peer went away), which the router retries with the same request
 * id. A server without the Pipeline method (UNIMPLEMENTED) turns the pipeline off for good: calls go unary. A call
 * whose thread gives up (deadline, interrupt) sends a cancel, so a waiting Acquire leaves the server's queue.
 * Thread-safe.
 */
final class Pipeline<RequestT, ResponseT> implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Pipeline.class.getName());
    /** Callbacks only complete calls and wake their threads: they run on the transport's thread, no hand-off. */
    private static final Executor DIRECT = Runnable::run;
    /** Deadlines are real time, as in {@link UnaryCalls}: a frozen test ticker must not hold a call for ever. */
    private static final Ticker SYSTEM_TIME = Ticker.system();

    /** How one service's pipeline messages wrap unary calls and their answers. */
    interface Codec<RequestT, ResponseT> {
        MethodDescriptor<RequestT, ResponseT> method();

        /** Returns true when the pipeline carries calls of {@code method}. */
        boolean carries(MethodDescriptor<?, ?> method);

        /** Wraps a unary request; only called for a method it carries. */
        RequestT request(long callId, Object unaryRequest);

        RequestT cancel(long callId);

        long callId(ResponseT response);

        /** Returns the unary answer carried by {@code response}, or throws the failure it carries. */
        Object answer(ResponseT response);
    }

    private final Channel channel;
    private final Codec<RequestT, ResponseT> codec;
    private final AtomicLong nextCallId = new AtomicLong();
    private Stream<RequestT, ResponseT> stream; // guarded by this; null when none is open
    private volatile boolean unsupported;
    private boolean closed; // guarded by this

    private Pipeline(Channel channel, Codec<RequestT, ResponseT> codec) {
        this.channel = channel;
        this.codec = codec;
    }

    /** Returns a pipeline for Acquire and Release on {@code Locks.Pipeline}. */
    static Pipeline<PipelineRequest, PipelineResponse> locks(Channel channel) {
        return new Pipeline<>(channel, new LocksCodec());
    }

    /** Returns a pipeline for Write and Get on {@code Store.Pipeline}. */
    static Pipeline<StorePipelineRequest, StorePipelineResponse> store(Channel channel) {
        return new Pipeline<>(channel, new StoreCodec());
    }

    /** Returns true when {@code method} travels on the pipeline, while the server supports it. */
    boolean carries(MethodDescriptor<?, ?> method) {
        return !unsupported && codec.carries(method);
    }

    /**
     * Makes one call carried by {@link #carries}, waiting at most {@code timeoutNanos} for its answer.
     *
     * @throws StatusRuntimeException as {@link UnaryCalls#call} throws it
     */
    <UnaryRequestT, UnaryResponseT> UnaryResponseT call(MethodDescriptor<UnaryRequestT, UnaryResponseT> method,
            UnaryRequestT request, long timeoutNanos) {
        return call(method, request, timeoutNanos, null);
    }

    /**
     * As {@link #call(MethodDescriptor, Object, long)}, given up (cancelled at the server) as soon as {@code abort},
     * when not null, names a failure, which the call then throws.
     */
    <UnaryRequestT, UnaryResponseT> UnaryResponseT call(MethodDescriptor<UnaryRequestT, UnaryResponseT> method,
            UnaryRequestT request, long timeoutNanos, Router.Abort abort) {
        if (!codec.carries(method)) {
            throw new IllegalArgumentException("the pipeline does not carry " + method.getFullMethodName());
        }
        ResponseT response;
        try {
            long callId = nextCallId.incrementAndGet();
            response = open().call(callId, codec.request(callId, request), timeoutNanos, abort);
        } catch (StatusRuntimeException failure) {
            if (failure.getStatus().getCode() != Status.Code.UNIMPLEMENTED) {
                throw failure;
            }
            unsupported = true; // an older server: it never saw the call, so the unary form is a first attempt
            LOG.log(System.Logger.Level.DEBUG, "the server has no {0}; calls go unary",
                    codec.method().getFullMethodName());
            return UnaryCalls.call(channel, method, request, timeoutNanos, abort);
        }
        return cast(codec.answer(response));
    }

    /**
     * Sends one call carried by {@link #carries} without waiting for its answer: {@code done} gets the unary answer
     * or the failure the unary call would have thrown, on the transport's thread (it must not block). The call
     * reaches the server after every call sent earlier on this pipeline and before every later one, while its
     * stream lasts. Returns false, having sent nothing, when the pipeline cannot carry it (an older server, or a
     * closed client): make the call the blocking way instead.
     */
    boolean send(MethodDescriptor<?, ?> method, Object request, Answered done) {
        if (unsupported || !codec.carries(method)) {
            return false;
        }
        Stream<RequestT, ResponseT> open;
        try {
            open = open();
        } catch (StatusRuntimeException closedClient) {
            return false;
        }
        long callId = nextCallId.incrementAndGet();
        open.send(callId, codec.request(callId, request), new Callback<>(codec, done));
        return true;
    }

    /** What a call sent by {@link #send} is told once: its answer, or its failure. */
    interface Answered {
        void answered(Object answer);

        void failed(StatusRuntimeException failure);
    }

    @SuppressWarnings("unchecked")
    private static <T> T cast(Object answer) {
        return (T) answer;
    }

    /**
     * Returns the failure the unary call would have thrown: the CallError's google.rpc.Status, or its deprecated
     * fields from a server of the previous release.
     */
    static StatusRuntimeException statusException(CallError error) {
        return WireErrors.toStatusException(error);
    }

    private synchronized Stream<RequestT, ResponseT> open() {
        if (closed) {
            throw Status.UNAVAILABLE.withDescription("the client is closed").asRuntimeException();
        }
        if (stream == null || stream.ended) {
            stream = new Stream<>(codec, channel.newCall(codec.method(), CallOptions.DEFAULT.withExecutor(DIRECT)));
            stream.start();
        }
        return stream;
    }

    /** Cancels the open stream, failing its calls in flight; later calls fail UNAVAILABLE. Idempotent. */
    @Override
    public void close() {
        Stream<RequestT, ResponseT> open;
        synchronized (this) {
            closed = true;
            open = stream;
            stream = null;
        }
        if (open != null) {
            open.cancel("the client is closing");
        }
    }

    /** One opened stream and its calls in flight. */
    private static final class Stream<RequestT, ResponseT> extends ClientCall.Listener<ResponseT> {
        private final Codec<RequestT, ResponseT> codec;
        private final ClientCall<RequestT, ResponseT> call;
        private final Map<Long, Outcome<ResponseT>> inFlight = new ConcurrentHashMap<>();
        private volatile boolean ended;
        private StatusRuntimeException endStatus; // set before ended

        Stream(Codec<RequestT, ResponseT> codec, ClientCall<RequestT, ResponseT> call) {
            this.codec = codec;
            this.call = call;
        }

        void start() {
            call.start(this, new Metadata());
            call.request(1);
        }

        ResponseT call(long callId, RequestT request, long timeoutNanos, Router.Abort abort) {
            Waiter<ResponseT> waiter = new Waiter<>(Thread.currentThread(), SYSTEM_TIME);
            send(callId, request, waiter);
            return waiter.await(timeoutNanos, abort, () -> abandon(callId));
        }

        void send(long callId, RequestT request, Outcome<ResponseT> outcome) {
            inFlight.put(callId, outcome);
            send(request);
            if (ended && inFlight.remove(callId) != null) { // ended before the registration was seen: fail it too
                outcome.fail(endStatus);
            }
        }

        /**
         * Gives up on a call: it is forgotten here and cancelled at the server. Returns false when the transport took
         * the call first: its answer (or the stream's end) is told to its outcome, now or in a moment.
         */
        private boolean abandon(long callId) {
            if (inFlight.remove(callId) == null) {
                return false;
            }
            if (!ended) {
                send(codec.cancel(callId));
            }
            return true;
        }

        private void send(RequestT request) {
            synchronized (call) { // a ClientCall is not thread-safe
                if (ended) {
                    return;
                }
                try {
                    call.sendMessage(request);
                } catch (RuntimeException e) {
                    // The stream is ending; its onClose fails the calls in flight.
                    LOG.log(System.Logger.Level.DEBUG, "pipeline send failed", e);
                }
            }
        }

        @Override
        public void onMessage(ResponseT response) {
            Outcome<ResponseT> outcome = inFlight.remove(codec.callId(response));
            if (outcome != null) {
                outcome.complete(response);
            }
            call.request(1);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            Status ending = status.isOk()
                    ? Status.UNAVAILABLE.withDescription("the server ended the pipeline stream") : status;
            endStatus = ending.asRuntimeException(trailers);
            ended = true;
            for (Long callId : new ArrayList<>(inFlight.keySet())) {
                Outcome<ResponseT> outcome = inFlight.remove(callId);
                if (outcome != null) { // each outcome is told once, here or where it was registered
                    outcome.fail(endStatus);
                }
            }
        }

        void cancel(String why) {
            synchronized (call) {
                call.cancel(why, null);
            }
        }
    }

    /** Where one call's answer goes: told at most once, on the transport's thread. */
    private interface Outcome<ResponseT> {
        void complete(ResponseT response);

        void fail(StatusRuntimeException failure);
    }

    /** A call sent by {@link #send}: its answer is unwrapped and handed on. */
    private record Callback<ResponseT>(Codec<?, ResponseT> codec, Answered done) implements Outcome<ResponseT> {
        @Override
        public void complete(ResponseT response) {
            Object answer;
            try {
                answer = codec.answer(response);
            } catch (StatusRuntimeException refused) {
                done.failed(refused);
                return;
            }
            done.answered(answer);
        }

        @Override
        public void fail(StatusRuntimeException failure) {
            done.failed(failure);
        }
    }

    /** A thread waiting for one call's answer. */
    static final class Waiter<ResponseT> implements Outcome<ResponseT> {
        private final Thread thread;
        private final Ticker ticker;
        private volatile Object outcome; // a ResponseT or a StatusRuntimeException

        Waiter(Thread thread, Ticker ticker) {
            this.thread = thread;
            this.ticker = ticker;
        }

        @Override
        public void complete(ResponseT response) {
            outcome = response;
            LockSupport.unpark(thread);
        }

        @Override
        public void fail(StatusRuntimeException failure) {
            outcome = failure;
            LockSupport.unpark(thread);
        }

        /**
         * Waits for the outcome; on timeout or interrupt runs {@code abandon} and fails as a unary call would, and
         * when {@code abort} (asked when it says, unless null) names a failure, runs it and throws that. At the
         * deadline, and when {@code abort} names a failure, an outcome the transport took before {@code abandon} could
         * take the call back (it returns false) wins: an answer that lands as the deadline passes or the session ends
         * may be a grant, which a timeout would hide and an abort would leave with the session on the service. An
         * interrupt still fails the call: the acquire's give-back asks again and releases such a grant.
         */
        ResponseT await(long timeoutNanos, Router.Abort abort, BooleanSupplier abandon) {
            long deadline = ticker.nanoTime() + timeoutNanos;
            while (outcome == null) {
                long remaining = deadline - ticker.nanoTime();
                if (remaining <= 0) {
                    if (!abandon.getAsBoolean()) {
                        return outcomeOnItsWay();
                    }
                    throw Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after "
                            + NANOSECONDS.toMillis(timeoutNanos) + " ms (enforced by the client)")
                            .asRuntimeException();
                }
                LockSupport.parkNanos(this, abort == null ? remaining : Math.min(remaining, abort.askAgainInNanos()));
                if (Thread.interrupted()) {
                    abandon.getAsBoolean();
                    Thread.currentThread().interrupt();
                    throw Status.CANCELLED.withDescription("the calling thread was interrupted").asRuntimeException();
                }
                RuntimeException aborted = abort == null || outcome != null ? null : abort.why();
                if (aborted != null) {
                    if (!abandon.getAsBoolean()) {
                        return outcomeOnItsWay(); // a grant, handed out or given back by the caller (checkHandOut)
                    }
                    throw aborted;
                }
            }
            return result(outcome);
        }

        /**
         * Returns the outcome of a call the transport took from those in flight: it is set, or about to be (the
         * transport sets it right after taking the call, then unparks this thread). Only on the deadline's and the
         * abort's paths, so the loop above reads one volatile per turn, as before.
         */
        private ResponseT outcomeOnItsWay() {
            Object result;
            while ((result = outcome) == null) {
                LockSupport.park(this);
            }
            return result(result);
        }

        @SuppressWarnings("unchecked")
        private static <ResponseT> ResponseT result(Object result) {
            if (result instanceof StatusRuntimeException failure) {
                throw failure;
            }
            return (ResponseT) result;
        }
    }

    private static final class LocksCodec implements Codec<PipelineRequest, PipelineResponse> {
        @Override
        public MethodDescriptor<PipelineRequest, PipelineResponse> method() {
            return LocksGrpc.getPipelineMethod();
        }

        @Override
        public boolean carries(MethodDescriptor<?, ?> method) {
            return method == LocksGrpc.getAcquireMethod() || method == LocksGrpc.getReleaseMethod();
        }

        @Override
        public PipelineRequest request(long callId, Object unaryRequest) {
            PipelineRequest.Builder request = PipelineRequest.newBuilder().setCallId(callId);
            if (unaryRequest instanceof AcquireRequest acquire) {
                return request.setAcquire(acquire).build();
            }
            return request.setRelease((ReleaseRequest) unaryRequest).build();
        }

        @Override
        public PipelineRequest cancel(long callId) {
            return PipelineRequest.newBuilder().setCallId(callId).setCancel(CancelCall.getDefaultInstance()).build();
        }

        @Override
        public long callId(PipelineResponse response) {
            return response.getCallId();
        }

        @Override
        public Object answer(PipelineResponse response) {
            return switch (response.getResultCase()) {
                case ACQUIRE -> response.getAcquire();
                case RELEASE -> response.getRelease();
                case ERROR -> throw statusException(response.getError());
                case RESULT_NOT_SET -> throw noResult(response.getCallId());
            };
        }
    }

    private static final class StoreCodec implements Codec<StorePipelineRequest, StorePipelineResponse> {
        @Override
        public MethodDescriptor<StorePipelineRequest, StorePipelineResponse> method() {
            return StoreGrpc.getPipelineMethod();
        }

        @Override
        public boolean carries(MethodDescriptor<?, ?> method) {
            return method == StoreGrpc.getWriteMethod() || method == StoreGrpc.getGetMethod();
        }

        @Override
        public StorePipelineRequest request(long callId, Object unaryRequest) {
            StorePipelineRequest.Builder request = StorePipelineRequest.newBuilder().setCallId(callId);
            if (unaryRequest instanceof WriteRequest write) {
                return request.setWrite(write).build();
            }
            return request.setGet((GetRequest) unaryRequest).build();
        }

        @Override
        public StorePipelineRequest cancel(long callId) {
            return StorePipelineRequest.newBuilder().setCallId(callId).setCancel(CancelCall.getDefaultInstance())
                    .build();
        }

        @Override
        public long callId(StorePipelineResponse response) {
            return response.getCallId();
        }

        @Override
        public Object answer(StorePipelineResponse response) {
            return switch (response.getResultCase()) {
                case WRITE -> response.getWrite();
                case GET -> response.getGet();
                case ERROR -> throw statusException(response.getError());
                case RESULT_NOT_SET -> throw noResult(response.getCallId());
            };
        }
    }

    private static StatusRuntimeException noResult(long callId) {
        return Status.INTERNAL.withDescription("pipelined call " + callId + " was answered without a result")
                .asRuntimeException();
    }
}

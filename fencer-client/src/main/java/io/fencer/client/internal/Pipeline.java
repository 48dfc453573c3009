package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CancelCall;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Acquire and Release calls to one endpoint, carried as messages of one long-lived {@code Locks.Pipeline} stream
 * instead of one HTTP/2 stream each. A call blocks its thread as {@link UnaryCalls#call} does and fails the same
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
final class Pipeline implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Pipeline.class.getName());
    /** Callbacks only complete calls and wake their threads: they run on the transport's thread, no hand-off. */
    private static final Executor DIRECT = Runnable::run;

    private final Channel channel;
    private final AtomicLong nextCallId = new AtomicLong();
    private Stream stream; // guarded by this; null when none is open
    private volatile boolean unsupported;
    private boolean closed; // guarded by this

    Pipeline(Channel channel) {
        this.channel = channel;
    }

    /** Returns true when {@code method} travels on the pipeline, while the server supports it. */
    boolean carries(MethodDescriptor<?, ?> method) {
        return !unsupported && (method == LocksGrpc.getAcquireMethod() || method == LocksGrpc.getReleaseMethod());
    }

    /**
     * Makes one call carried by {@link #carries}, waiting at most {@code timeoutNanos} for its answer.
     *
     * @throws StatusRuntimeException as {@link UnaryCalls#call} throws it
     */
    <RequestT, ResponseT> ResponseT call(MethodDescriptor<RequestT, ResponseT> method, RequestT request,
            long timeoutNanos) {
        PipelineRequest.Builder message = PipelineRequest.newBuilder().setCallId(nextCallId.incrementAndGet());
        if (request instanceof AcquireRequest acquire) {
            message.setAcquire(acquire);
        } else if (request instanceof ReleaseRequest release) {
            message.setRelease(release);
        } else {
            throw new IllegalArgumentException("the pipeline does not carry " + method.getFullMethodName());
        }
        PipelineResponse response;
        try {
            response = open().call(message.build(), timeoutNanos);
        } catch (StatusRuntimeException failure) {
            if (failure.getStatus().getCode() != Status.Code.UNIMPLEMENTED) {
                throw failure;
            }
            unsupported = true; // an older server: it never saw the call, so the unary form is a first attempt
            LOG.log(System.Logger.Level.DEBUG, "the server has no Pipeline method; calls go unary");
            return UnaryCalls.call(channel, method, request, timeoutNanos);
        }
        @SuppressWarnings("unchecked")
        ResponseT result = (ResponseT) switch (response.getResultCase()) {
            case ACQUIRE -> response.getAcquire();
            case RELEASE -> response.getRelease();
            case ERROR -> throw statusException(response.getError());
            case RESULT_NOT_SET -> throw Status.INTERNAL.withDescription("pipelined call "
                    + response.getCallId() + " was answered without a result").asRuntimeException();
        };
        return result;
    }

    /** Returns the failure the unary call would have thrown: status, description and the detail trailer. */
    static StatusRuntimeException statusException(CallError error) {
        Status status = Status.fromCodeValue(error.getStatusCode());
        if (!error.getDescription().isEmpty()) {
            status = status.withDescription(error.getDescription());
        }
        Metadata trailers = new Metadata();
        if (error.hasDetail()) {
            trailers.put(ErrorCatalogue.DETAIL_KEY, error.getDetail().toByteArray());
        }
        return status.asRuntimeException(trailers);
    }

    private synchronized Stream open() {
        if (closed) {
            throw Status.UNAVAILABLE.withDescription("the client is closed").asRuntimeException();
        }
        if (stream == null || stream.ended) {
            stream = new Stream(channel.newCall(LocksGrpc.getPipelineMethod(),
                    CallOptions.DEFAULT.withExecutor(DIRECT)));
            stream.start();
        }
        return stream;
    }

    /** Cancels the open stream, failing its calls in flight; later calls fail UNAVAILABLE. Idempotent. */
    @Override
    public void close() {
        Stream open;
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
    private static final class Stream extends ClientCall.Listener<PipelineResponse> {
        private final ClientCall<PipelineRequest, PipelineResponse> call;
        private final Map<Long, Waiter> inFlight = new ConcurrentHashMap<>();
        private volatile boolean ended;
        private StatusRuntimeException endStatus; // set before ended

        Stream(ClientCall<PipelineRequest, PipelineResponse> call) {
            this.call = call;
        }

        void start() {
            call.start(this, new Metadata());
            call.request(1);
        }

        PipelineResponse call(PipelineRequest request, long timeoutNanos) {
            Waiter waiter = new Waiter(Thread.currentThread());
            inFlight.put(request.getCallId(), waiter);
            send(request);
            if (ended) { // ended before the registration was seen: fail it as the others were
                waiter.fail(endStatus);
            }
            return waiter.await(timeoutNanos, () -> abandon(request.getCallId()));
        }

        /** Gives up on a call: it is forgotten here and cancelled at the server. */
        private void abandon(long callId) {
            if (inFlight.remove(callId) != null && !ended) {
                send(PipelineRequest.newBuilder().setCallId(callId).setCancel(CancelCall.getDefaultInstance())
                        .build());
            }
        }

        private void send(PipelineRequest request) {
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
        public void onMessage(PipelineResponse response) {
            Waiter waiter = inFlight.remove(response.getCallId());
            if (waiter != null) {
                waiter.complete(response);
            }
            call.request(1);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            Status ending = status.isOk()
                    ? Status.UNAVAILABLE.withDescription("the server ended the pipeline stream") : status;
            endStatus = ending.asRuntimeException(trailers);
            ended = true;
            List<Waiter> waiters = new ArrayList<>(inFlight.values());
            inFlight.clear();
            for (Waiter waiter : waiters) {
                waiter.fail(endStatus);
            }
        }

        void cancel(String why) {
            synchronized (call) {
                call.cancel(why, null);
            }
        }
    }

    /** A thread waiting for one call's answer. */
    private static final class Waiter {
        private final Thread thread;
        private volatile Object outcome; // a PipelineResponse or a StatusRuntimeException

        Waiter(Thread thread) {
            this.thread = thread;
        }

        void complete(PipelineResponse response) {
            outcome = response;
            LockSupport.unpark(thread);
        }

        void fail(StatusRuntimeException failure) {
            outcome = failure;
            LockSupport.unpark(thread);
        }

        /** Waits for the outcome; on timeout or interrupt runs {@code abandon} and fails as a unary call would. */
        PipelineResponse await(long timeoutNanos, Runnable abandon) {
            long deadline = System.nanoTime() + timeoutNanos;
            while (outcome == null) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    abandon.run();
                    throw Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after "
                            + NANOSECONDS.toMillis(timeoutNanos) + " ms (enforced by the client)")
                            .asRuntimeException();
                }
                LockSupport.parkNanos(this, remaining);
                if (Thread.interrupted()) {
                    abandon.run();
                    Thread.currentThread().interrupt();
                    throw Status.CANCELLED.withDescription("the calling thread was interrupted").asRuntimeException();
                }
            }
            Object result = outcome;
            if (result instanceof StatusRuntimeException failure) {
                throw failure;
            }
            return (PipelineResponse) result;
        }
    }
}

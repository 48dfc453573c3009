package io.fencer.server.rpc;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CallError;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.UnavailableException;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client's Pipeline stream ({@code Locks.Pipeline}, {@code Store.Pipeline}): each request message is served
 * as the unary call it carries, by the service's own handler, through a {@link PipelinedCall} that stands in for
 * the unary call's observer; each answer goes back as one response message with the request's call id. Both
 * services use this one class; a {@link Dispatch} is what differs: it maps a service's messages to its handlers.
 *
 * <p>Why an adapter and not a second implementation: a pipelined call must behave exactly as a unary one (checks,
 * errors, waiting, idempotency, cancellation), so it runs the same code. Sends are serialized on the stream, since
 * answers complete on any thread (Raft apply, store workers, timers). Thread-safe.
 *
 * @param <RequestT> the stream's request message
 * @param <ResponseT> the stream's response message
 */
public final class PipelineStream<RequestT, ResponseT> implements StreamObserver<RequestT> {
    /** The most calls one stream may have in flight: a bound on the server's memory per client. */
    static final int CALLS_IN_FLIGHT_MAX = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(PipelineStream.class);

    private final ServerCallStreamObserver<ResponseT> stream;
    private final Dispatch<RequestT, ResponseT> dispatch;
    private final BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos;
    /** Told once the stream has ended, however it ended. */
    private final Consumer<PipelineStream<?, ?>> onEnd;
    private final Map<Long, PipelinedCall<?, ResponseT>> inFlight = new ConcurrentHashMap<>();
    private boolean closed; // guarded by this

    /**
     * The part of a Pipeline stream that differs between services: which unary handler serves each kind of call,
     * and how its answers are wrapped in the stream's response message.
     *
     * @param <RequestT> the stream's request message
     * @param <ResponseT> the stream's response message
     */
    public interface Dispatch<RequestT, ResponseT> {
        /**
         * Serves one request message: cancels the call it names ({@link PipelineStream#cancel}), serves the call
         * it carries ({@link PipelineStream#serve}) or refuses it ({@link PipelineStream#refuse}).
         */
        void dispatch(RequestT request, PipelineStream<RequestT, ResponseT> stream);

        /** Returns the response that answers call {@code callId} with {@code error}. */
        ResponseT errorResponse(long callId, CallError error);
    }

    public PipelineStream(ServerCallStreamObserver<ResponseT> stream, Dispatch<RequestT, ResponseT> dispatch,
            BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Consumer<PipelineStream<?, ?>> onEnd) {
        this.stream = stream;
        this.dispatch = dispatch;
        this.latencyNanos = latencyNanos;
        this.onEnd = onEnd;
        stream.setOnCancelHandler(this::end);
    }

    @Override
    public void onNext(RequestT request) {
        dispatch.dispatch(request, this);
    }

    /** Returns the response that answers call {@code callId} with {@code error}. */
    ResponseT errorResponse(long callId, CallError error) {
        return dispatch.errorResponse(callId, error);
    }

    /** Cancels the call in flight with {@code callId}, if any. */
    public void cancel(long callId) {
        PipelinedCall<?, ResponseT> call = inFlight.get(callId);
        if (call != null) {
            call.cancel();
        }
    }

    /**
     * Serves call {@code callId} with {@code handler}, the service's unary handler of {@code method}, and wraps its
     * answer with {@code answer}; or answers the call's refusal (a bad or duplicate call id, too many in flight).
     */
    public <CallRequestT, CallResponseT> void serve(long callId, MethodDescriptor<CallRequestT, CallResponseT> method,
            CallRequestT request, BiConsumer<CallRequestT, StreamObserver<CallResponseT>> handler,
            Function<CallResponseT, ResponseT> answer) {
        PipelinedCall<CallResponseT, ResponseT> call = start(callId, method, answer);
        if (call != null) {
            handler.accept(request, call);
        }
    }

    /**
     * Registers a new call whose answer {@code answer} wraps in a response, or answers its refusal and returns
     * null.
     */
    private <T> PipelinedCall<T, ResponseT> start(long callId, MethodDescriptor<?, T> method,
            Function<T, ResponseT> answer) {
        if (callId < 1) {
            refuse(callId, new InvalidArgumentException("call_id", Long.toUnsignedString(callId),
                    "call_id must be >= 1, got " + Long.toUnsignedString(callId)));
            return null;
        }
        if (inFlight.size() >= CALLS_IN_FLIGHT_MAX) {
            refuse(callId, new LimitExceededException("pipelineCallsInFlightMax", CALLS_IN_FLIGHT_MAX,
                    "the stream has " + CALLS_IN_FLIGHT_MAX + " calls in flight, the most allowed; call "
                            + callId + " is refused"));
            return null;
        }
        PipelinedCall<T, ResponseT> call = new PipelinedCall<>(this, callId, method, answer);
        if (inFlight.putIfAbsent(callId, call) != null) {
            refuse(callId, new InvalidArgumentException("call_id", Long.toString(callId),
                    "call_id " + callId + " is already in flight on this stream"));
            return null;
        }
        return call;
    }

    /** Answers call {@code callId} with {@code error} at once. */
    public void refuse(long callId, RuntimeException error) {
        send(errorResponse(callId, callError(error)));
    }

    /** Returns the error as the unary call would have ended with it: its google.rpc.Status, with the detail. */
    static CallError callError(Throwable error) {
        return WireErrors.toCallError(ErrorCatalogue.toStatusException(error));
    }

    /** Sends one answer, unless the stream has ended. */
    synchronized void send(ResponseT response) {
        if (closed || stream.isCancelled()) {
            return;
        }
        try {
            stream.onNext(response);
        } catch (RuntimeException e) {
            LOG.debug("pipeline stream ended before an answer", e);
        }
    }

    void finished(PipelinedCall<?, ResponseT> call) {
        inFlight.remove(call.callId(), call);
        latencyNanos.accept(call.method(), System.nanoTime() - call.startNanos());
    }

    @Override
    public void onError(Throwable error) {
        end();
    }

    @Override
    public void onCompleted() {
        end();
        synchronized (this) {
            if (!closed) {
                closed = true;
                try {
                    stream.onCompleted();
                } catch (RuntimeException alreadyClosed) {
                    LOG.debug("pipeline stream already closed", alreadyClosed);
                }
            }
        }
    }

    /** Ends the stream with UNAVAILABLE, so the client moves on while the server shuts down. */
    public void fail(UnavailableException error) {
        end();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            try {
                stream.onError(ErrorCatalogue.toStatusException(error));
            } catch (RuntimeException alreadyClosed) {
                LOG.debug("pipeline stream already closed", alreadyClosed);
            }
        }
    }

    /** The client went away or the stream ends: its calls are abandoned, as cancelled unary calls are. */
    private void end() {
        onEnd.accept(this);
        List<PipelinedCall<?, ResponseT>> calls = new ArrayList<>(inFlight.values());
        for (PipelinedCall<?, ResponseT> call : calls) {
            call.cancel();
        }
    }
}

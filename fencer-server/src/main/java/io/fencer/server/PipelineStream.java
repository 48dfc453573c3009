package io.fencer.server;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.UnavailableException;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client's {@code Locks.Pipeline} stream: each request message is served as the unary call it carries, by the
 * same handler, through a {@link PipelinedCall} that stands in for the unary call's observer; each answer goes
 * back as one response message with the request's call id.
 *
 * <p>Why an adapter and not a second implementation: a pipelined Acquire must behave exactly as a unary one
 * (checks, errors, waiting, idempotency, cancellation), so it runs the same code. Sends are serialized on the
 * stream, since answers complete on any thread (Raft apply, timers). Thread-safe.
 */
final class PipelineStream implements StreamObserver<PipelineRequest> {
    /** The most calls one stream may have in flight: a bound on the server's memory per client. */
    static final int CALLS_IN_FLIGHT_MAX = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(PipelineStream.class);

    private final LocksService service;
    private final ServerCallStreamObserver<PipelineResponse> stream;
    private final BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos;
    /** Told once the stream has ended, however it ended. */
    private final Consumer<PipelineStream> onEnd;
    private final Map<Long, PipelinedCall<?>> inFlight = new ConcurrentHashMap<>();
    private boolean closed; // guarded by this

    PipelineStream(LocksService service, ServerCallStreamObserver<PipelineResponse> stream,
            BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Consumer<PipelineStream> onEnd) {
        this.service = service;
        this.stream = stream;
        this.latencyNanos = latencyNanos;
        this.onEnd = onEnd;
        stream.setOnCancelHandler(this::end);
    }

    @Override
    public void onNext(PipelineRequest request) {
        long callId = request.getCallId();
        switch (request.getCallCase()) {
            case CANCEL -> {
                PipelinedCall<?> call = inFlight.get(callId);
                if (call != null) {
                    call.cancel();
                }
            }
            case ACQUIRE -> {
                PipelinedCall<AcquireResponse> call = start(callId, LocksGrpc.getAcquireMethod(),
                        PipelineResponse.Builder::setAcquire);
                if (call != null) {
                    service.acquire(request.getAcquire(), call);
                }
            }
            case RELEASE -> {
                PipelinedCall<ReleaseResponse> call = start(callId, LocksGrpc.getReleaseMethod(),
                        PipelineResponse.Builder::setRelease);
                if (call != null) {
                    service.release(request.getRelease(), call);
                }
            }
            case CALL_NOT_SET -> refuse(callId, new InvalidArgumentException("call", "",
                    "pipelined call " + callId + " carries no call: expected acquire, release or cancel"));
        }
    }

    /** Registers a new call, or answers its refusal and returns null. */
    private <T> PipelinedCall<T> start(long callId, MethodDescriptor<?, T> method,
            BiConsumer<PipelineResponse.Builder, T> setResult) {
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
        PipelinedCall<T> call = new PipelinedCall<>(this, callId, method, setResult);
        if (inFlight.putIfAbsent(callId, call) != null) {
            refuse(callId, new InvalidArgumentException("call_id", Long.toString(callId),
                    "call_id " + callId + " is already in flight on this stream"));
            return null;
        }
        return call;
    }

    private void refuse(long callId, RuntimeException error) {
        send(PipelineResponse.newBuilder().setCallId(callId).setError(callError(error)).build());
    }

    /** Returns the error as the unary call would have ended with it: status, description, detail. */
    static CallError callError(Throwable error) {
        StatusRuntimeException status = ErrorCatalogue.toStatusException(error);
        CallError.Builder callError = CallError.newBuilder()
                .setStatusCode(status.getStatus().getCode().value());
        if (status.getStatus().getDescription() != null) {
            callError.setDescription(status.getStatus().getDescription());
        }
        byte[] detail = status.getTrailers() == null ? null : status.getTrailers().get(ErrorCatalogue.ERROR_DETAIL_KEY);
        if (detail != null) {
            try {
                callError.setDetail(ErrorDetail.parseFrom(detail));
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new IllegalStateException("the server's own error detail does not parse", e);
            }
        }
        return callError.build();
    }

    /** Sends one answer, unless the stream has ended. */
    synchronized void send(PipelineResponse response) {
        if (closed || stream.isCancelled()) {
            return;
        }
        try {
            stream.onNext(response);
        } catch (RuntimeException e) {
            LOG.debug("pipeline stream ended before an answer", e);
        }
    }

    void finished(PipelinedCall<?> call) {
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
    void fail(UnavailableException error) {
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
        List<PipelinedCall<?>> calls = new ArrayList<>(inFlight.values());
        for (PipelinedCall<?> call : calls) {
            call.cancel();
        }
    }
}

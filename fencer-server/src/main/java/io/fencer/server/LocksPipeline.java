package io.fencer.server;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.core.InvalidArgumentException;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/** One client's {@code Locks.Pipeline} stream: Acquire and Release served by {@link LocksService}'s handlers. */
final class LocksPipeline extends PipelineStream<PipelineRequest, PipelineResponse> {
    private final LocksService service;

    LocksPipeline(LocksService service, ServerCallStreamObserver<PipelineResponse> stream,
            BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Consumer<PipelineStream<?, ?>> onEnd) {
        super(stream, latencyNanos, onEnd);
        this.service = service;
    }

    @Override
    public void onNext(PipelineRequest request) {
        long callId = request.getCallId();
        switch (request.getCallCase()) {
            case CANCEL -> cancel(callId);
            case ACQUIRE -> {
                var call = start(callId, LocksGrpc.getAcquireMethod(), (AcquireResponse acquired) ->
                        PipelineResponse.newBuilder().setCallId(callId).setAcquire(acquired).build());
                if (call != null) {
                    service.acquire(request.getAcquire(), call);
                }
            }
            case RELEASE -> {
                var call = start(callId, LocksGrpc.getReleaseMethod(), (ReleaseResponse released) ->
                        PipelineResponse.newBuilder().setCallId(callId).setRelease(released).build());
                if (call != null) {
                    service.release(request.getRelease(), call);
                }
            }
            case CALL_NOT_SET -> refuse(callId, new InvalidArgumentException("call", "",
                    "pipelined call " + callId + " carries no call: expected acquire, release or cancel"));
        }
    }

    @Override
    PipelineResponse errorResponse(long callId, CallError error) {
        return PipelineResponse.newBuilder().setCallId(callId).setError(error).build();
    }
}

package io.fencer.server.locks;

import io.fencer.api.v1.CallError;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.core.InvalidArgumentException;
import io.fencer.server.rpc.PipelineStream;

/** The calls of a {@code Locks.Pipeline} stream: Acquire and Release, served by {@link LocksService}'s handlers. */
final class LocksPipeline implements PipelineStream.Dispatch<PipelineRequest, PipelineResponse> {
    private final LocksService service;

    LocksPipeline(LocksService service) {
        this.service = service;
    }

    @Override
    public void dispatch(PipelineRequest request, PipelineStream<PipelineRequest, PipelineResponse> stream) {
        long callId = request.getCallId();
        switch (request.getCallCase()) {
            case CANCEL -> stream.cancel(callId);
            case ACQUIRE -> stream.serve(callId, LocksGrpc.getAcquireMethod(), request.getAcquire(), service::acquire,
                    acquired -> PipelineResponse.newBuilder().setCallId(callId).setAcquire(acquired).build());
            case RELEASE -> stream.serve(callId, LocksGrpc.getReleaseMethod(), request.getRelease(), service::release,
                    released -> PipelineResponse.newBuilder().setCallId(callId).setRelease(released).build());
            case CALL_NOT_SET -> stream.refuse(callId, new InvalidArgumentException("call", "",
                    "pipelined call " + callId + " carries no call: expected acquire, release or cancel"));
        }
    }

    @Override
    public PipelineResponse errorResponse(long callId, CallError error) {
        return PipelineResponse.newBuilder().setCallId(callId).setError(error).build();
    }
}

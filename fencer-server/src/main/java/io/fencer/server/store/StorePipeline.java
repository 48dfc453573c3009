package io.fencer.server.store;

import io.fencer.api.v1.CallError;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.core.InvalidArgumentException;
import io.fencer.server.rpc.PipelineStream;

/** The calls of a {@code Store.Pipeline} stream: Write and Get, served by {@link StoreService}'s handlers. */
final class StorePipeline implements PipelineStream.Dispatch<StorePipelineRequest, StorePipelineResponse> {
    private final StoreService service;

    StorePipeline(StoreService service) {
        this.service = service;
    }

    @Override
    public void dispatch(StorePipelineRequest request,
            PipelineStream<StorePipelineRequest, StorePipelineResponse> stream) {
        long callId = request.getCallId();
        switch (request.getCallCase()) {
            case CANCEL -> stream.cancel(callId);
            case WRITE -> stream.serve(callId, StoreGrpc.getWriteMethod(), request.getWrite(), service::write,
                    written -> StorePipelineResponse.newBuilder().setCallId(callId).setWrite(written).build());
            case GET -> stream.serve(callId, StoreGrpc.getGetMethod(), request.getGet(), service::get,
                    read -> StorePipelineResponse.newBuilder().setCallId(callId).setGet(read).build());
            case CALL_NOT_SET -> stream.refuse(callId, new InvalidArgumentException("call", "",
                    "pipelined call " + callId + " carries no call: expected write, get or cancel"));
        }
    }

    @Override
    public StorePipelineResponse errorResponse(long callId, CallError error) {
        return StorePipelineResponse.newBuilder().setCallId(callId).setError(error).build();
    }
}

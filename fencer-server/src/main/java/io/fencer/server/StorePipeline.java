package io.fencer.server;

import io.fencer.api.v1.CallError;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.InvalidArgumentException;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/** One client's {@code Store.Pipeline} stream: Write and Get served by {@link StoreService}'s handlers. */
final class StorePipeline extends PipelineStream<StorePipelineRequest, StorePipelineResponse> {
    private final StoreService service;

    StorePipeline(StoreService service, ServerCallStreamObserver<StorePipelineResponse> stream,
            BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Consumer<PipelineStream<?, ?>> onEnd) {
        super(stream, latencyNanos, onEnd);
        this.service = service;
    }

    @Override
    public void onNext(StorePipelineRequest request) {
        long callId = request.getCallId();
        switch (request.getCallCase()) {
            case CANCEL -> cancel(callId);
            case WRITE -> {
                var call = start(callId, StoreGrpc.getWriteMethod(), (WriteResponse written) ->
                        StorePipelineResponse.newBuilder().setCallId(callId).setWrite(written).build());
                if (call != null) {
                    service.write(request.getWrite(), call);
                }
            }
            case GET -> {
                var call = start(callId, StoreGrpc.getGetMethod(), (GetResponse read) ->
                        StorePipelineResponse.newBuilder().setCallId(callId).setGet(read).build());
                if (call != null) {
                    service.get(request.getGet(), call);
                }
            }
            case CALL_NOT_SET -> refuse(callId, new InvalidArgumentException("call", "",
                    "pipelined call " + callId + " carries no call: expected write, get or cancel"));
        }
    }

    @Override
    StorePipelineResponse errorResponse(long callId, CallError error) {
        return StorePipelineResponse.newBuilder().setCallId(callId).setError(error).build();
    }
}

package io.fencer.server.rpc;

import io.fencer.api.v1.CallError;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The answer of a unary call, the same for every service: its response, or its error mapped by the
 * {@link ErrorCatalogue}. A call the client has cancelled gets nothing.
 */
public final class Replies {
    private static final Logger LOG = LoggerFactory.getLogger(Replies.class);

    private Replies() {}

    /**
     * Returns {@code error} as a stream message carries it (a Pipeline answer, a KeepAlive answer): the status,
     * sentence and detail the call's unary form would have ended with, exactly as Pipeline streams send it.
     */
    public static CallError callError(Throwable error) {
        return PipelineStream.callError(error);
    }

    /** Sends a unary call's single answer: the response, or the error mapped by the catalogue. */
    public static <T> void send(StreamObserver<T> out, T response, Throwable error) {
        ServerCallStreamObserver<T> call = (ServerCallStreamObserver<T>) out;
        if (call.isCancelled()) {
            return;
        }
        try {
            if (error != null) {
                call.onError(ErrorCatalogue.toStatusException(error));
            } else {
                call.onNext(response);
                call.onCompleted();
            }
        } catch (RuntimeException e) {
            LOG.debug("call ended before its answer", e); // cancelled by the client meanwhile
        }
    }
}

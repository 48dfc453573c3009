package io.fencer.server.rpc;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

/**
 * The request side of a stream whose handler answers each request at once (as {@code Locks.KeepAlive} does), read
 * at the pace its answers flow: one request at a time, and the next only while the transport
 * {@linkplain ServerCallStreamObserver#isReady() is ready} for answers, else once its {@code onReady} says so.
 *
 * <p>Why: with gRPC's automatic inbound flow control a client that keeps sending but stops reading makes the server
 * buffer an answer per request without bound. Read at this pace, such a client is held back by HTTP/2 flow control
 * on its own side, and the server holds at most one answer beyond the transport's own ready threshold.
 *
 * <p>gRPC calls {@link #onNext}, {@link #onError}, {@link #onCompleted} and the ready handler one at a time, though
 * not always on the same thread: the pause needs no lock, only visibility.
 *
 * @param <RequestT> the stream's request message
 */
public final class PacedRequests<RequestT> implements StreamObserver<RequestT> {
    private final ServerCallStreamObserver<?> call;
    private final StreamObserver<RequestT> handler;
    private final StreamFlow flow;
    private volatile boolean paused;

    private PacedRequests(ServerCallStreamObserver<?> call, StreamObserver<RequestT> handler, StreamFlow flow) {
        this.call = call;
        this.handler = handler;
        this.flow = flow;
    }

    /**
     * Returns {@code handler} read at the pace of {@code call}'s answers; call from the service's stream method,
     * before it returns (the transport's handlers can only be set then).
     */
    public static <RequestT> PacedRequests<RequestT> pace(ServerCallStreamObserver<?> call,
            StreamObserver<RequestT> handler, StreamFlow flow) {
        PacedRequests<RequestT> paced = new PacedRequests<>(call, handler, flow);
        call.disableAutoRequest();
        call.setOnReadyHandler(paced::onReady);
        // Told when the server ended the call and the client took its end; onError and onCompleted tell the rest.
        call.setOnCloseHandler(paced::unpause);
        call.request(1);
        return paced;
    }

    @Override
    public void onNext(RequestT request) {
        flow.requestRead();
        handler.onNext(request);
        if (call.isReady()) {
            call.request(1);
        } else {
            // The ready handler runs after this returns (gRPC serializes the callbacks) and resumes.
            paused = true;
            flow.paused();
        }
    }

    /** The transport can take answers again: reads the next request if reading was paused. */
    private void onReady() {
        if (unpause()) {
            call.request(1);
        }
    }

    /** Clears the pause; returns true when reading was paused. */
    private boolean unpause() {
        if (!paused) {
            return false;
        }
        paused = false;
        flow.resumed();
        return true;
    }

    @Override
    public void onError(Throwable error) {
        unpause(); // the stream has ended: nothing waits any more
        handler.onError(error);
    }

    @Override
    public void onCompleted() {
        unpause(); // the client sends no more
        handler.onCompleted();
    }
}

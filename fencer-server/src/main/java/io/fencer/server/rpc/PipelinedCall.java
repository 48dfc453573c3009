package io.fencer.server.rpc;

import com.google.protobuf.MessageLite;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.function.Function;

/**
 * One call carried on a {@link PipelineStream}, seen by the service's unary handler as its call: the answer
 * becomes one response message; a cancel message or the stream's end cancel it as a client cancels a unary call.
 * Thread-safe: the handler answers from any thread while a cancel may arrive.
 *
 * @param <T> the unary call's response
 * @param <ResponseT> the stream's response message
 */
final class PipelinedCall<T, ResponseT extends MessageLite> extends ServerCallStreamObserver<T> {
    private final PipelineStream<?, ResponseT> stream;
    private final long callId;
    private final MethodDescriptor<?, T> method;
    private final Function<T, ResponseT> answer;
    private final long startNanos = System.nanoTime();
    private Runnable onCancel; // guarded by this
    private boolean cancelled; // guarded by this
    private boolean answered; // guarded by this
    /** The event loop that counts this call in flight, until it is finished; null = none. Set before publication. */
    private ReplySpin.Loop countedOn;

    PipelinedCall(PipelineStream<?, ResponseT> stream, long callId, MethodDescriptor<?, T> method,
            Function<T, ResponseT> answer) {
        this.stream = stream;
        this.callId = callId;
        this.method = method;
        this.answer = answer;
    }

    /** Counts this call in flight on {@code loop} (null = none), until {@link #uncount}. */
    void countOn(ReplySpin.Loop loop) {
        if (loop != null) {
            loop.started();
            countedOn = loop;
        }
    }

    /** Ends the count of {@link #countOn}; the stream calls it once, when the call is finished or refused. */
    void uncount() {
        ReplySpin.Loop loop = countedOn;
        if (loop != null) {
            loop.ended();
        }
    }

    long callId() {
        return callId;
    }

    MethodDescriptor<?, T> method() {
        return method;
    }

    long startNanos() {
        return startNanos;
    }

    @Override
    public void onNext(T value) {
        if (!answer()) {
            return;
        }
        stream.send(answer.apply(value));
        stream.finished(this);
    }

    @Override
    public void onError(Throwable error) {
        if (!answer()) {
            return;
        }
        stream.send(stream.errorResponse(callId, PipelineStream.callError(error)));
        stream.finished(this);
    }

    @Override
    public void onCompleted() {
        // A unary call's single answer was sent by onNext.
    }

    /** Marks the call answered; false when it was answered or cancelled before. */
    private synchronized boolean answer() {
        if (answered || cancelled) {
            return false;
        }
        answered = true;
        return true;
    }

    /** Cancels the call unless it was answered: the handler's cancel handler runs, its answer is dropped. */
    void cancel() {
        Runnable handler;
        synchronized (this) {
            if (answered || cancelled) {
                return;
            }
            cancelled = true;
            handler = onCancel;
        }
        stream.finished(this);
        if (handler != null) {
            handler.run();
        }
    }

    @Override
    public synchronized boolean isCancelled() {
        return cancelled;
    }

    @Override
    public void setOnCancelHandler(Runnable handler) {
        boolean runNow;
        synchronized (this) {
            onCancel = handler;
            runNow = cancelled;
        }
        if (runNow) {
            handler.run(); // cancelled before the handler registered: it must still learn of it
        }
    }

    @Override
    public boolean isReady() {
        return true;
    }

    @Override
    public void setOnReadyHandler(Runnable handler) {
        throw new UnsupportedOperationException("a pipelined call answers once; it has no flow control");
    }

    @Override
    public void disableAutoInboundFlowControl() {
        throw new UnsupportedOperationException("a pipelined call has no inbound flow of its own");
    }

    @Override
    public void request(int count) {
        throw new UnsupportedOperationException("a pipelined call has no inbound flow of its own");
    }

    @Override
    public void setMessageCompression(boolean enable) {
        // The stream's compression applies.
    }

    @Override
    public void setCompression(String compression) {
        // The stream's compression applies.
    }
}

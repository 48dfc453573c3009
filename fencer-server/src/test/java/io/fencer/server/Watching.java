package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.WatchRequest;
import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A test's Watch stream: every message, or the stream's error, in a queue read with a timeout. With
 * {@code reading} false the client asks its transport for no message, so the server sees an HTTP/2 window that
 * is never returned: a watcher that stopped reading.
 */
final class Watching implements ClientResponseObserver<WatchRequest, LockEvent> {
    private static final long WAIT_SECONDS = 20;

    private final LinkedBlockingQueue<Object> messages = new LinkedBlockingQueue<>();
    private final boolean reading;
    private volatile ClientCallStreamObserver<WatchRequest> call;
    private int skipped;

    private Watching(boolean reading) {
        this.reading = reading;
    }

    static Watching start(Channel channel, WatchRequest request, ClientInterceptor... interceptors) {
        return start(channel, request, true, interceptors);
    }

    static Watching start(Channel channel, WatchRequest request, boolean reading, ClientInterceptor... interceptors) {
        Watching watching = new Watching(reading);
        LocksGrpc.newStub(channel).withInterceptors(interceptors).watch(request, watching);
        return watching;
    }

    static WatchRequest from(String prefix, long revision, int ordinal) {
        return WatchRequest.newBuilder().setPrefix(prefix).setFromRevision(revision).setFromOrdinal(ordinal).build();
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
        call = requestStream;
        if (!reading) {
            requestStream.disableAutoRequestWithInitial(0);
        }
    }

    /** Returns the next message, failing the test when the stream ended or nothing came in time. */
    LockEvent next() throws InterruptedException {
        Object message = messages.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        if (message instanceof LockEvent event) {
            return event;
        }
        throw new AssertionError("expected a lock event, got " + message, message instanceof Throwable t ? t : null);
    }

    /** Returns the next message, a lock event or the stream's error, or null when nothing came in time. */
    Object nextMessage() throws InterruptedException {
        return messages.poll(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    /** Returns the next {@code count} messages. */
    List<LockEvent> next(int count) throws InterruptedException {
        List<LockEvent> events = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            events.add(next());
        }
        return events;
    }

    /** Returns the error that ended the stream, skipping (and counting) the messages before it. */
    StatusRuntimeException error() throws InterruptedException {
        while (true) {
            Object message = messages.poll(WAIT_SECONDS, TimeUnit.SECONDS);
            if (message instanceof StatusRuntimeException error) {
                return error;
            }
            assertThat(message).as("the stream's end").isNotNull().isInstanceOf(LockEvent.class);
            skipped++;
        }
    }

    /** Returns how many messages {@link #error()} skipped. */
    int skipped() {
        return skipped;
    }

    /** Starts reading, for a stream started without. */
    void read() {
        call.request(Integer.MAX_VALUE);
    }

    /** Returns the messages received and not taken yet, without waiting. */
    List<Object> drained() {
        List<Object> drained = new ArrayList<>();
        messages.drainTo(drained);
        return drained;
    }

    void cancel() {
        call.cancel("the test is done with this watch", null);
    }

    @Override
    public void onNext(LockEvent event) {
        messages.add(event);
    }

    @Override
    public void onError(Throwable error) {
        messages.add(error);
    }

    @Override
    public void onCompleted() {
        messages.add("completed");
    }
}

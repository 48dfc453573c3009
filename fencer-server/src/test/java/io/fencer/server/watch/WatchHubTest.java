package io.fencer.server.watch;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.LockEvent;
import io.fencer.core.FencingToken;
import io.fencer.lock.Event;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Interleavings of the apply thread and a stream's send, forced at the one call between them a stream makes. */
class WatchHubTest {
    /** The sender: sends wait here until the test runs them, as on the hub's own thread, one after another. */
    private final java.util.ArrayDeque<Runnable> sends = new java.util.ArrayDeque<>();
    private final WatchHub hub = new WatchHub(new WatchLimits(10, 2), sends::add);
    private long revision = 1;
    private static final WatchHub.Watcher WATCHER = new WatchHub.Watcher("tester", 10);

    private void runSends() {
        while (!sends.isEmpty()) {
            sends.poll().run();
        }
    }

    private void grant(String lock, long token) {
        hub.onApplied(revision++, List.of(new Event.Granted(7, "r", new FencingToken(lock, token), "worker")));
    }

    /**
     * Regression: a stream checked for eviction, then asked the transport whether it was ready, then read; events
     * evicted in between were skipped without a word. Here the apply thread evicts exactly then, inside isReady:
     * the stream must end RESOURCE_EXHAUSTED instead of going on past the lost events.
     */
    @Test
    void send_historyEvictsBetweenTheCheckAndTheRead_endsTheStreamRatherThanSkippingEvents() {
        hub.onStateLoaded(0);
        EvictingStream stream = new EvictingStream();
        stream.reading = false;
        hub.watch("", 1, 0, stream, WATCHER);
        runSends();
        grant("a", 1); // kept: 1 of 2; the stream does not read yet
        stream.evictOnReady = () -> {
            grant("b", 2);
            grant("c", 3); // "a" leaves the history of 2; the sends these wake wait their turn
        };

        stream.setReading(true);
        runSends();

        assertThat(stream.received).extracting(LockEvent::getKind).containsExactly(LockEvent.Kind.KIND_START);
        assertThat(stream.error).isNotNull();
        assertThat(Status.fromThrowable(stream.error).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(stream.error).hasMessageContaining("watchEventsKeptMax");
        // Control: a stream from the oldest revision kept reads on without an error.
        EvictingStream fresh = new EvictingStream();
        hub.watch("", 3, 0, fresh, WATCHER);
        runSends();
        assertThat(fresh.error).isNull();
        assertThat(fresh.received).extracting(LockEvent::getLock).containsExactly("", "c");
    }

    /** A stream that, the first time it is asked whether it is ready after it sent its start, runs an apply. */
    private static final class EvictingStream extends ServerCallStreamObserver<LockEvent> {
        final List<LockEvent> received = new ArrayList<>();
        Throwable error;
        boolean reading = true;
        Runnable evictOnReady;
        Runnable onReady;

        void setReading(boolean reading) {
            this.reading = reading;
            onReady.run();
        }

        @Override
        public boolean isReady() {
            if (reading && evictOnReady != null && !received.isEmpty()) {
                Runnable evict = evictOnReady;
                evictOnReady = null;
                evict.run();
            }
            return reading;
        }

        @Override
        public void onNext(LockEvent event) {
            received.add(event);
        }

        @Override
        public void onError(Throwable failure) {
            error = failure;
        }

        @Override
        public void onCompleted() {}

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public void setOnCancelHandler(Runnable handler) {}

        @Override
        public void setOnReadyHandler(Runnable handler) {
            onReady = handler;
        }

        @Override
        public void setCompression(String compression) {}

        @Override
        public void disableAutoInboundFlowControl() {}

        @Override
        public void request(int count) {}

        @Override
        public void setMessageCompression(boolean enable) {}
    }
}

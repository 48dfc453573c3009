package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.LockEvent.Kind;
import io.fencer.api.v1.WatchRequest;
import io.fencer.client.LockEvent;
import io.fencer.client.WatchListener;
import io.fencer.client.WatchPosition;
import io.fencer.core.FencerException;
import io.fencer.core.UnavailableException;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A watch whose streams two protocol peers fail DEADLINE_EXCEEDED or CANCELLED, as a proxy that cuts streams or a
 * peer shutting down does. The watch's backoff goes through recorded delays run at once, so the bounds are reached
 * in a moment and the delays asked for can be checked.
 */
class WatchStreamFailuresTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Far past every bound: a watch without one stops being served there, and the test says so. */
    private static final int STREAMS_SERVED_MAX = 64;

    private final FakeServer first = FakeServer.start();
    private final FakeServer second = FakeServer.start();
    private final Router router = new Router(List.of(first.endpoint(), second.endpoint()), SECONDS.toNanos(5),
            RetryBudget.SYSTEM);
    private final ExecutorService timer = Executors.newSingleThreadExecutor();
    /** The backoff of every resume, in order. */
    private final List<Long> delaysMillis = new CopyOnWriteArrayList<>();
    private final DefaultWatch.Delays delays = (delayMillis, task) -> {
        delaysMillis.add(delayMillis);
        if (delaysMillis.size() < STREAMS_SERVED_MAX) {
            timer.execute(task);
        }
    };
    private final List<LockEvent> events = new CopyOnWriteArrayList<>();
    private final CompletableFuture<FencerException> ended = new CompletableFuture<>();
    private final WatchListener listener = new WatchListener() {
        @Override
        public void onEvent(LockEvent event) {
            events.add(event);
        }

        @Override
        public void onEnded(FencerException error) {
            ended.complete(error);
        }
    };
    /** The streams asked of either peer, counted together. */
    private final AtomicInteger streams = new AtomicInteger();

    @AfterEach
    void tearDown() {
        router.close();
        timer.shutdownNow();
        first.close();
        second.close();
    }

    private void serveOnBoth(BiConsumer<WatchRequest, StreamObserver<io.fencer.api.v1.LockEvent>> onWatch) {
        BiConsumer<WatchRequest, StreamObserver<io.fencer.api.v1.LockEvent>> counted = (request, out) -> {
            streams.incrementAndGet();
            onWatch.accept(request, out);
        };
        first.locks.onWatch = counted;
        second.locks.onWatch = counted;
    }

    private DefaultWatch watch() {
        DefaultWatch watch = new DefaultWatch(router, "jobs/", WatchPosition.NOW, listener, gone -> { }, delays);
        watch.connect();
        return watch;
    }

    /** Waits for the watch's end, or for it to run past every bound (then it has none). */
    private FencerException awaitEnd() {
        await().atMost(WAIT).until(() -> ended.isDone() || delaysMillis.size() >= STREAMS_SERVED_MAX);
        assertThat(ended).as("the watch's end; streams asked so far: " + streams.get()).isDone();
        return ended.join();
    }

    private static io.fencer.api.v1.LockEvent event(long revision, int ordinal, Kind kind) {
        io.fencer.api.v1.LockEvent.Builder event = io.fencer.api.v1.LockEvent.newBuilder().setRevision(revision)
                .setOrdinal(ordinal).setKind(kind);
        return kind == Kind.KIND_START ? event.build()
                : event.setLock("jobs/nightly").setToken(FakeLocks.token("jobs/nightly", 7)).setSessionId(3).build();
    }

    @Test
    void watch_streamsFailDeadlineExceededOnEveryPeer_movesOnAndEndsAfterTheBound() {
        serveOnBoth((request, out) -> out.onError(Status.DEADLINE_EXCEEDED
                .withDescription("the stream was cut by a proxy").asRuntimeException()));

        try (DefaultWatch watch = watch()) {
            FencerException error = awaitEnd();

            assertThat(error).isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("watch of 'jobs/' cannot resume from 0:0: 16 streams in a row failed")
                    .hasMessageContaining(first.endpoint()).hasMessageContaining(second.endpoint())
                    .hasMessageContaining("the stream was cut by a proxy");
            assertThat(streams).hasValue(DefaultWatch.FAILED_STREAMS_MAX);
            // three on a peer, then the next: 1-3, 7-9 and 13-15 on the first, 4-6, 10-12 and 16 on the second
            assertThat(first.locks.watches).hasSize(9);
            assertThat(second.locks.watches).hasSize(7);
            assertThat(delaysMillis).as("exponential, capped at 2 s").containsExactly(50L, 100L, 200L, 400L, 800L,
                    1_600L, 2_000L, 2_000L, 2_000L, 2_000L, 2_000L, 2_000L, 2_000L, 2_000L, 2_000L);
            assertThat(router.current()).as("a watch's failures do not move the calls").isEqualTo(first.endpoint());
        }
    }

    @Test
    void watch_streamAcceptedBetweenFailures_countsItsFailuresAgainFromThere() {
        int acceptedStream = 10;
        serveOnBoth((request, out) -> {
            if (streams.get() == acceptedStream) { // a peer serves one stream, then it is cut too
                out.onNext(event(10, 0, Kind.KIND_START));
                out.onNext(event(10, 0, Kind.KIND_GRANTED));
            }
            out.onError(Status.CANCELLED.withDescription("the peer is shutting down").asRuntimeException());
        });

        try (DefaultWatch watch = watch()) {
            FencerException error = awaitEnd();

            assertThat(error).isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("cannot resume from 10:1: 16 streams in a row failed");
            assertThat(streams).as("the accepted stream's own failure is the first of the 16 after it")
                    .hasValue(acceptedStream - 1 + DefaultWatch.FAILED_STREAMS_MAX);
            assertThat(delaysMillis.get(acceptedStream - 1)).as("the backoff starts over too").isEqualTo(50L);
            assertThat(events).extracting(LockEvent::kind).containsExactly(LockEvent.Kind.GRANTED);
            assertThat(first.locks.watches.get(first.locks.watches.size() - 1).getFromRevision()).isEqualTo(10);
        }
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.LockEvent.Kind;
import io.fencer.api.v1.WatchRequest;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LockEvent;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A watch resumed on peers that refuse it. Two protocol peers: one serves the events (revision 10 and 11) and breaks
 * its first stream after the first event, which moves the watch to the other; that one lags, its applied revision
 * before the position the first named, and refuses the resume as a server does ({@code from_revision} in the future).
 */
class WatchResumeTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final FakeServer serving = FakeServer.start();
    private final FakeServer lagging = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(serving.endpoint(), lagging.endpoint())
            .callTimeout(Duration.ofSeconds(5)).build();
    private final List<LockEvent> events = new CopyOnWriteArrayList<>();
    private final CompletableFuture<LockEvent> released = new CompletableFuture<>();
    private final CompletableFuture<FencerException> ended = new CompletableFuture<>();
    private final WatchListener listener = new WatchListener() {
        @Override
        public void onEvent(LockEvent event) {
            events.add(event);
            if (event.kind() == LockEvent.Kind.RELEASED) {
                released.complete(event);
            }
        }

        @Override
        public void onEnded(FencerException error) {
            ended.complete(error);
        }
    };

    @AfterEach
    void tearDown() {
        client.close();
        serving.close();
        lagging.close();
    }

    /** Serves the log's events from the position asked; the first stream breaks after its first event. */
    private void serveEvents(AtomicBoolean breakFirst) {
        serving.locks.onWatch = (request, out) -> {
            long fromRevision = request.getFromRevision() == 0 ? 10 : request.getFromRevision();
            int fromOrdinal = request.getFromRevision() == 0 ? 0 : request.getFromOrdinal();
            out.onNext(event(fromRevision, fromOrdinal, Kind.KIND_START));
            if (fromRevision <= 10 && fromOrdinal == 0) {
                out.onNext(event(10, 0, Kind.KIND_GRANTED));
            }
            if (breakFirst.getAndSet(false)) {
                out.onError(FakeLocks.plainUnavailable());
                return;
            }
            out.onNext(event(11, 0, Kind.KIND_RELEASED)); // the stream stays open, as a server's does
        };
    }

    private static void refuseAsLagging(FakeLocks peer) {
        peer.onWatch = WatchResumeTest::refuseAsLagging;
    }

    /** Refuses a resume as a server that has applied only revision 9 does. */
    private static void refuseAsLagging(WatchRequest request, StreamObserver<io.fencer.api.v1.LockEvent> out) {
        String revision = Long.toUnsignedString(request.getFromRevision());
        out.onError(WireErrors.toStatusException(new InvalidArgumentException("from_revision", revision,
                "from_revision " + revision + " is in the future: this peer has applied up to revision 9, so a Watch"
                + " can start at 10 at the latest")));
    }

    private static io.fencer.api.v1.LockEvent event(long revision, int ordinal, Kind kind) {
        io.fencer.api.v1.LockEvent.Builder event = io.fencer.api.v1.LockEvent.newBuilder().setRevision(revision)
                .setOrdinal(ordinal).setKind(kind);
        return kind == Kind.KIND_START ? event.build()
                : event.setLock("jobs/nightly").setToken(FakeLocks.token("jobs/nightly", 7)).setSessionId(3).build();
    }

    @Test
    void watch_resumedOnAPeerThatLags_movesToAPeerThatServesIt() {
        serveEvents(new AtomicBoolean(true));
        refuseAsLagging(lagging.locks);

        try (Watch watch = client.watch("jobs/", listener)) {
            assertThat(released).as(() -> "the event after the break; the lagging peer was asked "
                    + lagging.locks.watches.size() + " times, the serving one " + serving.locks.watches.size())
                    .succeedsWithin(WAIT);

            assertThat(released.join().position().revision()).isEqualTo(11);
            assertThat(events).extracting(LockEvent::kind)
                    .containsExactly(LockEvent.Kind.GRANTED, LockEvent.Kind.RELEASED);
            assertThat(lagging.locks.watches).as("the lagging peer was asked, and refused").isNotEmpty()
                    .allSatisfy(request -> assertThat(request.getFromRevision()).isEqualTo(10));
            assertThat(ended).isNotDone();
        }
    }

    @Test
    void watch_everyPeerLags_endsUnavailableNamingThePositionAndTheRefusal() {
        refuseAsLagging(lagging.locks);
        serving.locks.onWatch = (request, out) -> {
            if (serving.locks.watches.size() > 1) {
                refuseAsLagging(request, out); // restored from an older backup: it lags too, for good
                return;
            }
            out.onNext(event(10, 0, Kind.KIND_START));
            out.onNext(event(10, 0, Kind.KIND_GRANTED));
            out.onError(FakeLocks.plainUnavailable());
        };

        try (Watch watch = client.watch("jobs/", listener)) {
            assertThat(ended).as(() -> "the watch's end; resumes refused so far: "
                    + (serving.locks.watches.size() - 1 + lagging.locks.watches.size())).succeedsWithin(WAIT);
            FencerException error = ended.join();

            assertThat(error).isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("watch of 'jobs/' cannot resume from 10:1")
                    .hasMessageContaining(serving.endpoint()).hasMessageContaining(lagging.endpoint())
                    .hasMessageContaining("from_revision 10 is in the future");
            assertThat(error.getCause()).isInstanceOf(InvalidArgumentException.class);
            assertThat(serving.locks.watches.size() - 1 + lagging.locks.watches.size())
                    .as("the resumes refused before the watch ended").isEqualTo(DefaultWatch.REFUSED_RESUMES_MAX);
            assertThat(events).extracting(LockEvent::kind).containsExactly(LockEvent.Kind.GRANTED);
        }
    }
}

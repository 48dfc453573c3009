package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LeaderElection;
import io.fencer.client.Leadership;
import io.fencer.client.LockEvent;
import io.fencer.client.Session;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.client.WatchPosition;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.RevisionOutOfRangeException;
import io.fencer.server.watch.WatchLimits;
import io.fencer.testing.FencerTestCluster;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java client's watch and {@link LeaderElection#observe} against a real server over real gRPC. */
class WatchClientTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerTestServer server;
    private FencerClient client;

    private void startServer(WatchLimits limits) {
        server = FencerTestServer.builder(dataDir).config(config -> config.withWatchLimits(limits)).start();
    }

    private void connect() {
        client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(20)).build();
    }

    @AfterEach
    void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void watch_grantsAndReleases_deliveredOnceInLogOrder() throws Exception {
        startServer(WatchLimits.DEFAULT);
        connect();
        Recording recording = new Recording();
        try (Watch watch = client.watch("jobs/", recording);
                Session session = client.openSession(TTL)) {
            await().atMost(WAIT_MAX).until(() -> watch.position().revision() > 0); // the stream started
            FencingToken first;
            try (Grant grant = session.lock("jobs/nightly").acquire(WAIT_MAX)) {
                first = grant.token();
            }
            session.lock("other").tryAcquire();
            FencingToken second = session.lock("jobs/nightly").tryAcquire().orElseThrow().token();

            await().atMost(WAIT_MAX).until(() -> recording.events.size() == 3);
            assertThat(recording.events).extracting(LockEvent::kind, LockEvent::token).containsExactly(
                    org.assertj.core.groups.Tuple.tuple(LockEvent.Kind.GRANTED, first),
                    org.assertj.core.groups.Tuple.tuple(LockEvent.Kind.RELEASED, first),
                    org.assertj.core.groups.Tuple.tuple(LockEvent.Kind.GRANTED, second));
            assertThat(recording.events.get(1).endCause()).isEqualTo("RELEASED");
            assertThat(watch.position()).isEqualTo(recording.events.get(2).position().next());
        }
    }

    /**
     * The peer serving a watch dies: the client resumes on another peer from the position after its last event and
     * misses nothing, repeats nothing. Every peer keeps its own history of what it applied, so the resume finds the
     * events in between there. The control is the kill: the events after it can only come on a new stream.
     */
    @Test
    void watch_servingPeerKilled_resumesOnAnotherPeerWithoutMissingOrRepeatingAnEvent() throws Exception {
        try (FencerTestCluster cluster = FencerTestCluster.start(dataDir, 3)) {
            client = Fencer.newBuilder().endpoints(cluster.endpoints().split(",")).callTimeout(Duration.ofSeconds(30))
                    .build();
            Recording recording = new Recording();
            Watch watch = client.watch("", recording); // on the first endpoint: n1, leader or not
            await().atMost(Duration.ofSeconds(60)).until(() -> watch.position().revision() > 0);
            List<FencingToken> expected = new ArrayList<>();
            try (Session session = client.openSession(TTL)) {
                expected.add(session.lock("before").tryAcquire().orElseThrow().token());
                await().atMost(WAIT_MAX).until(() -> recording.events.size() == 1);

                cluster.stop(0); // n1
                for (int i = 0; i < 3; i++) {
                    expected.add(session.lock("after-" + i).tryAcquire().orElseThrow().token());
                }

                await().atMost(Duration.ofSeconds(60)).until(() -> recording.events.size() >= expected.size());
                assertThat(recording.events).extracting(LockEvent::token).containsExactlyElementsOf(expected);
                assertThat(recording.ended).isNull();
            }
            watch.close();
        } finally {
            client.close();
            client = null;
        }
    }

    /**
     * A single server restarted: it snapshots its state when it stops, so its history starts after that snapshot
     * and a watch from before it ends OUT_OF_RANGE, naming the oldest revision kept: the watcher re-reads.
     */
    @Test
    void watch_singleServerRestartedFromItsSnapshot_endsOutOfRangeNamingTheOldestKept() throws Exception {
        startServer(WatchLimits.DEFAULT);
        connect();
        Recording recording = new Recording();
        Watch watch = client.watch("", recording);
        await().atMost(WAIT_MAX).until(() -> watch.position().revision() > 0);
        Session before = client.openSession(TTL);
        before.lock("a").tryAcquire().orElseThrow();
        await().atMost(WAIT_MAX).until(() -> recording.events.size() == 1);
        WatchPosition last = recording.events.get(0).position();

        server.restart();

        FencerException ended = recording.endedFuture.get(30, TimeUnit.SECONDS);
        assertThat(ended).isInstanceOf(RevisionOutOfRangeException.class);
        assertThat(((RevisionOutOfRangeException) ended).requestedRevision()).isEqualTo(last.revision());
        assertThat(((RevisionOutOfRangeException) ended).oldestRevision()).isGreaterThan(last.revision());
        assertThat(recording.events).hasSize(1);
    }

    @Test
    void watch_fromAPositionTheHistoryDropped_endsWithOutOfRangeNamingTheOldestKept() throws Exception {
        startServer(new WatchLimits(10, 2));
        connect();
        try (Session session = client.openSession(TTL)) {
            for (int i = 0; i < 3; i++) {
                session.lock("a").acquire(WAIT_MAX).close(); // six events, two kept
            }
        }
        Recording recording = new Recording();

        client.watch("", new WatchPosition(1, 0), recording);

        FencerException ended = recording.endedFuture.get(20, TimeUnit.SECONDS);
        assertThat(ended).isInstanceOf(RevisionOutOfRangeException.class);
        RevisionOutOfRangeException outOfRange = (RevisionOutOfRangeException) ended;
        assertThat(outOfRange.requestedRevision()).isEqualTo(1);
        assertThat(outOfRange.oldestRevision()).isGreaterThan(1);
        assertThat(recording.events).isEmpty();
    }

    @Test
    void observe_leaderChanges_reportsTheCurrentLeaderThenEachChange() throws Exception {
        startServer(WatchLimits.DEFAULT);
        connect();
        try (Session first = client.openSession(TTL); Session second = client.openSession(TTL)) {
            LeaderElection election = first.election("scheduler");
            Leadership firstTerm = election.tryCampaign().orElseThrow();
            List<Optional<FencingToken>> seen = new CopyOnWriteArrayList<>();

            try (Watch observing = second.election("scheduler").observe(seen::add)) {
                assertThat(seen).as("the current leader, at once").containsExactly(Optional.of(firstTerm.token()));
                firstTerm.close();
                Leadership secondTerm = second.election("scheduler").campaign(WAIT_MAX);

                await().atMost(WAIT_MAX).until(() -> seen.size() == 3);
                assertThat(seen).containsExactly(Optional.of(firstTerm.token()), Optional.empty(),
                        Optional.of(secondTerm.token()));
                assertThat(secondTerm.epoch()).isGreaterThan(firstTerm.epoch());
            }
        }
    }

    /** Records what a watch delivers. */
    private static final class Recording implements WatchListener {
        final List<LockEvent> events = new CopyOnWriteArrayList<>();
        final CompletableFuture<FencerException> endedFuture = new CompletableFuture<>();
        volatile FencerException ended;

        @Override
        public void onEvent(LockEvent event) {
            events.add(event);
        }

        @Override
        public void onEnded(FencerException error) {
            ended = error;
            endedFuture.complete(error);
        }
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The local lease that fails closed, driven by a manual ticker against a protocol peer: it counts from the send time
 * of the last acknowledged keepalive less the drift margin, jeopardy comes before the loss, and the loss comes no
 * later than the local lease end.
 */
class SessionLeaseTest {
    private static final Duration TTL = Duration.ofSeconds(3); // keepalive interval: 1 s of ticker time
    /** The drift margin of a 3 s ttl: 1% (30 ms) + 5 ms. */
    private static final Duration DRIFT_MARGIN = Duration.ofMillis(35);
    private static final Duration LOCAL_LEASE = TTL.minus(DRIFT_MARGIN);
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private final List<String> events = new CopyOnWriteArrayList<>();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        server.close();
    }

    private Session open(FakeLocks.KeepAliveMode mode) {
        server.locks.keepAliveMode = mode;
        client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).callTimeout(Duration.ofSeconds(5))
                .build();
        Session session = client.openSession(TTL); // at ticker time 0
        session.jeopardy().thenRun(() -> events.add("jeopardy"));
        session.lost().thenRun(() -> events.add("lost"));
        return session;
    }

    private KeepAliver keepAliver() {
        return ((DefaultFencerClient) client).keepAliver();
    }

    private long leaseStartNanos(Session session) {
        // Counted from the ticker's first reading, so that the tests' instants read as durations since the start.
        OptionalLong start = keepAliver().leaseStartNanos(session.id());
        return start.isPresent() ? start.getAsLong() - ManualTicker.START_NANOS : -1;
    }

    /** Waits until two more ticks have completed, so at least one judged the ticker's current reading. */
    private void awaitTicks() {
        long seen = keepAliver().ticksRun();
        await().atMost(PATIENCE).until(() -> keepAliver().ticksRun() >= seen + 2);
    }

    @Test
    void leaseRemaining_answerArrivesLate_countsFromTheSendTimeLessTheDriftMargin() {
        Session session = open(FakeLocks.KeepAliveMode.HOLD);
        assertThat(session.leaseRemaining()).isEqualTo(LOCAL_LEASE);

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> server.locks.keepAlives.size() == 1); // sent at 1 s
        ticker.set(Duration.ofMillis(1_600)); // answered 600 ms after the send
        assertThat(server.locks.answerHeldKeepAlives()).isEqualTo(1);
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofSeconds(1).toNanos());

        // From the receipt it would be the whole local lease again (2965 ms); from the send, 600 ms less.
        assertThat(session.leaseRemaining()).isEqualTo(Duration.ofSeconds(1).plus(LOCAL_LEASE)
                .minus(Duration.ofMillis(1_600))).isEqualTo(Duration.ofMillis(2_365));
        assertThat(session.isAlive()).isTrue();
    }

    @Test
    void jeopardy_keepAlivesUnanswered_completesWithTheLeaseLeftBeforeLost() {
        Session session = open(FakeLocks.KeepAliveMode.SILENT);
        CompletableFuture<Duration> jeopardy = session.jeopardy().toCompletableFuture();

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> !server.locks.keepAlives.isEmpty());
        ticker.set(Duration.ofMillis(1_999));
        awaitTicks();
        assertThat(jeopardy).as("one interval unanswered is no jeopardy yet").isNotDone();

        ticker.set(Duration.ofMillis(2_000)); // two intervals since the lease's start (the open): the send at 1 s
        await().atMost(PATIENCE).until(jeopardy::isDone);

        assertThat(jeopardy.join()).isEqualTo(LOCAL_LEASE.minus(Duration.ofMillis(2_000)))
                .isEqualTo(Duration.ofMillis(965));
        assertThat(session.isAlive()).isTrue();
        assertThat(session.lost().toCompletableFuture()).isNotDone();
        assertThat(session.jeopardy().toCompletableFuture()).as("the episode goes on").isDone();
        assertThat(events).containsExactly("jeopardy");
    }

    @Test
    void lost_keepAlivesUnanswered_completesBeforeTheLocalLeaseEnds() {
        Session session = open(FakeLocks.KeepAliveMode.SILENT);
        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> !server.locks.keepAlives.isEmpty());
        ticker.set(Duration.ofMillis(2_500));
        await().atMost(PATIENCE).until(() -> events.contains("jeopardy"));

        // The tick a tick (25 ms) before the local end is the last one sure to come before it.
        ticker.set(LOCAL_LEASE.minus(Duration.ofMillis(KeepAliver.TICK_MILLIS + 1)));
        awaitTicks();
        assertThat(session.lost().toCompletableFuture()).isNotDone();
        ticker.set(LOCAL_LEASE.minus(Duration.ofMillis(KeepAliver.TICK_MILLIS)));

        await().atMost(PATIENCE).until(() -> session.lost().toCompletableFuture().isDone());
        SessionLoss loss = session.lost().toCompletableFuture().join();
        assertThat(loss.cause()).isEqualTo(SessionLoss.Cause.UNREACHABLE);
        assertThat(loss.detail()).contains("ttl of 3000 ms less 35 ms for clock drift");
        assertThat(session.leaseRemaining()).isZero();
        assertThat(events).containsExactly("jeopardy", "lost");
    }

    @Test
    void leaseRemaining_atTheLocalLeaseEnd_isZeroAndLosesTheSessionAtOnce() {
        Session session = open(FakeLocks.KeepAliveMode.SILENT);

        ticker.set(LOCAL_LEASE); // e.g. the process was paused past the end: no tick had a chance to judge

        assertThat(session.leaseRemaining()).isZero();
        assertThat(session.isAlive()).isFalse();
        assertThat(((DefaultSession) session).knownLoss().cause()).isEqualTo(SessionLoss.Cause.UNREACHABLE);
        await().atMost(PATIENCE).until(() -> events.size() == 2);
        assertThat(events).as("jeopardy is never later than lost").containsExactly("jeopardy", "lost");
        assertThat(session.jeopardy().toCompletableFuture().join()).isZero();
    }

    @Test
    void jeopardy_acknowledgedAgain_endsTheEpisodeAndTheNextStageWaits() {
        Session session = open(FakeLocks.KeepAliveMode.HOLD);
        CompletableFuture<Duration> first = session.jeopardy().toCompletableFuture();
        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> server.locks.keepAlives.size() == 1);
        ticker.set(Duration.ofSeconds(2)); // jeopardy; the stalled stream is replaced and the keepalive sent again
        await().atMost(PATIENCE).until(() -> first.isDone() && server.locks.keepAlives.size() == 2);

        server.locks.answerHeldKeepAlives(); // the old stream's answer is ignored, the new one's counts
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofSeconds(2).toNanos());

        assertThat(first.join()).isEqualTo(Duration.ofMillis(965));
        assertThat(session.jeopardy().toCompletableFuture()).as("a new episode has not begun").isNotDone();
        assertThat(session.leaseRemaining()).isEqualTo(LOCAL_LEASE);
        assertThat(session.isAlive()).isTrue();
    }

    @Test
    void jeopardy_serviceSaysExpired_completesWithZeroBeforeLost() {
        Session session = open(FakeLocks.KeepAliveMode.EXPIRE);

        ticker.set(Duration.ofSeconds(1));

        await().atMost(PATIENCE).until(() -> events.size() == 2);
        assertThat(events).containsExactly("jeopardy", "lost");
        assertThat(session.jeopardy().toCompletableFuture().join()).isZero();
        assertThat(session.lost().toCompletableFuture().join().cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
        assertThat(session.leaseRemaining()).isZero();
    }

    @Test
    void jeopardy_sessionClosed_completesWithZero() {
        Session session = open(FakeLocks.KeepAliveMode.ACK);

        session.close();

        assertThat(session.jeopardy().toCompletableFuture().join()).isZero();
        assertThat(session.leaseRemaining()).isZero();
    }
}

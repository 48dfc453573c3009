package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SessionKeepAliveTest {
    private static final Duration TTL = Duration.ofSeconds(3); // keepalive interval: 1 s of ticker time
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private final FakeServer other = FakeServer.start();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        server.close();
        other.close();
    }

    private FencerClient connect(String... endpoints) {
        client = Fencer.newBuilder().endpoints(endpoints).ticker(ticker).callTimeout(Duration.ofSeconds(5)).build();
        return client;
    }

    private long leaseStartNanos(Session session) {
        // Counted from the ticker's first reading, so that the tests' instants read as durations since the start.
        OptionalLong start = ((DefaultFencerClient) client).keepAliver().leaseStartNanos(session.id());
        return start.isPresent() ? start.getAsLong() - ManualTicker.START_NANOS : -1;
    }

    private static SessionLoss endOf(Session session) {
        await().atMost(PATIENCE).until(() -> session.ended().toCompletableFuture().isDone());
        return session.ended().toCompletableFuture().join();
    }

    private static SessionLoss lossOf(Session session) {
        await().atMost(PATIENCE).until(() -> session.lost().toCompletableFuture().isDone());
        return session.lost().toCompletableFuture().join();
    }

    @Test
    void keepAlive_answeredExpired_losesTheSessionAsExpired() {
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;
        Session session = connect(server.endpoint()).openSession(TTL);

        ticker.set(Duration.ofSeconds(1));

        SessionLoss loss = lossOf(session);
        assertThat(loss.cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
        assertThat(loss.sessionId()).isEqualTo(session.id());
        assertThat(session.isAlive()).isFalse();
        assertThat(server.locks.keepAlives).isNotEmpty()
                .allSatisfy(request -> assertThat(request.getSessionId()).isEqualTo(session.id()));
    }

    @Test
    void keepAlive_noAcknowledgementForTtl_losesTheSessionAsUnreachable() {
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.SILENT;
        Session session = connect(server.endpoint()).openSession(TTL);

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> !server.locks.keepAlives.isEmpty());
        ticker.set(Duration.ofMillis(2_900));
        await().atMost(PATIENCE).until(() -> server.locks.keepAlives.size() >= 2);
        assertThat(session.isAlive()).isTrue();
        ticker.set(TTL);

        SessionLoss loss = lossOf(session);
        assertThat(loss.cause()).isEqualTo(SessionLoss.Cause.UNREACHABLE);
        assertThat(loss.detail()).contains("ttl of 3000 ms");
    }

    @Test
    void keepAlive_acknowledged_extendsTheLeaseFromTheSendTime() {
        Session session = connect(server.endpoint()).openSession(TTL);

        for (int second = 1; second <= 6; second++) {
            long now = Duration.ofSeconds(second).toNanos();
            ticker.set(Duration.ofSeconds(second));
            await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == now);
        }

        assertThat(session.isAlive()).isTrue(); // twice the ttl after opening, alive through acknowledgements
        assertThat(server.locks.keepAlives).hasSizeGreaterThanOrEqualTo(6);
        assertThat(server.locks.count("KeepAlive")).isEqualTo(1); // one stream, shared
    }

    @Test
    void keepAlive_manySessions_shareOneStream() {
        connect(server.endpoint());
        Session first = client.openSession(TTL);
        Session second = client.openSession(TTL);

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> leaseStartNanos(first) > 0 && leaseStartNanos(second) > 0);

        assertThat(server.locks.count("KeepAlive")).isEqualTo(1);
        assertThat(server.locks.keepAlives).extracting(request -> request.getSessionId())
                .contains(first.id(), second.id());
    }

    @Test
    void keepAlive_streamFailsNotLeader_reopensOnTheNewLeaderAndKeepsTheSession() {
        Session session = connect(server.endpoint()).openSession(TTL);
        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofSeconds(1).toNanos());

        server.locks.failEverything = FakeLocks.notLeader(other.endpoint());
        server.locks.failKeepAliveStreams(FakeLocks.notLeader(other.endpoint()));
        await().atMost(PATIENCE).until(() -> !other.locks.keepAlives.isEmpty());
        ticker.set(Duration.ofMillis(3_500)); // past the ttl from the open, within it from the last acknowledgement
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofMillis(3_500).toNanos());

        assertThat(session.isAlive()).isTrue();
        assertThat(other.locks.keepAlives).allSatisfy(r -> assertThat(r.getSessionId()).isEqualTo(session.id()));
        assertThat(((DefaultFencerClient) client).router().current()).isEqualTo(other.endpoint());
    }

    @Test
    void keepAlive_leaderStopsAnswering_movesToTheNextEndpointBeforeTheTtl() {
        Session session = connect(server.endpoint(), other.endpoint()).openSession(TTL);
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.SILENT; // paused: no error, no answer

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> !server.locks.keepAlives.isEmpty());
        ticker.set(Duration.ofSeconds(2));
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofSeconds(2).toNanos());
        ticker.set(Duration.ofMillis(4_500));
        await().atMost(PATIENCE).until(() -> leaseStartNanos(session) == Duration.ofMillis(4_500).toNanos());

        assertThat(session.isAlive()).isTrue();
        assertThat(other.locks.keepAlives).isNotEmpty();
    }

    @Test
    void lost_listeners_runOffTheKeepAliveThread() {
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;
        Session session = connect(server.endpoint()).openSession(TTL);
        CompletableFuture<String> listenerThread = session.lost()
                .thenApply(loss -> Thread.currentThread().getName()).toCompletableFuture();

        ticker.set(Duration.ofSeconds(1));

        await().atMost(PATIENCE).until(listenerThread::isDone);
        assertThat(listenerThread.join()).startsWith("fencer-events").isNotEqualTo("fencer-keepalive");
    }

    @Test
    void lost_completedByCaller_doesNotChangeTheSession() {
        Session session = connect(server.endpoint()).openSession(TTL);

        session.lost().toCompletableFuture().complete(new SessionLoss(session.id(), SessionLoss.Cause.EXPIRED, "x"));

        assertThat(session.isAlive()).isTrue();
        assertThat(session.lost().toCompletableFuture().isDone()).isFalse();
    }

    @Test
    void close_calledTwice_closesOnTheServiceOnceAndEndsAsClosedWithoutALoss() {
        Session session = connect(server.endpoint()).openSession(TTL);

        session.close();
        session.close();

        assertThat(server.locks.closeSessions).singleElement()
                .satisfies(request -> assertThat(request.getSessionId()).isEqualTo(session.id()));
        assertThat(session.isAlive()).isFalse();
        assertThat(endOf(session).cause()).isEqualTo(SessionLoss.Cause.CLOSED);
        assertThat(session.jeopardy().toCompletableFuture()).isCompletedWithValue(Duration.ZERO);
        assertThat(session.lost().toCompletableFuture()).as("a close is not a loss").isNotDone();
        assertThat(((DefaultFencerClient) client).keepAliver().leaseStartNanos(session.id())).isEmpty();
    }

    @Test
    void close_afterExpired_keepsTheFirstCauseAndDoesNotCall() {
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;
        Session session = connect(server.endpoint()).openSession(TTL);
        ticker.set(Duration.ofSeconds(1));
        lossOf(session);

        session.close();

        assertThat(lossOf(session).cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
        assertThat(endOf(session).cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
        assertThat(server.locks.closeSessions).isEmpty();
    }

    @Test
    void clientClose_closesItsSessions() {
        connect(server.endpoint());
        Session first = client.openSession(TTL);
        Session second = client.openSession(TTL);

        client.close();

        assertThat(server.locks.closeSessions).extracting(request -> request.getSessionId())
                .containsExactlyInAnyOrder(first.id(), second.id());
        assertThat(endOf(first).cause()).isEqualTo(SessionLoss.Cause.CLOSED);
        assertThat(endOf(second).cause()).isEqualTo(SessionLoss.Cause.CLOSED);
        assertThat(first.lost().toCompletableFuture()).as("a close is not a loss").isNotDone();
    }

    @Test
    void openSession_ttlOutOfRange_throwsInvalidArgumentBeforeCalling() {
        connect(server.endpoint());

        assertThatThrownBy(() -> client.openSession(Duration.ofMillis(999)))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("999");
        assertThatThrownBy(() -> client.openSession(Duration.ofHours(2)))
                .isInstanceOf(InvalidArgumentException.class);
        assertThat(server.locks.openSessions).isEmpty();
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.ManualTicker;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The client keeps each session's secret to itself and sends it with every call made for the session. */
class SessionSecretTest {
    private static final Duration TTL = Duration.ofSeconds(3); // keepalive interval: 1 s of ticker time
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker)
            .callTimeout(Duration.ofSeconds(5)).build();

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
    }

    @Test
    void everyCallForASession_carriesTheSecretTheServiceReturned() {
        Session session = client.openSession(TTL);
        String secret = FakeLocks.secretOf(session.id());

        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));
        grant.close();
        session.lock("jobs").tryAcquire().orElseThrow();
        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> !server.locks.keepAlives.isEmpty());
        session.close();

        assertThat(server.locks.acquires).hasSize(2).allSatisfy(request -> {
            assertThat(request.getSessionId()).isEqualTo(session.id());
            assertThat(request.getSessionSecret()).isEqualTo(secret);
        });
        assertThat(server.locks.releases).singleElement().satisfies(request -> {
            assertThat(request.getSessionId()).isEqualTo(session.id());
            assertThat(request.getSessionSecret()).isEqualTo(secret);
        });
        assertThat(server.locks.keepAlives).allSatisfy(request -> assertThat(request.getSessionSecret())
                .isEqualTo(secret));
        assertThat(server.locks.closeSessions).singleElement()
                .satisfies(request -> assertThat(request.getSessionSecret()).isEqualTo(secret));
    }

    @Test
    void toString_ofSessionLockAndGrant_showsNoSecret() {
        Session session = client.openSession(TTL);
        String secret = FakeLocks.secretOf(session.id());
        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));

        assertThat(session.toString()).contains(Long.toString(session.id())).doesNotContain(secret);
        assertThat(session.lock("orders").toString()).doesNotContain(secret);
        assertThat(grant.toString()).doesNotContain(secret);
        assertThat(client.toString()).doesNotContain(secret);
    }

    @Test
    void keepAlive_refusedAsUnauthenticated_losesTheSessionWithThatCause() {
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.REFUSE;
        Session session = client.openSession(TTL);

        ticker.set(Duration.ofSeconds(1));

        await().atMost(PATIENCE).until(() -> session.lost().toCompletableFuture().isDone());
        SessionLoss loss = session.lost().toCompletableFuture().join();
        assertThat(loss.cause()).isEqualTo(SessionLoss.Cause.UNAUTHENTICATED);
        assertThat(loss.sessionId()).isEqualTo(session.id());
        assertThat(loss.detail()).contains("refused the keepalive of session " + session.id(), "UNAUTHENTICATED")
                .doesNotContain(FakeLocks.secretOf(session.id()));
        assertThat(session.isAlive()).isFalse();
        assertThatThrownBy(() -> session.lock("orders").tryAcquire()).isInstanceOf(SessionExpiredException.class)
                .hasMessageContaining("UNAUTHENTICATED");
    }

    @Test
    void acquire_answeredSessionUnauthenticated_throwsItAndLosesTheSession() {
        Session session = client.openSession(TTL);
        server.locks.onAcquire = request -> {
            throw FakeLocks.unauthenticated(request.getSessionId());
        };

        assertThatThrownBy(() -> session.lock("orders").tryAcquire())
                .isInstanceOfSatisfying(SessionUnauthenticatedException.class,
                        e -> assertThat(e.sessionId()).isEqualTo(session.id()));

        assertThat(session.isAlive()).isFalse();
        assertThat(session.lost().toCompletableFuture().join().cause()).isEqualTo(SessionLoss.Cause.UNAUTHENTICATED);
        assertThat(server.locks.count("Acquire")).as("refused, not retried").isEqualTo(1);
    }

    @Test
    void openSession_retryTheServiceCannotAnswer_opensANewSessionWithANewRandomRequestId() {
        server.locks.failNext("OpenSession", FakeLocks.unauthenticated(99));

        Session session = client.openSession(TTL);

        assertThat(session.isAlive()).isTrue();
        assertThat(server.locks.openSessions).hasSize(2);
        String first = server.locks.openSessions.get(0).getRequestId();
        String second = server.locks.openSessions.get(1).getRequestId();
        assertThat(second).isNotEqualTo(first);
        // 128 random bits each, sharing nothing with the client's other request ids.
        assertThat(first).matches("[A-Za-z0-9_-]{22}");
        assertThat(second).matches("[A-Za-z0-9_-]{22}");
        session.lock("orders").tryAcquire().orElseThrow();
        assertThat(server.locks.acquires.get(0).getRequestId()).doesNotStartWith(first).doesNotStartWith(second);
    }

    @Test
    void openSession_sendsAFreshRandomRetryKeyPerOpen_andItsRetryTheSameOne() {
        server.locks.failNext("OpenSession", FakeLocks.plainUnavailable()); // the first open's answer is lost

        client.openSession(TTL);
        client.openSession(TTL);

        assertThat(server.locks.openSessions).hasSize(3);
        OpenSessionRequest first = server.locks.openSessions.get(0);
        OpenSessionRequest retry = server.locks.openSessions.get(1);
        OpenSessionRequest next = server.locks.openSessions.get(2);
        assertThat(first.getRetryKey().size()).as("256 random bits").isEqualTo(32);
        assertThat(retry.getRequestId()).isEqualTo(first.getRequestId());
        assertThat(retry.getRetryKey()).as("the retry presents the open's key").isEqualTo(first.getRetryKey());
        assertThat(next.getRetryKey()).as("another open draws another key").isNotEqualTo(first.getRetryKey());
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.ManualTicker;
import io.fencer.core.SessionExpiredException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An Acquire whose answer arrives after its session ended (the keepalives went unanswered past the local lease, or
 * the application closed it) hands out no grant: the lock may be someone else's by then, and the caller learns the
 * session's end instead, as {@link io.fencer.client.FencedLock#acquire} promises.
 */
class AcquireAfterLossTest {
    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private final CountDownLatch acquireArrived = new CountDownLatch(1);
    private final CountDownLatch answerAcquire = new CountDownLatch(1);
    private FencerClient client;

    @AfterEach
    void tearDown() {
        answerAcquire.countDown();
        if (client != null) {
            client.close();
        }
        server.close();
    }

    /** Opens a session whose Acquires the server answers, with a grant, only once the test lets it. */
    private Session openSessionWithHeldAcquires() {
        server.locks.onAcquire = request -> {
            acquireArrived.countDown();
            answerAcquire.await(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            return server.locks.grant(request);
        };
        client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).callTimeout(Duration.ofSeconds(5))
                .build();
        return client.openSession(TTL);
    }

    private static CompletableFuture<Grant> acquireAsync(Session session) {
        return CompletableFuture.supplyAsync(() -> session.lock("orders").acquire(Duration.ofSeconds(10)));
    }

    private static Throwable failureOf(CompletableFuture<Grant> acquire) {
        try {
            Grant grant = acquire.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            throw new AssertionError("the acquire handed out " + grant + " of a session that had ended");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void acquire_sessionLostUnreachableBeforeTheGrantArrives_throwsSessionExpiredAndReleasesIt() throws Exception {
        Session session = openSessionWithHeldAcquires();
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.SILENT;
        CompletableFuture<Grant> acquire = acquireAsync(session);
        assertThat(acquireArrived.await(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        ticker.set(TTL); // no keepalive acknowledged: the local lease ends
        await().atMost(PATIENCE).until(() -> session.lost().toCompletableFuture().isDone());
        assertThat(session.lost().toCompletableFuture().join().cause()).isEqualTo(SessionLoss.Cause.UNREACHABLE);
        answerAcquire.countDown();

        assertThat(failureOf(acquire)).isInstanceOf(SessionExpiredException.class).hasMessageContaining("UNREACHABLE");
        // The service may still hold the session, and with it the lock: the client gives the grant back.
        await().atMost(PATIENCE).until(() -> server.locks.releases.size() == 1);
        assertThat(server.locks.releases.get(0).getToken().getLock()).isEqualTo("orders");
    }

    @Test
    void acquire_sessionClosedBeforeTheGrantArrives_throwsSessionExpired() throws Exception {
        Session session = openSessionWithHeldAcquires();
        CompletableFuture<Grant> acquire = acquireAsync(session);
        assertThat(acquireArrived.await(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        session.close();
        answerAcquire.countDown();

        assertThat(failureOf(acquire)).isInstanceOf(SessionExpiredException.class).hasMessageContaining("closed");
    }
}

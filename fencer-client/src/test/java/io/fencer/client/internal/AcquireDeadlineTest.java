package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An acquire whose every answer comes after the client's deadline: the service granted the request, but dropped the
 * answers of the calls the client gave up on, so the session holds the lock with no grant handed to anyone, and every
 * other session waits for it until this one ends. The fake service holds each Acquire's answer until the test lets
 * it go, after the caller has failed, so the grant certainly lands late.
 */
class AcquireDeadlineTest {
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration SETTLE_MAX = Duration.ofSeconds(10);

    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(CALL_TIMEOUT)
            .build();
    private final CountDownLatch answer = new CountDownLatch(1);

    @AfterEach
    void tearDown() {
        answer.countDown();
        client.close();
        server.close();
    }

    @Test
    void acquire_answeredOnlyAfterItsDeadline_givesBackTheGrantAnsweredAfterwards() {
        Session session = client.openSession(Duration.ofSeconds(10));
        holdAcquireAnswers();

        assertThatThrownBy(() -> session.lock("orders").tryAcquire()).isInstanceOf(UnavailableException.class)
                .hasMessageContaining("may or may not have taken effect");
        answer.countDown(); // the service grants the request now: the client no longer waits for the answer

        await().atMost(SETTLE_MAX).until(() -> server.locks.releases.size() == 1);
        assertThat(server.locks.releases.get(0).getToken().getValue()).as("the grant given back").isEqualTo(1);
    }

    /** The holder acquiring again gets its grant back: a late answer with that grant leaves it with its holder. */
    @Test
    void acquire_answeredAfterItsDeadlineWhileItsSessionHoldsTheLock_leavesTheGrantHandedOutBefore() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant held = session.lock("orders").acquire(Duration.ZERO);
        holdAcquireAnswers();

        assertThatThrownBy(() -> session.lock("orders").tryAcquire()).isInstanceOf(UnavailableException.class);
        answer.countDown();

        await().atMost(SETTLE_MAX).until(() -> server.locks.grantsAnswered.size() >= 2); // the late answers
        await().during(Duration.ofSeconds(1)).atMost(SETTLE_MAX).until(() -> server.locks.releases.isEmpty());
        held.close();
        assertThat(server.locks.releases).singleElement()
                .satisfies(release -> assertThat(release.getToken().getValue()).isEqualTo(held.token().value()));
    }

    private void holdAcquireAnswers() {
        server.locks.onAcquire = request -> {
            answer.await();
            return server.locks.grant(request);
        };
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.grpc.Status;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FencedLockTest {
    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint())
            .callTimeout(Duration.ofSeconds(10)).build();

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
    }

    @Test
    void acquire_free_returnsGrantWithTheServersToken() {
        Session session = client.openSession(Duration.ofSeconds(10));

        try (Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5))) {
            assertThat(grant.token()).isEqualTo(new FencingToken("orders", 1));
            AcquireRequest sent = server.locks.acquires.get(0);
            assertThat(sent.getSessionId()).isEqualTo(session.id());
            assertThat(sent.getLock()).isEqualTo("orders");
            assertThat(sent.getWaitMillis()).isEqualTo(5_000);
            assertThat(sent.getRequestId()).isNotEmpty();
        }
        assertThat(server.locks.releases).singleElement()
                .satisfies(release -> assertThat(release.getToken().getValue()).isEqualTo(1));
    }

    @Test
    void acquire_notAcquiredWithinWait_throwsLockTimeout() {
        server.locks.onAcquire = request -> AcquireResponse.newBuilder().setAcquired(false)
                .setHolder(FakeLocks.token("orders", 3)).build();
        Session session = client.openSession(Duration.ofSeconds(10));

        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofMillis(250)))
                .isInstanceOf(LockTimeoutException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("250 ms");
        assertThat(server.locks.acquires.get(0).getWaitMillis()).isEqualTo(250);
    }

    @Test
    void tryAcquire_heldByAnother_returnsEmptyWithoutWaiting() {
        Session holder = client.openSession(Duration.ofSeconds(10));
        Session other = client.openSession(Duration.ofSeconds(10));
        Grant held = holder.lock("orders").tryAcquire().orElseThrow();

        Optional<Grant> attempt = other.lock("orders").tryAcquire();

        assertThat(attempt).isEmpty();
        assertThat(server.locks.acquires).hasSize(2)
                .allSatisfy(request -> assertThat(request.getWaitMillis()).isZero());
        assertThat(held.token().value()).isEqualTo(1);
    }

    @Test
    void acquire_retriedAfterTransportFailures_reusesTheSameRequestId() {
        server.locks.failNext("Acquire", FakeLocks.plainUnavailable());
        server.locks.failNext("Acquire", FakeLocks.notLeader(server.endpoint()));
        Session session = client.openSession(Duration.ofSeconds(10));

        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5));

        assertThat(grant.token().value()).isEqualTo(1);
        assertThat(server.locks.acquires).hasSize(3);
        assertThat(server.locks.acquires.stream().map(AcquireRequest::getRequestId).distinct()).hasSize(1);
    }

    @Test
    void acquire_twoLogicalCalls_useDistinctRequestIds() {
        Session session = client.openSession(Duration.ofSeconds(10));

        session.lock("a").tryAcquire();
        session.lock("b").tryAcquire();

        assertThat(server.locks.acquires.get(0).getRequestId())
                .isNotEqualTo(server.locks.acquires.get(1).getRequestId());
    }

    @Test
    void openSession_retried_reusesTheSameRequestId() {
        server.locks.failNext("OpenSession", FakeLocks.plainUnavailable());

        Session session = client.openSession(Duration.ofSeconds(10));

        assertThat(server.locks.openSessions).hasSize(2);
        assertThat(server.locks.openSessions.get(0).getRequestId())
                .isNotEmpty().isEqualTo(server.locks.openSessions.get(1).getRequestId());
        assertThat(server.locks.openSessions.get(0).getTtlMillis()).isEqualTo(10_000);
        assertThat(session.ttl()).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void acquire_transportFailsMidWait_retriesWithTheRemainingWait() {
        AtomicInteger attempts = new AtomicInteger();
        server.locks.onAcquire = request -> {
            if (attempts.incrementAndGet() == 1) {
                Thread.sleep(200); // the first attempt waits a while in the queue, then its connection drops
                throw FakeLocks.plainUnavailable();
            }
            return server.locks.grant(request);
        };
        Session session = client.openSession(Duration.ofSeconds(10));

        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5));

        assertThat(grant.token().value()).isEqualTo(1);
        assertThat(server.locks.acquires).hasSize(2);
        AcquireRequest first = server.locks.acquires.get(0);
        AcquireRequest retry = server.locks.acquires.get(1);
        assertThat(retry.getRequestId()).isEqualTo(first.getRequestId());
        assertThat(first.getWaitMillis()).isEqualTo(5_000);
        assertThat(retry.getWaitMillis()).isLessThanOrEqualTo(4_800).isPositive();
    }

    @Test
    void acquire_waitOutOfRange_throwsInvalidArgumentBeforeCalling() {
        Session session = client.openSession(Duration.ofSeconds(10));

        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofMillis(-1)))
                .isInstanceOf(InvalidArgumentException.class)
                .satisfies(e -> assertThat(((InvalidArgumentException) e).field()).isEqualTo("wait"));
        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofHours(1).plusMillis(1)))
                .isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("3600000");
        assertThat(server.locks.acquires).isEmpty();
    }

    @Test
    void lock_invalidName_throwsInvalidArgument() {
        Session session = client.openSession(Duration.ofSeconds(10));

        assertThatThrownBy(() -> session.lock("")).isInstanceOf(InvalidArgumentException.class);
        assertThatThrownBy(() -> session.lock("x".repeat(257))).isInstanceOf(InvalidArgumentException.class);
    }

    @Test
    void acquire_onClosedSession_throwsSessionExpiredWithoutCalling() {
        Session session = client.openSession(Duration.ofSeconds(10));
        session.close();

        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofSeconds(1)))
                .isInstanceOf(SessionExpiredException.class)
                .satisfies(e -> assertThat(((SessionExpiredException) e).sessionId()).isEqualTo(session.id()));
        assertThatThrownBy(() -> session.lock("orders").tryAcquire()).isInstanceOf(SessionExpiredException.class);
        assertThat(server.locks.acquires).isEmpty();
    }

    @Test
    void acquire_answeredSessionExpired_throwsAndLosesTheSession() {
        Session session = client.openSession(Duration.ofSeconds(10));
        server.locks.failNext("Acquire", FakeLocks.error(Status.Code.FAILED_PRECONDITION, ErrorDetail.newBuilder()
                .setReason(Reason.REASON_SESSION_EXPIRED).setSessionId(session.id())
                .setMessage("session " + session.id() + " has ended").build()));

        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofSeconds(1)))
                .isInstanceOf(SessionExpiredException.class);

        assertThat(session.isAlive()).isFalse();
        await().atMost(Duration.ofSeconds(10)).until(() -> session.lost().toCompletableFuture().isDone());
        assertThat(session.lost().toCompletableFuture().join().cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
    }

    @Test
    void grantClose_calledTwice_releasesOnce() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));

        grant.close();
        grant.close();

        assertThat(server.locks.releases).hasSize(1);
    }

    @Test
    void grantClose_answeredNotHolder_isNotAnError() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));
        server.locks.onRelease = request -> {
            throw FakeLocks.notHolder(request.getToken(), 2);
        };

        grant.close();

        assertThat(server.locks.releases).hasSize(1);
    }

    /**
     * Regression: a release whose first attempt released the lock and lost its answer was retried, refused NOT_HOLDER,
     * and reported to the caller as NotHolderException, whose contract is that nothing changed.
     */
    @Test
    void sessionRelease_firstAnswerLostAndRetryAnsweredNotHolder_returnsAsReleased() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));
        AtomicInteger attempts = new AtomicInteger();
        server.locks.onRelease = request -> {
            if (attempts.incrementAndGet() == 1) {
                server.locks.release(request);
                throw FakeLocks.plainUnavailable(); // applied, but the answer is lost
            }
            return server.locks.release(request); // NOT_HOLDER: the first attempt released it
        };

        session.release(grant.token());

        assertThat(attempts.get()).as("the release was retried").isEqualTo(2);
        assertThat(server.locks.releases).hasSize(2);
    }

    @Test
    void grantClose_afterSessionClosed_doesNotCall() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(1));
        session.close();

        grant.close();

        assertThat(server.locks.releases).isEmpty();
        assertThat(server.locks.closeSessions).hasSize(1);
    }

    @Test
    void release_byTokenNotHolder_throwsNotHolder() {
        Session session = client.openSession(Duration.ofSeconds(10));

        assertThatThrownBy(() -> session.release(new FencingToken("orders", 9)))
                .isInstanceOf(NotHolderException.class)
                .satisfies(e -> assertThat(((NotHolderException) e).presented()).isEqualTo(9));
    }

    @Test
    void acquire_sameSessionAgain_getsTheSameToken() {
        Session session = client.openSession(Duration.ofSeconds(10));

        Grant first = session.lock("orders").acquire(Duration.ofSeconds(1));
        Grant again = session.lock("orders").acquire(Duration.ofSeconds(1));

        assertThat(again.token()).isEqualTo(first.token());
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DurableMark;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.GrantLoss;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A grant answered before it was durable (AcquireResponse {@code pending_sequence}) is kept provisional until a durable
 * mark of its incarnation covers it; a mark of another incarnation first reports it lost ({@link
 * GrantLoss.Cause#NOT_DURABLE}) and gives the lock's place up: the token released, the lock tried once and what that
 * try is granted released.
 *
 * <p>The peer here is a scripted one ({@link FakeLocks}) standing in for a one-peer server that answers a waiting
 * Acquire early and then restarts (a new incarnation) before the release that granted it was durable: the restored
 * state has the session holding the lock under a later token, which the scripted try-Acquire answers. It checks the
 * client's side of the protocol only; the server's side and a real restart are tested with the server.
 */
class GrantNotDurableTest {
    private static final Duration TTL = Duration.ofSeconds(3); // keepalive interval: 1 s of ticker time
    private static final Duration PATIENCE = Duration.ofSeconds(20);
    private static final long PENDING_SEQUENCE = 5;
    /** The token the restored state granted the session once the old holder's re-sent release applied. */
    private static final long RESTORED_TOKEN = 7;

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private FencerClient client;
    private long keepAliveSeconds;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        server.close();
    }

    private Session openSession() {
        client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).callTimeout(Duration.ofSeconds(5))
                .build();
        return client.openSession(TTL);
    }

    /** Grants as the fake does; a request that asks for it is answered before durable at {@code sequence}. */
    private void answerEarlyAt(long sequence) {
        server.locks.onAcquire = request -> {
            AcquireResponse granted = server.locks.grant(request);
            return request.getAnswerBeforeDurable() ? granted.toBuilder().setPendingSequence(sequence)
                    .setDurable(mark("a", sequence - 1)).build() : granted;
        };
    }

    /** The peer restarted as incarnation "b" with the session holding "orders" under {@link #RESTORED_TOKEN}. */
    private void restartHoldingUnderALaterToken() {
        server.locks.onRelease = request -> {
            if (request.getToken().getValue() != RESTORED_TOKEN) {
                throw FakeLocks.notHolder(request.getToken(), RESTORED_TOKEN); // the early grant never applied
            }
            return ReleaseResponse.newBuilder().setReleased(request.getToken()).build();
        };
        server.locks.onAcquire = request -> AcquireResponse.newBuilder().setAcquired(true)
                .setToken(FakeLocks.token(request.getLock(), RESTORED_TOKEN)).build();
    }

    /** Lets the next keepalive go out; its answer carries {@code mark}. */
    private void keepAliveAnswers(DurableMark mark) {
        server.locks.durableInKeepAlives = mark;
        ticker.set(Duration.ofSeconds(++keepAliveSeconds));
    }

    @ParameterizedTest(name = "pipeline served: {0}")
    @ValueSource(booleans = {true, false})
    void durableSeen_aMarkOfAnotherIncarnation_reportsTheGrantLostAndGivesTheLocksPlaceUp(boolean pipeline) {
        server.locks.servePipeline = pipeline;
        answerEarlyAt(PENDING_SEQUENCE);
        Session session = openSession();
        Grant grant = session.lock("orders").acquire(PATIENCE);
        assertThat(server.locks.acquires).singleElement().as("a waiting acquire asks to be answered early")
                .satisfies(request -> assertThat(request.getAnswerBeforeDurable()).isTrue());
        assertThat(provisional(session).size()).as("kept provisional").isEqualTo(1);

        restartHoldingUnderALaterToken();
        keepAliveAnswers(mark("b", 1));

        await().atMost(PATIENCE).until(() -> grant.lost().toCompletableFuture().isDone());
        GrantLoss loss = grant.lost().toCompletableFuture().join();
        assertThat(loss.cause()).isEqualTo(GrantLoss.Cause.NOT_DURABLE);
        assertThat(loss.token()).isEqualTo(grant.token());
        assertThat(loss.detail()).contains(grant.token().toString()).contains("before it was durable");
        await().atMost(PATIENCE).untilAsserted(() -> assertThat(server.locks.releases)
                .extracting(release -> release.getToken().getValue())
                .as("the lost token, then the token the try was granted").containsExactly(1L, RESTORED_TOKEN));
        assertThat(server.locks.acquires).hasSize(2);
        AcquireRequest tried = server.locks.acquires.get(1);
        assertThat(tried.getLock()).isEqualTo("orders");
        assertThat(tried.getWaitMillis()).as("a try").isZero();
        assertThat(tried.getAnswerBeforeDurable()).isFalse();
        assertThat(tried.getRequestId()).as("a request of its own")
                .isNotEqualTo(server.locks.acquires.get(0).getRequestId());
        assertThat(session.isAlive()).as("the session stays open").isTrue();
        assertThat(provisional(session).size()).isZero();

        assertThatCode(grant::close).as("releasing the lost grant").doesNotThrowAnyException();
        assertThat(server.locks.releases).as("no second release").hasSize(2);
    }

    @Test
    void durableSeen_aMarkOfTheSameIncarnationReachingTheSequence_confirmsTheGrantForGood() {
        answerEarlyAt(PENDING_SEQUENCE);
        Session session = openSession();
        Grant orders = session.lock("orders").acquire(PATIENCE);
        answerEarlyAt(PENDING_SEQUENCE + 4);
        Grant invoices = session.lock("invoices").acquire(PATIENCE);

        keepAliveAnswers(mark("a", PENDING_SEQUENCE));
        await().atMost(PATIENCE).until(() -> provisional(session).size() == 1);
        // A later restart loses the grant not confirmed yet, which shows that mark was taken, and only that one.
        keepAliveAnswers(mark("b", 1));
        await().atMost(PATIENCE).until(() -> invoices.lost().toCompletableFuture().isDone());
        await().atMost(PATIENCE).until(() -> server.locks.acquires.size() == 3);

        assertThat(orders.lost().toCompletableFuture()).as("confirmed: never lost").isNotDone();
        assertThat(server.locks.acquires).extracting(AcquireRequest::getLock).as("no try of the confirmed lock")
                .containsExactly("orders", "invoices", "invoices");
        assertThat(server.locks.releases).extracting(release -> release.getToken().getLock())
                .doesNotContain("orders");
        orders.close();
        await().atMost(PATIENCE).untilAsserted(() -> assertThat(server.locks.releases)
                .extracting(release -> release.getToken().getLock()).contains("orders"));
    }

    @Test
    void durableSeen_whileAnAcquireOfTheSameLockIsInFlight_releasesTheTokenAndLeavesThePlaceToThatAcquire()
            throws Exception {
        answerEarlyAt(PENDING_SEQUENCE);
        Session session = openSession();
        Grant lost = session.lock("orders").acquire(PATIENCE);
        restartHoldingUnderALaterToken();
        CountDownLatch answer = new CountDownLatch(1);
        server.locks.onAcquire = request -> {
            answer.await(PATIENCE.toSeconds(), TimeUnit.SECONDS); // the acquire waits for the lock on the service
            return AcquireResponse.newBuilder().setAcquired(true)
                    .setToken(FakeLocks.token(request.getLock(), RESTORED_TOKEN)).build();
        };
        CompletableFuture<Grant> again = CompletableFuture.supplyAsync(() -> session.lock("orders").acquire(PATIENCE));
        await().atMost(PATIENCE).until(() -> server.locks.acquires.size() == 2);

        keepAliveAnswers(mark("b", 1));

        await().atMost(PATIENCE).until(() -> lost.lost().toCompletableFuture().isDone());
        await().atMost(PATIENCE).untilAsserted(() -> assertThat(server.locks.releases)
                .extracting(ReleaseRequest::getToken).extracting(token -> token.getValue()).containsExactly(1L));
        // A try would follow the release at once, on the same thread: give it the time to show.
        await().during(Duration.ofMillis(300)).atMost(PATIENCE).until(() -> server.locks.acquires.size() == 2);
        answer.countDown();
        Grant taken = again.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
        assertThat(taken.token()).isEqualTo(new FencingToken("orders", RESTORED_TOKEN));
        assertThat(server.locks.acquires).as("no try: the acquire in flight took the place").hasSize(2);
        assertThat(server.locks.releases).as("the place is the acquire's").hasSize(1);
        assertThat(taken.lost().toCompletableFuture()).isNotDone();
    }

    @Test
    void acquire_aTrySharedOrAfterTheMostProvisional_doesNotAskToBeAnsweredEarly() {
        server.locks.onAcquire = request -> { // grants in the mode asked for
            AcquireResponse granted = server.locks.grant(request);
            return granted.toBuilder().setToken(granted.getToken().toBuilder().setMode(request.getMode())).build();
        };
        Session session = openSession();
        session.lock("tried").tryAcquire().orElseThrow().close();
        session.lock("shared").acquireShared(PATIENCE).close();
        answerEarlyAt(PENDING_SEQUENCE);
        for (int i = 0; i < PendingGrants.PENDING_MAX; i++) {
            session.lock("lock-" + i).acquire(PATIENCE);
        }
        session.lock("one-more").acquire(PATIENCE);

        assertThat(server.locks.acquires).filteredOn(AcquireRequest::getAnswerBeforeDurable)
                .extracting(AcquireRequest::getLock).as("the waiting exclusive acquires while there was room")
                .hasSize(PendingGrants.PENDING_MAX).doesNotContain("tried", "shared", "one-more");
    }

    private static ProvisionalGrants provisional(Session session) {
        return ((DefaultSession) session).provisionalGrants();
    }

    private static DurableMark mark(String incarnation, long sequence) {
        return DurableMark.newBuilder().setIncarnation(incarnation).setSequence(sequence).build();
    }
}

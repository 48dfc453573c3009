package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockStatus;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Grant#close()} on the pipeline sends the release and returns without waiting for its answer; what keeps
 * that safe: the client's reads wait for those answers, an Acquire answered with a grant being released is not
 * handed out (whether or not the release has settled since, nor is a permit whose release was lost), a release whose
 * stream ends unanswered is sent again, and no more than {@link ReleasesInFlight#IN_FLIGHT_MAX} go unanswered. The
 * fake holds a release, neither applied nor answered, to open the window the real service leaves for a round trip.
 */
class ReleaseWithoutWaitingTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(5);

    private final FakeServer server = FakeServer.start();
    private final FencerClient client;

    ReleaseWithoutWaitingTest() {
        server.locks.servePipeline = true;
        client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(10)).build();
    }

    @AfterEach
    void closeAll() {
        client.close();
        server.close();
    }

    @Test
    void close_onThePipeline_returnsBeforeTheReleaseIsAnswered() {
        Grant grant = client.openSession(TTL).lock("orders").acquire(WAIT);
        server.locks.holdReleases.set(1);

        grant.close();

        await().atMost(WAIT).until(() -> server.locks.calls.contains("Pipeline") && heldReleases() == 1);
        assertThat(server.locks.releases).as("held: neither applied nor answered").isEmpty();
        assertThat(server.locks.answerHeldReleases()).isEqualTo(1);
        assertThat(server.locks.releases).singleElement()
                .satisfies(release -> assertThat(release.getToken().getValue()).isEqualTo(grant.token().value()));
    }

    @Test
    void close_controlWithoutThePipeline_waitsForTheAnswer() {
        server.locks.servePipeline = false;
        Grant grant = client.openSession(TTL).lock("orders").acquire(WAIT);

        grant.close();

        assertThat(server.locks.releases).as("a unary release is answered before close returns").hasSize(1);
        assertThat(server.locks.calls).doesNotContain("Pipeline");
    }

    @Test
    void release_onThePipeline_returnsOnlyOnceTheServiceHasReleased() throws Exception {
        Grant grant = client.openSession(TTL).lock("orders").acquire(WAIT);
        server.locks.holdReleases.set(1);

        CompletableFuture<Void> release = CompletableFuture.runAsync(grant::release);
        await().atMost(WAIT).until(() -> heldReleases() == 1);
        Thread.sleep(300);
        assertThat(release).as("waiting for the answer").isNotDone();

        server.locks.answerHeldReleases();
        release.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(server.locks.releases).hasSize(1);
        grant.close();
        assertThat(server.locks.releases).as("released once").hasSize(1);
    }

    @Test
    void describe_afterACloseNotAnsweredYet_waitsForTheAnswerFirst() throws Exception {
        Grant grant = client.openSession(TTL).lock("orders").acquire(WAIT);
        server.locks.holdReleases.set(1);
        grant.close();
        await().atMost(WAIT).until(() -> heldReleases() == 1);

        CompletableFuture<LockStatus> read = CompletableFuture.supplyAsync(() -> client.describe("orders"));
        Thread.sleep(300);
        assertThat(read).as("waiting for the release's answer").isNotDone();
        assertThat(server.locks.calls).doesNotContain("Describe");

        server.locks.answerHeldReleases();
        read.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(server.locks.calls.indexOf("Describe")).as("the read reached the service after the release")
                .isGreaterThan(server.locks.calls.indexOf("Release"));
    }

    @Test
    void acquire_answeredWithTheGrantStillBeingReleased_releasesItAgainAndHandsOutANewGrant() {
        Session session = client.openSession(TTL);
        Grant first = closedWithItsReleaseHeld(session);

        Grant second = session.lock("orders").acquire(WAIT);

        assertThat(server.locks.grantsAnswered).extracting(answer -> answer.getToken().getValue())
                .as("the fault: the service answered the released grant again")
                .filteredOn(value -> value == first.token().value()).hasSize(2);
        assertThat(second.token().value()).as("a new grant").isGreaterThan(first.token().value());
        server.locks.answerHeldReleases(); // the first release arrives late: NOT_HOLDER, it ends nothing
        await().atMost(WAIT).until(() -> client().releasesInFlight().unansweredCount() == 0);
        assertThat(server.locks.grant(acquireOf(session, "orders")).getToken().getValue())
                .as("the new grant still holds").isEqualTo(second.token().value());
    }

    /**
     * The race a chaos run found across a failover: the service answered the next Acquire with the old grant, still
     * held then, and the re-sent release took effect, and was answered, before the client read that answer. The
     * release was settled by then, yet the grant was released: handed out, its holder believed it held a lock the
     * service had passed to a waiter under the next token.
     */
    @Test
    void acquire_answeredWithAGrantWhoseReleaseSettledBeforeTheAnswerWasRead_asksAgainForANewGrant() {
        Session session = client.openSession(TTL);
        Grant first = closedWithItsReleaseHeld(session);
        AtomicInteger acquires = new AtomicInteger();
        server.locks.onAcquire = request -> {
            AcquireResponse answer = server.locks.grant(request);
            if (acquires.getAndIncrement() == 0) {
                server.locks.answerHeldReleases(); // the release applies, and its answer reaches the client, first
                await().atMost(WAIT).until(() -> client().releasesInFlight().unansweredCount() == 0);
            }
            return answer;
        };

        Grant second = session.lock("orders").acquire(WAIT);

        assertThat(server.locks.grantsAnswered).extracting(answer -> answer.getToken().getValue())
                .as("the fault: the first Acquire was answered with the released grant")
                .filteredOn(value -> value == first.token().value()).hasSize(2);
        assertThat(acquires).as("asked again").hasValue(2);
        assertThat(second.token().value()).as("a new grant").isGreaterThan(first.token().value());
        assertThat(server.locks.grant(acquireOf(session, "orders")).getToken().getValue())
                .as("the service holds the lock for the session under the new grant")
                .isEqualTo(second.token().value());
    }

    /**
     * A permit's release waits for its answer, but a service may answer a release before it is durable and lose it
     * in a restart: the next AcquirePermit then finds the permit still held by the session. Before it was checked, that
     * permit was handed out as a new one, and the client's re-sending of the lost release later ended it under its
     * holder.
     */
    @Test
    void acquirePermit_answeredWithAPermitWhoseReleaseWasLost_releasesItAgainAndGetsANewPermit() {
        Session session = client.openSession(TTL);
        FencedSemaphore.PermitGrant first = session.semaphore("pool", 2).acquire(WAIT);
        AtomicInteger releases = new AtomicInteger();
        server.locks.onRelease = request -> releases.getAndIncrement() == 0
                ? ReleaseResponse.newBuilder().setReleased(request.getToken()).build() // answered, then lost
                : server.locks.release(request);
        first.close();

        FencedSemaphore.PermitGrant second = session.semaphore("pool", 2).acquire(WAIT);

        assertThat(server.locks.grantsAnswered).extracting(answer -> answer.getToken().getValue())
                .as("the fault: AcquirePermit was answered with the released permit")
                .filteredOn(value -> value == first.token().value()).hasSize(2);
        assertThat(releases).as("released again").hasValue(2);
        assertThat(second.token().lock()).as("the freed slot").isEqualTo(first.token().lock());
        assertThat(second.token().value()).as("a new grant of it").isGreaterThan(first.token().value());
    }

    @Test
    void close_whoseStreamEndsBeforeTheAnswer_isSentAgain() {
        Grant grant = client.openSession(TTL).lock("orders").acquire(WAIT);
        server.locks.holdReleases.set(1);
        grant.close();
        await().atMost(WAIT).until(() -> heldReleases() == 1);

        server.locks.failPipelines(FakeLocks.plainUnavailable());

        await().atMost(WAIT).untilAsserted(() -> assertThat(server.locks.releases).as("sent again, applied")
                .hasSize(1));
        Session other = client.openSession(TTL);
        assertThat(other.lock("orders").tryAcquire()).as("free again").isPresent();
    }

    /**
     * The client usually sees the stream's end before the close, and its release then meets the new stream's
     * UNIMPLEMENTED; otherwise the release rides the ending stream, whose end has it sent again. Both must release.
     */
    @Test
    void close_onAServerThatNoLongerServesThePipeline_isSentAgainAsAUnaryCall() throws Exception {
        Session session = client.openSession(TTL);
        Grant grant = session.lock("orders").acquire(WAIT);
        server.locks.servePipeline = false; // the next stream is answered UNIMPLEMENTED, as by an older server
        server.locks.failPipelines(FakeLocks.plainUnavailable());
        Thread.sleep(300); // time for the client to see the stream end

        grant.close();

        await().atMost(WAIT).untilAsserted(() -> assertThat(server.locks.releases).as("released").isNotEmpty());
        assertThat(server.locks.calls).as("a new stream was refused").contains("Pipeline refused");
        Session other = client.openSession(TTL);
        await().atMost(WAIT).until(() -> other.lock("orders").tryAcquire().isPresent());
    }

    @Test
    void close_answeredSessionExpired_losesTheSession() {
        Session session = client.openSession(TTL);
        Grant grant = session.lock("orders").acquire(WAIT);
        server.locks.failNext("Release", FakeLocks.error(Status.Code.FAILED_PRECONDITION, ErrorDetail.newBuilder()
                .setReason(Reason.REASON_SESSION_EXPIRED).setSessionId(session.id())
                .setMessage("session " + session.id() + " has ended").build()));

        grant.close();

        await().atMost(WAIT).until(() -> session.lost().toCompletableFuture().isDone());
        assertThat(session.lost().toCompletableFuture().join().cause()).isEqualTo(SessionLoss.Cause.EXPIRED);
    }

    @Test
    void close_withTheMostReleasesUnanswered_waitsForItsOwnAnswer() {
        Session session = client.openSession(TTL);
        List<Grant> grants = new ArrayList<>();
        for (int i = 0; i <= ReleasesInFlight.IN_FLIGHT_MAX; i++) {
            grants.add(session.lock("lock-" + i).acquire(WAIT));
        }
        server.locks.holdReleases.set(ReleasesInFlight.IN_FLIGHT_MAX);
        for (Grant grant : grants.subList(0, ReleasesInFlight.IN_FLIGHT_MAX)) {
            grant.close();
        }
        assertThat(client().releasesInFlight().unansweredCount()).isEqualTo(ReleasesInFlight.IN_FLIGHT_MAX);
        assertThat(server.locks.releases).isEmpty();

        grants.get(ReleasesInFlight.IN_FLIGHT_MAX).close();

        assertThat(server.locks.releases).as("the one over the bound was answered before close returned")
                .singleElement().satisfies(release -> assertThat(release.getToken().getLock())
                        .isEqualTo("lock-" + ReleasesInFlight.IN_FLIGHT_MAX));
        server.locks.answerHeldReleases();
        await().atMost(WAIT).until(() -> client().releasesInFlight().unansweredCount() == 0);
        assertThat(server.locks.releases).hasSize(ReleasesInFlight.IN_FLIGHT_MAX + 1);
    }

    /** Acquires "orders" through {@code session} and closes the grant, whose release the fake then holds. */
    private Grant closedWithItsReleaseHeld(Session session) {
        Grant grant = session.lock("orders").acquire(WAIT);
        server.locks.holdReleases.set(1);
        grant.close();
        await().atMost(WAIT).until(() -> heldReleases() == 1);
        return grant;
    }

    private int heldReleases() {
        return server.locks.heldReleaseCount();
    }

    private static io.fencer.api.v1.AcquireRequest acquireOf(Session session, String lock) {
        return io.fencer.api.v1.AcquireRequest.newBuilder().setSessionId(session.id()).setLock(lock).build();
    }

    private DefaultFencerClient client() {
        return (DefaultFencerClient) client;
    }
}

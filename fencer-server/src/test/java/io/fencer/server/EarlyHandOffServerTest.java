package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Early hand-offs on one real server over real gRPC (locks.proto's {@code AcquireRequest.answer_before_durable}): a
 * waiter whose call asks is answered when the holder's release is queued, before it is durable, with the token the
 * release's entry then grants; the server answers early only once a RaiseFloor of its incarnation applied, and a
 * waiter that does not ask is answered once durable, as before.
 */
class EarlyHandOffServerTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void release_whoseNextWaiterAsksEarly_answersItBeforeTheReleaseIsDurableWithTheTokenItsEntryGrants()
            throws Exception {
        start(ServerConfig.GRANTS_AHEAD_DEFAULT);
        TestSession first = openSession(locks, TTL_MILLIS);
        TestSession second = openSession(locks, TTL_MILLIS);
        FencingToken held = acquire(locks, first, "jobs", 0).getToken();

        // A fresh group reads format level 4 when the start's RaiseFloor applies (refused: nothing was ever answered
        // early, and nothing is raised); it arms once its level is raised.
        AcquireResponse one = handOff(first, held, second, true);
        AcquireResponse early = handOff(second, one.getToken(), first, true);

        assertThat(early.getAcquired()).isTrue();
        assertThat(early.getPendingSequence()).as("answered early").isPositive();
        assertThat(early.getDurable().getSequence()).as("the mark then did not cover its release")
                .isLessThan(early.getPendingSequence());
        assertThat(early.getToken().getValue()).as("the lock's next token").isEqualTo(one.getToken().getValue() + 1);
        assertThat(held.getValue()).as("no floor raised in a fresh group").isEqualTo(1);
        assertThat(describe(locks, "jobs").getHolder()).as("what the release's entry granted")
                .satisfies(holder -> assertThat(holder.getValue()).isEqualTo(early.getToken().getValue()));
        assertThat(TestServers.metric(server, "fencer_proposer_handoffs_early_total")).isGreaterThanOrEqualTo(1.0);
    }

    @Test
    void release_whoseNextWaiterDoesNotAsk_answersItOnceDurable() throws Exception {
        start(ServerConfig.GRANTS_AHEAD_DEFAULT);
        TestSession first = openSession(locks, TTL_MILLIS);
        TestSession second = openSession(locks, TTL_MILLIS);
        FencingToken held = acquire(locks, first, "jobs", 0).getToken();

        AcquireResponse one = handOff(first, held, second, false);
        AcquireResponse two = handOff(second, one.getToken(), first, false);

        assertThat(one.getPendingSequence()).isZero();
        assertThat(two.getPendingSequence()).isZero();
        assertThat(two.hasDurable()).isFalse();
        assertThat(one.getToken().getValue()).isEqualTo(held.getValue() + 1);
        assertThat(two.getToken().getValue()).isEqualTo(held.getValue() + 2);
    }

    @Test
    void release_withGrantsAheadZero_answersEveryGrantOnceDurable() throws Exception {
        start(0);
        TestSession first = openSession(locks, TTL_MILLIS);
        TestSession second = openSession(locks, TTL_MILLIS);
        FencingToken held = acquire(locks, first, "jobs", 0).getToken();

        AcquireResponse one = handOff(first, held, second, true);
        AcquireResponse two = handOff(second, one.getToken(), first, true);

        assertThat(held.getValue()).as("no floor raised at the start").isEqualTo(1);
        assertThat(two.getPendingSequence()).isZero();
        assertThat(two.hasDurable()).isFalse();
        assertThat(two.getToken().getValue()).isEqualTo(held.getValue() + 2);
        assertThat(TestServers.metric(server, "fencer_proposer_handoffs_early_total")).isZero();
    }

    @Test
    void withGrantsAhead_negativeOrAboveTheMaximum_throwsNamingTheValueAndTheRange() {
        ServerConfig config = ServerConfig.defaults(dataDir);

        assertThatThrownBy(() -> config.withGrantsAhead(65)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("grants ahead 65 must lie in [0, 64]");
        assertThatThrownBy(() -> config.withGrantsAhead(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("grants ahead -1 must lie in [0, 64]");
    }

    private void start(int grantsAhead) throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()).withGrantsAhead(grantsAhead));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    /** {@code waiter} queues for the lock {@code holder} holds under {@code held}; the holder releases it. */
    private AcquireResponse handOff(TestSession holder, FencingToken held, TestSession waiter, boolean early)
            throws Exception {
        AcquireRequest request = AcquireRequest.newBuilder().setSessionId(waiter.id())
                .setSessionSecret(waiter.secret()).setLock("jobs").setRequestId(UUID.randomUUID().toString())
                .setWaitMillis(WAIT_MAX.toMillis()).setAnswerBeforeDurable(early).build();
        CompletableFuture<AcquireResponse> waiting = CompletableFuture.supplyAsync(() -> locks.acquire(request));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(locks, "jobs").contains(waiter.id()));
        release(locks, holder, held);
        return waiting.get(WAIT_MAX.toSeconds(), TimeUnit.SECONDS);
    }
}

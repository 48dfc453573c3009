package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A session's loss is told to its listeners when the client learns it, whatever blocking work the client does on
 * its own threads meanwhile: re-sent releases against a peer that stopped answering must not hold the loss back
 * (the service expires the session at its ttl, and work that no resource fences relies on this notice alone).
 */
class LossNotificationTest {
    private static final Duration TTL = Duration.ofSeconds(3);
    /** Long, so that a re-sent release outlives the test's patience: what it holds up stays held. */
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration PATIENCE = Duration.ofSeconds(10);
    /** More releases to re-send than the client has threads for its listeners. */
    private static final int RELEASES = 8;
    /** The client's threads for listeners (DefaultFencerClient's pool): the re-sends took every one of them. */
    private static final int EVENT_THREADS = 4;

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        server.locks.holdReleases.set(0);
        server.locks.answerHeldReleases(); // the re-sent releases end, and the client's close is not held up
        if (client != null) {
            client.close();
        }
        server.close();
    }

    @Test
    void lost_whileReleasesAreResentToASilentPeer_isToldWhenTheLocalLeaseEnds() throws Exception {
        server.locks.servePipeline = true;
        client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).callTimeout(CALL_TIMEOUT).build();
        Session session = client.openSession(TTL); // at ticker time 0
        List<Grant> grants = new ArrayList<>();
        for (int i = 0; i < RELEASES; i++) {
            grants.add(session.lock("lock-" + i).acquire(Duration.ZERO));
        }
        server.locks.holdReleases.set(RELEASES);
        grants.forEach(Grant::close); // sent on the pipeline, held there unanswered
        await().atMost(PATIENCE).until(() -> server.locks.heldReleaseCount() == RELEASES);

        // The peer stops answering, and its pipeline stream breaks: every release is re-sent, and waits.
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.SILENT;
        server.locks.holdReleases.set(Integer.MAX_VALUE);
        server.locks.failPipelines(FakeLocks.plainUnavailable());
        await().atMost(PATIENCE).until(() -> server.locks.heldReleaseCount() >= EVENT_THREADS);

        ticker.set(TTL); // no keepalive was acknowledged: the local lease has ended
        assertThat(session.isAlive()).as("the loss is known to the client").isFalse();
        CompletableFuture<SessionLoss> lost = session.lost().toCompletableFuture();
        assertThat(lost.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS).cause())
                .as("told to the session's listeners").isEqualTo(SessionLoss.Cause.UNREACHABLE);
        assertThat(session.jeopardy().toCompletableFuture().isDone()).as("jeopardy was told before").isTrue();
    }
}

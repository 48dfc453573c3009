package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.FencedMultiLock;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code Grant.close()} returns without waiting for the service, on a real server (real Ratis, real fsync, real
 * gRPC): what the client promises still holds there, because the server serves one pipeline stream's calls in the
 * order they came. A close followed at once by another session's try on the same client finds the lock free every
 * time; the client's reads and AcquireAll see the release; tokens only grow; a release that nothing follows still
 * reaches the log, at the end of its linger.
 */
class ReleaseWithoutWaitingServerTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(10);
    /** The server serves one stream's calls in order, so each cycle either shows it or not: 100 suffice. */
    private static final int CYCLES = 100;
    /** Far below the first keepalive (a third of the ttl), far above the linger's longest window (1 ms). */
    private static final Duration EXPIRY_WAIT = Duration.ofSeconds(3);

    @TempDir
    Path dataDir;
    private FencerTestServer server;
    private FencerClient client;

    @BeforeEach
    void start() {
        // The admin port on (any free one): one test reads the proposer's counters there.
        server = FencerTestServer.builder(dataDir).config(config -> config.withPorts(config.port(), 0,
                config.raftPort())).start();
        client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(20)).build();
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
    }

    @Test
    void close_thenAnotherSessionOfTheClientTries_findsTheLockFreeEveryTime() {
        Session first = client.openSession(TTL);
        Session second = client.openSession(TTL);
        long lastToken = 0;
        for (int i = 0; i < CYCLES; i++) {
            Session holder = i % 2 == 0 ? first : second;
            Session next = i % 2 == 0 ? second : first;
            Grant grant = holder.lock("orders").acquire(WAIT);
            assertThat(grant.token().value()).as("tokens only grow").isGreaterThan(lastToken);
            lastToken = grant.token().value();

            grant.close();
            Optional<Grant> taken = next.lock("orders").tryAcquire();

            assertThat(taken).as("cycle %d: the release went ahead of the try", i).isPresent();
            assertThat(taken.get().token().value()).isGreaterThan(lastToken);
            lastToken = taken.get().token().value();
            taken.get().close();
        }
    }

    @Test
    void close_thenTheSameSessionAcquiresAgain_getsANewGrantEveryTime() {
        Session session = client.openSession(TTL);
        long lastToken = 0;
        for (int i = 0; i < CYCLES; i++) {
            Grant grant = session.lock("orders").acquire(WAIT);
            assertThat(grant.token().value()).as("cycle %d: a new grant, never the one just released", i)
                    .isGreaterThan(lastToken);
            lastToken = grant.token().value();
            grant.close();
        }
    }

    @Test
    void describe_rightAfterClose_showsTheLockFree() {
        Session session = client.openSession(TTL);
        for (int i = 0; i < 50; i++) {
            Grant grant = session.lock("orders").acquire(WAIT);
            grant.close();

            assertThat(client.describe("orders").holder()).as("cycle %d", i).isNull();
        }
    }

    @Test
    void acquireAll_rightAfterClosingOneOfItsLocks_getsANewGrantOfIt() {
        Session session = client.openSession(TTL);
        FencedMultiLock both = session.locks("orders", "invoices");
        for (int i = 0; i < 50; i++) {
            Grant orders = session.lock("orders").acquire(WAIT);
            orders.close();

            try (FencedMultiLock.MultiGrant grants = both.acquire(WAIT)) {
                assertThat(grants.grants().get(0).token().value()).as("cycle %d", i)
                        .isGreaterThan(orders.token().value());
            }
        }
    }

    @Test
    void multiGrantRelease_thenAnotherClientTries_findsEveryLockFreeEveryTime() {
        Session session = client.openSession(TTL);
        FencedMultiLock both = session.locks("orders", "invoices");
        try (FencerClient other = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(20))
                .build()) {
            FencedMultiLock othersBoth = other.openSession(TTL).locks("orders", "invoices");
            for (int i = 0; i < 100; i++) {
                FencedMultiLock.MultiGrant grants = both.acquire(WAIT);

                grants.release(); // returns once the service has released both: any client then finds them free

                Optional<FencedMultiLock.MultiGrant> taken = othersBoth.tryAcquire();
                assertThat(taken).as("cycle %d: another client finds both free", i).isPresent();
                taken.get().release();
            }
        }
    }

    @Test
    void close_withNothingAfterIt_reachesTheLogAtItsLingerExpiry() {
        Session session = client.openSession(TTL);
        Grant grant = session.lock("orders").acquire(WAIT);
        double entries = metric("fencer_proposer_entries_total");
        double early = metric("fencer_proposer_releases_early_total");

        grant.close();

        // Answered from its place in the queue, the release lingers for company; none comes (no keepalive is due
        // for a third of the ttl), so only its expiry, on the event loop that took it, sends it.
        await().atMost(EXPIRY_WAIT).until(() -> metric("fencer_proposer_entries_total") == entries + 1);
        assertThat(metric("fencer_proposer_releases_early_total")).as("answered early, so it lingered")
                .isEqualTo(early + 1);
    }

    private double metric(String series) {
        return FencerProcess.metric(server.server().adminPort(), series);
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LeaderElection;
import io.fencer.client.Leadership;
import io.fencer.client.Session;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Leadership} objects of one term, against a real server over real gRPC: the term ends for all of them. */
class LeadershipTermsTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerTestServer server;
    private FencerClient client;

    @BeforeEach
    void start() {
        server = FencerTestServer.start(dataDir);
        client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(20)).build();
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
    }

    /**
     * Two parts of one process campaigning through its one session both get the session's term (the lock is the
     * session's): when one resigns, the lock passes to another process, so the other part's term is over too and its
     * {@code ended()} must say so, or it goes on leading beside the new leader.
     */
    @Test
    void campaign_twiceInOneSessionThenOneResigns_bothTermsEnd() {
        Session session = client.openSession(TTL);
        LeaderElection election = session.election("scheduler");
        Leadership first = election.campaign(WAIT);
        Leadership second = session.election("scheduler").tryCampaign().orElseThrow();
        assertThat(second.epoch()).as("the session's own term again").isEqualTo(first.epoch());

        first.close();
        Leadership next = client.openSession(TTL).election("scheduler").campaign(WAIT);

        assertThat(next.epoch()).isGreaterThan(first.epoch());
        assertThat(second.ended().toCompletableFuture().isDone())
                .as("the term of %s is over: %s leads", second, next).isTrue();
    }

    /** A term resigned and then campaigned for again is a new term: the ended term does not end the new one. */
    @Test
    void campaign_afterResigning_newTermStaysOpenUntilItEnds() {
        Session session = client.openSession(TTL);
        LeaderElection election = session.election("scheduler");
        Leadership first = election.campaign(WAIT);
        first.close();

        Leadership again = election.campaign(WAIT);

        assertThat(again.epoch()).isGreaterThan(first.epoch());
        assertThat(again.ended().toCompletableFuture().isDone()).isFalse();
        again.close();
        assertThat(again.ended().toCompletableFuture().isDone()).isTrue();
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.RevokedGrant;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LeaderElection;
import io.fencer.client.Leadership;
import io.fencer.client.LockTimeoutException;
import io.fencer.client.Session;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LeaderElectionTest {
    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).build();

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
    }

    @Test
    void campaign_elected_epochIsTheToken() {
        Session session = client.openSession(Duration.ofSeconds(10));
        LeaderElection election = session.election("scheduler");

        try (Leadership leadership = election.campaign(Duration.ofSeconds(1))) {
            assertThat(election.name()).isEqualTo("scheduler");
            assertThat(leadership.epoch()).isEqualTo(1);
            assertThat(leadership.token().lock()).isEqualTo("scheduler");
            assertThat(leadership.ended().toCompletableFuture().isDone()).isFalse();
        }
    }

    @Test
    void tryCampaign_whileAnotherLeads_isEmptyAndCampaignTimesOut() {
        Session first = client.openSession(Duration.ofSeconds(10));
        Session second = client.openSession(Duration.ofSeconds(10));
        first.election("scheduler").tryCampaign().orElseThrow();

        assertThat(second.election("scheduler").tryCampaign()).isEmpty();
        assertThatThrownBy(() -> second.election("scheduler").campaign(Duration.ofMillis(100)))
                .isInstanceOf(LockTimeoutException.class);
    }

    @Test
    void close_resigns_endsTheTermAndReleases() {
        Session session = client.openSession(Duration.ofSeconds(10));
        Leadership leadership = session.election("scheduler").campaign(Duration.ofSeconds(1));

        leadership.close();

        assertThat(leadership.ended().toCompletableFuture().isDone()).isTrue();
        assertThat(server.locks.releases).hasSize(1);
    }

    @Test
    void ended_sessionLost_completes() {
        Session session = client.openSession(Duration.ofSeconds(3));
        Leadership leadership = session.election("scheduler").campaign(Duration.ofSeconds(1));
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;

        ticker.set(Duration.ofSeconds(1));

        await().atMost(Duration.ofSeconds(20)).until(() -> leadership.ended().toCompletableFuture().isDone());
    }

    /** The term ends when an operator revokes the leader's grant, not only when its session ends. */
    @Test
    void ended_grantRevoked_completesWhileTheSessionLives() {
        Session session = client.openSession(Duration.ofSeconds(3)); // keepalive interval: 1 s of ticker time
        Leadership leadership = session.election("scheduler").campaign(Duration.ofSeconds(1));
        server.locks.revokedInKeepAlives = List.of(RevokedGrant.newBuilder()
                .setToken(FakeLocks.token("scheduler", leadership.epoch())).setRevokedBy("alice").build());

        ticker.set(Duration.ofSeconds(1)); // the next keepalive's answer names the revocation

        await().atMost(Duration.ofSeconds(20)).until(() -> leadership.ended().toCompletableFuture().isDone());
        assertThat(session.isAlive()).as("a revocation leaves the session open").isTrue();
    }

    @Test
    void leader_describesTheHolder_orIsEmptyWhenFree() {
        Session session = client.openSession(Duration.ofSeconds(10));
        LeaderElection election = session.election("scheduler");
        assertThat(election.leader()).isEmpty();

        server.locks.onDescribe = request -> LockInfo.newBuilder().setLock(request.getLock())
                .setHolder(FakeLocks.token(request.getLock(), 4)).setHolderIdentity("scheduler-7").setLastToken(4)
                .build();

        assertThat(election.leader()).hasValueSatisfying(status -> {
            assertThat(status.holder().value()).isEqualTo(4);
            assertThat(status.holderIdentity()).isEqualTo("scheduler-7");
        });
    }
}

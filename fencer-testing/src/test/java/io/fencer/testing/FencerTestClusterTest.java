package io.fencer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.server.FencerServer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FencerTestClusterTest {
    private static final Duration TTL = Duration.ofSeconds(60);

    @TempDir
    Path dataRoot;

    @Test
    void stop_ofTheLeader_anotherPeerLeadsAndTokensKeepIncreasing() {
        try (FencerTestCluster cluster = FencerTestCluster.start(dataRoot, 3);
                FencerClient client = Fencer.connect(cluster.endpoints().split(","))) {
            assertThat(cluster.size()).isEqualTo(3);
            assertThat(cluster.endpoints().split(",")).containsExactly(cluster.endpoint(0), cluster.endpoint(1),
                    cluster.endpoint(2));
            Session session = client.openSession(TTL);
            FencingToken before;
            try (Grant grant = session.lock("orders").acquire(TTL)) {
                before = grant.token();
            }
            int oldLeader = cluster.leaderIndex();
            FencerServer stopped = cluster.leader();

            cluster.stop(oldLeader);
            int newLeader = cluster.leaderIndex();

            assertThat(cluster.isRunning(oldLeader)).isFalse();
            assertThat(stopped.isLeader()).isFalse();
            assertThat(newLeader).isNotEqualTo(oldLeader);
            assertThat(cluster.leader().isLeader()).isTrue();
            try (Session other = client.openSession(TTL); Grant after = other.lock("orders").acquire(TTL)) {
                assertThat(after.token().value()).isGreaterThan(before.value());
            }
        }
    }

    @Test
    void restart_ofAStoppedPeer_rejoinsOnItsPortsAndLearnsTheLeader() {
        try (FencerTestCluster cluster = FencerTestCluster.start(dataRoot, 3)) {
            int follower = (cluster.leaderIndex() + 1) % 3;
            String endpoint = cluster.endpoint(follower);

            cluster.stop(follower);
            cluster.restart(follower);

            assertThat(cluster.isRunning(follower)).isTrue();
            assertThat(cluster.endpoint(follower)).isEqualTo(endpoint);
            assertThat(cluster.server(follower).port()).isEqualTo(Integer.parseInt(endpoint.split(":")[1]));
            String leaderAddress = cluster.endpoint(cluster.leaderIndex());
            InProcessPeer.await(() -> cluster.server(follower).leaderAddress().equals(leaderAddress),
                    Duration.ofSeconds(60), () -> "the restarted peer did not learn the leader");
        }
    }

    @Test
    void leaderIndex_everyPeerStopped_throwsAtOnceNamingTheEndpoints() {
        try (FencerTestCluster cluster = FencerTestCluster.start(dataRoot, 1)) {
            assertThat(cluster.leaderIndex()).isZero();

            cluster.stop(0);

            assertThatThrownBy(cluster::leaderIndex).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("every peer is stopped").hasMessageContaining(cluster.endpoints());
        }
    }

    @Test
    void builder_peersOutOfRange_throwsNamingTheCount() {
        assertThatThrownBy(() -> FencerTestCluster.builder(dataRoot).peers(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(": 0");
        assertThatThrownBy(() -> FencerTestCluster.builder(dataRoot).peers(8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("7: 8");
    }
}

package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The takeover bound B and the leader lease it rests on, as derived in {@link RaftNode#takeoverBound()}. */
class RaftNodeTest {
    @Test
    void leaderLeaseTimeout_isTheRatioOfTheShortestElectionTimeout() {
        assertThat(RaftNode.leaderLeaseTimeout()).isEqualTo(Duration.ofMillis(360));
        assertThat(RaftNode.leaderLeaseTimeout()).isLessThan(RaftNode.ELECTION_TIMEOUT_MIN);
    }

    @Test
    void takeoverBound_coversTheLeaseAndTheLongestTimeADeposedLeaderLeadsUnheard() {
        Duration bound = RaftNode.takeoverBound();

        assertThat(bound).isGreaterThanOrEqualTo(RaftNode.leaderLeaseTimeout());
        assertThat(bound).isGreaterThanOrEqualTo(RaftNode.ELECTION_TIMEOUT_MAX);
        assertThat(bound).isEqualTo(Duration.ofMillis(800));
    }
}

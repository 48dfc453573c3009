package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.LockInfo;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A call made during an election outlives it: once a peer answers NOT_LEADER, the call keeps trying for at least
 * {@link Router#ELECTION_WAIT_NANOS}, even past a shorter call timeout, and follows the leader named as soon as one
 * is; a group that never elects still fails the call, after that bound.
 */
class ElectionWaitTest {
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);

    private final FakeServer follower = FakeServer.start();
    private final FakeServer leader = FakeServer.start();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        follower.close();
        leader.close();
    }

    /**
     * Makes one call through a client of its own first: on a loaded machine the first call of a JVM (classes, the
     * fakes' threads) can take longer than the short call timeout, and then no NOT_LEADER answer would ever arrive.
     */
    private void warmUp() {
        try (FencerClient warm = Fencer.newBuilder().endpoints(leader.endpoint()).build()) {
            warm.describe("warm-up");
        }
        leader.locks.calls.clear();
    }

    @Test
    void call_electionOutlastsTheCallTimeout_followsTheLeaderOnceNamed() throws Exception {
        follower.locks.failEverything = FakeLocks.notLeader(""); // electing: no leader known yet
        leader.locks.onDescribe = request -> LockInfo.newBuilder().setLock(request.getLock()).setLastToken(7).build();
        warmUp();
        client = Fencer.newBuilder().endpoints(follower.endpoint()).callTimeout(CALL_TIMEOUT).build();
        // The election ends 1.6 s in (two 800 ms election timeouts): past the call's own timeout.
        CompletableFuture.delayedExecutor(1_600, TimeUnit.MILLISECONDS)
                .execute(() -> follower.locks.failEverything = FakeLocks.notLeader(leader.endpoint()));
        long startNanos = System.nanoTime();

        assertThat(client.describe("orders").lastToken()).isEqualTo(7);

        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        assertThat(took).as("the control: the call did outlast its timeout").isGreaterThan(CALL_TIMEOUT);
        assertThat(follower.locks.count("Describe")).as("retried through the election").isGreaterThan(2);
        assertThat(leader.locks.count("Describe")).isEqualTo(1);
    }

    @Test
    void call_groupNeverElects_failsAfterTheElectionWaitNamingTheLastAnswer() {
        follower.locks.failEverything = FakeLocks.notLeader("");
        warmUp();
        client = Fencer.newBuilder().endpoints(follower.endpoint()).callTimeout(CALL_TIMEOUT).build();
        long startNanos = System.nanoTime();

        assertThatThrownBy(() -> client.describe("orders")).isInstanceOf(UnavailableException.class)
                .hasMessageContaining("REASON_NOT_LEADER").hasMessageContaining("a read, it changed nothing");

        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        // The budget gives up when its next pause would pass the wait, so the call may end one pause before it.
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofNanos(Router.ELECTION_WAIT_NANOS).minusMillis(500))
                .isLessThan(Duration.ofNanos(Router.ELECTION_WAIT_NANOS).plusSeconds(3));
    }
}

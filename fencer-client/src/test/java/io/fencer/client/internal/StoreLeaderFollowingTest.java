package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.StoreOp;
import io.fencer.core.FencingToken;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store client following the leader of a replicated store through a paused leader; real gRPC on 127.0.0.1. */
class StoreLeaderFollowingTest {
    private static final String T7 = new FencingToken("orders", 7).sequencer();

    @TempDir
    Path dir;

    /**
     * Regression: a follower that has not yet seen the election after the leader was paused still names the paused
     * leader, and the store client went straight back to it, spending a second attempt timeout there; with a 3 s call
     * timeout (attempts of 1 s) the call ran out before it tried the third peer, which leads.
     */
    @Test
    void write_leaderSilentAndAFollowerStillNamingIt_goesToTheNextPeerNotBackToTheSilentOne() throws Exception {
        // A paused leader: its socket takes connections into the backlog and never answers.
        try (ServerSocket paused = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"));
                FakeStore follower = FakeStore.start(dir.resolve("follower"));
                FakeStore leader = FakeStore.start(dir.resolve("leader"))) {
            String pausedAddress = "127.0.0.1:" + paused.getLocalPort();
            IntStream.range(0, 50).forEach(i -> follower.failNext("Write", FakeLocks.notLeader(pausedAddress)));
            try (FencedStore store = Fencer.newStoreBuilder()
                    .endpoint(pausedAddress + "," + follower.endpoint() + "," + leader.endpoint())
                    .callTimeout(Duration.ofSeconds(3)).build()) {

                store.write("orders", T7, List.of(StoreOp.put("k", "v")), "idem-1");
            }

            assertThat(leader.engine.get("orders", "k".getBytes(), null).value()).asString().isEqualTo("v");
            assertThat(follower.count("Write")).as("the follower's redirect to the paused leader was met once")
                    .isEqualTo(1);
        }
    }
}

package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three peers in one JVM whose Raft ports require the group secret: with the same secret they elect a leader and
 * grant; a peer given another secret cannot join, both sides' logs say why, and the other two serve without it.
 */
class RaftPortAuthenticationTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration ELECTION_MAX = Duration.ofSeconds(60);
    private static final String HINT = "(is --raft-secret-file the same file on every peer?)";

    @TempDir
    Path dataRoot;
    private final List<ServerConfig.Peer> peers = new ArrayList<>();
    private final Map<String, FencerServer> servers = new ConcurrentHashMap<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel channel : channels) {
            TestServers.close(channel);
        }
        servers.values().forEach(FencerServer::close);
    }

    @Test
    void group_sameSecretOnEveryPeer_electsALeaderThatGrantsReplicatedTokens() throws Exception {
        byte[] secret = TestServers.newSecretBytes();
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        for (ServerConfig.Peer peer : peers) {
            start(peer.id(), TestServers.groupSecret(secret));
        }

        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub stub = stubOf(leader);
        AcquireResponse granted = acquire(stub, openSession(stub, TTL_MILLIS), "orders", 0);

        assertThat(granted.getAcquired()).isTrue();
        long committed = leader.appliedIndex();
        await().atMost(ELECTION_MAX).until(() -> servers.values().stream()
                .allMatch(server -> server.appliedIndex() >= committed));
    }

    @Test
    void peer_withAnotherSecret_cannotJoinAndBothLogsSayWhy() throws Exception {
        byte[] secret = TestServers.newSecretBytes();
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        try (CapturedStandardError logged = CapturedStandardError.start()) {
            start("n1", TestServers.groupSecret(secret));
            start("n2", TestServers.groupSecret(secret));
            FencerServer outsider = start("n3", TestServers.groupSecret(TestServers.newSecretBytes()));

            FencerServer leader = awaitLeader();
            LocksGrpc.LocksBlockingStub stub = stubOf(leader);
            assertThat(acquire(stub, openSession(stub, TTL_MILLIS), "orders", 0).getAcquired()).isTrue();
            await().atMost(ELECTION_MAX).until(() -> logged.text().contains("the Raft handshake with peer n3 at "
                    + "127.0.0.1:" + peers.get(2).raftPort() + " failed: it refused this peer's proof of the group "
                    + "secret " + HINT));
            await().atMost(ELECTION_MAX).until(() -> logged.text().contains("n3: refused a Raft connection from "
                    + "127.0.0.1:") && logged.text().contains("its handshake does not prove the group secret " + HINT));

            assertThat(leader).isNotSameAs(outsider);
            assertThat(outsider.isLeader()).isFalse();
            assertThat(outsider.leaderAddress()).as("the outsider never heard a leader").isEmpty();
            assertThat(outsider.appliedIndex()).as("nothing reached the outsider's log").isLessThan(
                    leader.appliedIndex());
        }
    }

    private FencerServer start(String id, PeerAuth peerAuth) throws Exception {
        FencerServer server = FencerServer.start(ServerConfig.defaults(dataRoot.resolve(id)).withPorts(0, -1, 0)
                .withPeers(id, peers).withPeerAuth(peerAuth));
        servers.put(id, server);
        return server;
    }

    private FencerServer awaitLeader() {
        await().atMost(ELECTION_MAX).until(() -> servers.values().stream().filter(FencerServer::isLeader).count() == 1);
        FencerServer leader = servers.values().stream().filter(FencerServer::isLeader).findFirst().orElseThrow();
        ManagedChannel channel = TestServers.channel(leader);
        channels.add(channel);
        TestServers.awaitServing(leader, channel);
        return leader;
    }

    private LocksGrpc.LocksBlockingStub stubOf(FencerServer server) {
        ManagedChannel channel = TestServers.channel(server);
        channels.add(channel);
        return TestServers.stub(channel);
    }
}

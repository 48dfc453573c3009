package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.server.TestServers.TestSession;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.server.tls.TlsFixture;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three peers in one JVM with TLS on every port: the group forms over mutual TLS on the Raft port, serves locks to
 * TLS clients, and fails over with tokens still increasing. The Raft port refuses a client without a peer
 * certificate.
 */
class TlsClusterTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration ELECTION_MAX = Duration.ofSeconds(60);

    @TempDir
    Path directory;
    private TlsFixture tls;
    private final List<ServerConfig.Peer> peers = new ArrayList<>();
    private final Map<String, FencerServer> servers = new ConcurrentHashMap<>();
    private final Map<FencerServer, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final List<ManagedChannel> probes = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel channel : channels.values()) {
            TestServers.close(channel);
        }
        for (ManagedChannel channel : probes) {
            TestServers.close(channel);
        }
        servers.values().forEach(FencerServer::close);
    }

    @Test
    void failover_overMutualTls_electsNewLeaderAndTokensKeepIncreasing() throws Exception {
        startThreePeers(true);
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub leaderStub = stubOf(leader);
        TestSession session = openSession(leaderStub, TTL_MILLIS);
        AcquireResponse first = acquire(leaderStub, session, "orders", 0);
        release(leaderStub, session, first.getToken());
        AcquireResponse held = acquire(leaderStub, session, "orders", 0);

        servers.values().remove(leader);
        leader.close();
        FencerServer newLeader = awaitLeader();
        LocksGrpc.LocksBlockingStub newStub = stubOf(newLeader);
        release(newStub, session, held.getToken()); // the grant was replicated: the new leader knows it
        AcquireResponse after = acquire(newStub, openSession(newStub, TTL_MILLIS), "orders", 0);

        assertThat(newLeader).isNotSameAs(leader);
        assertThat(held.getToken().getValue()).isGreaterThan(first.getToken().getValue());
        assertThat(after.getToken().getValue()).isGreaterThan(held.getToken().getValue());
    }

    @Test
    void raftPort_clientWithoutPeerCertificate_isRefusedAtTheHandshake() throws Exception {
        startThreePeers(true);
        awaitLeader();
        int raftPort = peers.get(0).raftPort();

        StatusRuntimeException asPeer = healthCheck(tls.channel(raftPort, tls.server()));
        StatusRuntimeException anonymous = healthCheck(tls.channel(raftPort, null));
        StatusRuntimeException foreign = healthCheck(tls.channel(raftPort, TlsFixture.foreignClient("n9")));
        StatusRuntimeException plaintext = healthCheck(TestServers.channel(raftPort));

        assertThat(asPeer.getStatus().getCode()).as("the TLS connection stands: Ratis serves no health service")
                .isEqualTo(Status.Code.UNIMPLEMENTED);
        for (StatusRuntimeException refused : List.of(anonymous, foreign)) {
            assertThat(refused.getStatus().getCode()).as("%s", refused).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(causes(refused)).as("%s", refused).hasAtLeastOneElementOfType(SSLException.class);
        }
        assertThat(plaintext.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void start_groupWithTlsButNoCa_isRefusedSayingPeersNeedIt() throws Exception {
        tls = TlsFixture.create(directory.resolve("certs"));
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", TestServers.freePort(), TestServers.freePort()));
        }
        ServerConfig config = ServerConfig.defaults(directory.resolve("n1")).withPorts(0, -1, 0)
                .withPeers("n1", peers).withTls(tls.serverFiles(false));

        assertThatThrownBy(() -> FencerServer.start(config)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("TLS in a group of 3 peers needs a CA (the client CA): peers present certificates of it "
                        + "to each other on the Raft port");
    }

    private void startThreePeers(boolean clientCertificatesRequired) throws Exception {
        tls = TlsFixture.create(directory.resolve("certs"));
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", TestServers.freePort(), TestServers.freePort()));
        }
        for (ServerConfig.Peer peer : peers) {
            ServerConfig config = ServerConfig.defaults(directory.resolve(peer.id())).withPorts(0, -1, 0)
                    .withPeers(peer.id(), peers).withTls(tls.serverFiles(clientCertificatesRequired));
            servers.put(peer.id(), FencerServer.start(config));
        }
    }

    /**
     * Waits until one live peer leads and serves, and returns it. A leader that loses its leadership while it is
     * being checked (two elections in a row on a loaded machine) is not waited for: the next one is checked.
     */
    private FencerServer awaitLeader() {
        AtomicReference<FencerServer> serving = new AtomicReference<>();
        await().atMost(ELECTION_MAX).pollInterval(Duration.ofMillis(50)).ignoreExceptions().until(() -> {
            FencerServer leader = servers.values().stream().filter(FencerServer::isLeader).findFirst().orElseThrow();
            ManagedChannel channel = channelOf(leader);
            TestServers.stub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                    .describe(DescribeRequest.newBuilder().setLock("warm-up").build());
            boolean keepAlivesServed = TestServers.keepAliveOnce(channel, Long.MAX_VALUE).getExpired();
            serving.set(leader);
            return keepAlivesServed && leader.isLeader();
        });
        return serving.get();
    }

    private ManagedChannel channelOf(FencerServer server) {
        return channels.computeIfAbsent(server, peer -> tls.channel(peer.port(), tls.client("app")));
    }

    private LocksGrpc.LocksBlockingStub stubOf(FencerServer server) {
        return TestServers.stub(channelOf(server));
    }

    private StatusRuntimeException healthCheck(ManagedChannel channel) {
        probes.add(channel);
        StatusRuntimeException failed = catchThrowableOfType(StatusRuntimeException.class, () -> HealthGrpc
                .newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance()));
        assertThat(failed).as("the health check should have failed").isNotNull();
        return failed;
    }

    private static List<Throwable> causes(Throwable error) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable cause = error; cause != null && chain.size() < 16; cause = cause.getCause()) {
            chain.add(cause);
        }
        return chain;
    }
}

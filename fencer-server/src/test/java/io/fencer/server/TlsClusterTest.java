package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.server.TestServers.TestSession;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.testing.FreePorts;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three peers in one JVM with TLS on every port: the group forms over mutual TLS on the Raft port (with the group
 * secret's handshake too), serves locks to TLS clients, and fails over with tokens still increasing. The Raft port
 * admits only a peer's server certificate: no certificate, another CA's, a client certificate of the group's own CA
 * and plaintext are all refused before any call is read; with a secret, a peer's certificate alone is refused too.
 */
class TlsClusterTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration ELECTION_MAX = Duration.ofSeconds(60);

    @TempDir
    Path directory;
    private TestTls tls;
    private final List<ServerConfig.Peer> peers = new ArrayList<>();
    private final Map<String, FencerServer> servers = new ConcurrentHashMap<>();
    private final Map<FencerServer, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final byte[] secret = TestServers.newSecretBytes();

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel channel : channels.values()) {
            TestServers.close(channel);
        }
        servers.values().forEach(FencerServer::close);
    }

    @Test
    void failover_overMutualTlsAndTheGroupSecret_electsNewLeaderAndTokensKeepIncreasing() throws Exception {
        startThreePeers(true, TestServers.groupSecret(secret));
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
    void raftPort_anythingButAPeersServerCertificate_isRefusedBeforeAnyCall() throws Exception {
        startThreePeers(true, PeerAuth.tlsOnly());
        awaitLeader();
        int raftPort = peers.get(0).raftPort();

        RaftPortProbe asPeer = RaftPortProbe.overTls(tls.jdkContext(tls.server()), raftPort);
        RaftPortProbe clientOfTheCa = RaftPortProbe.overTls(tls.jdkContext(tls.client("app")), raftPort);
        RaftPortProbe anonymous = RaftPortProbe.overTls(tls.jdkContext(null), raftPort);
        RaftPortProbe foreign = RaftPortProbe.overTls(tls.jdkContext(TestTls.foreignClient("n9")), raftPort);
        RaftPortProbe plaintext = RaftPortProbe.plaintext(raftPort);

        assertThat(asPeer.answer).as("a peer's certificate is admitted: its call of an unknown kind is answered")
                .contains("no call of kind 99 is served on the Raft port");
        assertThat(clientOfTheCa.answer).as("a client certificate of the group's own CA: %s", clientOfTheCa.failure)
                .isNull();
        assertThat(clientOfTheCa.handshakeCompleted).as("the fault was exercised: its handshake passed").isTrue();
        for (RaftPortProbe refused : List.of(anonymous, foreign)) {
            assertThat(refused.answer).isNull();
            assertThat(causes(refused.failure)).as("%s", refused.failure)
                    .hasAtLeastOneElementOfType(SSLException.class);
        }
        assertThat(plaintext.answer).as("plaintext on the Raft port").isNull();
        // The group still serves after the probes.
        FencerServer leader = awaitLeader();
        TestSession session = openSession(stubOf(leader), TTL_MILLIS);
        AcquireResponse held = acquire(stubOf(leader), session, "after-probes", 0);
        assertThat(held.hasToken()).isTrue();
    }

    /**
     * One connection to a Raft port that sends a call of an unknown kind (99) in the peer transport's framing and
     * reads what comes back: the refusal's reason when the caller was admitted, else null with the failure seen.
     */
    private static final class RaftPortProbe {
        final String answer;
        final Throwable failure;
        final boolean handshakeCompleted;

        private RaftPortProbe(String answer, Throwable failure, boolean handshakeCompleted) {
            this.answer = answer;
            this.failure = failure;
            this.handshakeCompleted = handshakeCompleted;
        }

        static RaftPortProbe overTls(SSLContext context, int port) {
            boolean handshakeCompleted = false;
            try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", port)) {
                socket.setSoTimeout(20_000);
                socket.startHandshake();
                handshakeCompleted = true;
                return new RaftPortProbe(RaftPortFrames.callUnknownKind(socket, 7), null, true);
            } catch (IOException e) {
                return new RaftPortProbe(null, e, handshakeCompleted);
            }
        }

        static RaftPortProbe plaintext(int port) {
            try (Socket socket = new Socket("127.0.0.1", port)) {
                socket.setSoTimeout(20_000);
                return new RaftPortProbe(RaftPortFrames.callUnknownKind(socket, 7), null, false);
            } catch (IOException e) {
                return new RaftPortProbe(null, e, false);
            }
        }
    }

    @Test
    void start_groupWithTlsButNoCa_isRefusedSayingPeersNeedIt() throws Exception {
        tls = TestTls.create(directory.resolve("certs"));
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        ServerConfig config = ServerConfig.defaults(directory.resolve("n1")).withPorts(0, -1, 0)
                .withPeers("n1", peers).withTls(tls.serverFiles(false));

        assertThatThrownBy(() -> FencerServer.start(config)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("TLS in a group of 3 peers needs a CA (the client CA): peers present certificates of it "
                        + "to each other on the Raft port");
    }

    /**
     * With TLS and a group secret both are required: a peer's certificate without the handshake is refused, the
     * handshake over a peer's TLS admitted.
     */
    @Test
    void raftPort_withTlsAndASecret_refusesAPeersCertificateWithoutTheSecret() throws Exception {
        startThreePeers(true, TestServers.groupSecret(secret));
        awaitLeader();
        int raftPort = peers.get(0).raftPort();
        SSLContext asPeer = tls.jdkContext(tls.server());

        try (SSLSocket withoutSecret = (SSLSocket) asPeer.getSocketFactory().createSocket("127.0.0.1", raftPort)) {
            withoutSecret.setSoTimeout(20_000);
            withoutSecret.startHandshake();
            RaftPortFrames.write(withoutSecret, RaftPortFrames.UNKNOWN_KIND, 7, new byte[0]);
            assertThat(RaftPortFrames.closedAfterHello(withoutSecret)).as("a peer's certificate, no secret").isTrue();
        }
        try (SSLSocket withSecret = (SSLSocket) asPeer.getSocketFactory().createSocket("127.0.0.1", raftPort)) {
            withSecret.setSoTimeout(20_000);
            withSecret.startHandshake();
            RaftPortFrames.handshake(withSecret, secret, "n9", "n1");
            assertThat(RaftPortFrames.callUnknownKind(withSecret, 7)).as("a peer's certificate and the secret")
                    .contains("no call of kind 99 is served on the Raft port");
        }
    }

    private void startThreePeers(boolean clientCertificatesRequired, PeerAuth peerAuth) throws Exception {
        tls = TestTls.create(directory.resolve("certs"));
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        for (ServerConfig.Peer peer : peers) {
            ServerConfig config = ServerConfig.defaults(directory.resolve(peer.id())).withPorts(0, -1, 0)
                    .withPeers(peer.id(), peers).withTls(tls.serverFiles(clientCertificatesRequired))
                    .withPeerAuth(peerAuth);
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

    private static List<Throwable> causes(Throwable error) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable cause = error; cause != null && chain.size() < 16; cause = cause.getCause()) {
            chain.add(cause);
        }
        return chain;
    }
}

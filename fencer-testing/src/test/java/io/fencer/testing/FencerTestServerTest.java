package io.fencer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FencerTestServerTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration EXPIRY_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;

    @Test
    void start_aDataDirectory_leadsAndGrantsOnItsEndpoint() {
        try (FencerTestServer server = FencerTestServer.start(dataDir);
                FencerClient client = Fencer.connect(server.endpoint())) {
            assertThat(server.isRunning()).isTrue();
            assertThat(server.server().isLeader()).isTrue();
            assertThat(server.endpoint()).isEqualTo("127.0.0.1:" + server.port());
            assertThat(server.server().port()).isEqualTo(server.port());
            assertThat(server.server().adminPort()).as("the admin port is off").isEqualTo(-1);

            try (Session session = client.openSession(TTL); Grant grant = session.lock("orders").acquire(TTL)) {
                assertThat(grant.token().value()).isPositive();
            }
        }
    }

    /**
     * Servers started and closed beside another in the same JVM (as {@code FencerExtensionTest}'s nested classes do,
     * with the same peer ids) leave it serving.
     */
    @Test
    void start_anotherServerStartedAndClosedMeanwhile_keepsServing(@TempDir Path otherDir) {
        try (FencerTestServer server = FencerTestServer.start(dataDir);
                FencerClient client = Fencer.connect(server.endpoint())) {
            try (FencerTestServer other = FencerTestServer.start(otherDir.resolve("server"))) {
                assertThat(other.server().isLeader()).isTrue();
            }
            try (FencerTestCluster cluster = FencerTestCluster.start(otherDir.resolve("cluster"), 3)) {
                assertThat(cluster.leader().isLeader()).isTrue();
            }
            try (Session session = client.openSession(TTL); Grant grant = session.lock("orders").acquire(TTL)) {
                assertThat(grant.token().value()).isPositive();
            }
        }
    }

    @Test
    void restart_afterAStop_keepsThePortAndTheDataAndTokensGoOnIncreasing() {
        try (FencerTestServer server = FencerTestServer.start(dataDir)) {
            FencingToken before;
            try (FencerClient client = Fencer.connect(server.endpoint()); Session session = client.openSession(TTL);
                    Grant grant = session.lock("orders").acquire(TTL)) {
                before = grant.token();
            }
            int port = server.port();

            server.stop();
            assertThat(server.isRunning()).isFalse();
            assertThat(connects(port)).as("a stopped server's port refuses connections").isFalse();
            assertThatThrownBy(server::server).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("stopped");
            server.restart();

            assertThat(server.port()).isEqualTo(port);
            assertThat(server.server().isLeader()).isTrue();
            try (FencerClient client = Fencer.connect(server.endpoint()); Session session = client.openSession(TTL);
                    Grant after = session.lock("orders").acquire(TTL)) {
                assertThat(client.describe("orders").lastToken()).isEqualTo(after.token().value());
                assertThat(after.token().value()).as("the counter survived the restart")
                        .isGreaterThan(before.value());
            }
        }
    }

    @Test
    void builder_aManualTicker_expiresASessionWhenAdvancedPastItsTtl() {
        ManualTicker serverTicker = new ManualTicker();
        // The client's own ticker never moves: no keepalive falls due, as in a paused process.
        ManualTicker clientTicker = new ManualTicker();
        try (FencerTestServer server = FencerTestServer.builder(dataDir).ticker(serverTicker).start();
                FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(clientTicker).build()) {
            Session session = client.openSession(TTL);
            FencingToken held = session.lock("orders").acquire(TTL).token();
            assertThat(client.describe("orders").holder()).isEqualTo(held);

            serverTicker.advance(TTL.plusSeconds(1));

            InProcessPeer.await(() -> client.describe("orders").holder() == null, EXPIRY_MAX,
                    () -> "the lock of the expired session was not freed");
        }
    }

    @Test
    void builder_aConfigCustomiser_appliesAtEveryStart() {
        try (FencerTestServer server = FencerTestServer.builder(dataDir).config(config -> config.withHttpPort(0))
                .start()) {
            assertThat(server.server().httpPort()).isPositive();

            server.restart();

            assertThat(server.server().httpPort()).isPositive();
        }
    }

    @Test
    void builder_startupMaxNotPositive_throwsNamingIt() {
        assertThatThrownBy(() -> FencerTestServer.builder(dataDir).startupMax(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
    }

    static boolean connects(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
            return true;
        } catch (IOException refused) {
            return false;
        }
    }
}

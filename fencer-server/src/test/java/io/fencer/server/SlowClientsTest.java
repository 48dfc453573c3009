package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.ListRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.net.PortLimits;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.SocketFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Slow clients against a real server with short timeouts: a client that sends one byte of a request (or of a TLS
 * handshake) and stalls holds its own connection until its timeout, and nothing else: the port answers everyone
 * else meanwhile, then closes the stalled connection and counts it.
 */
class SlowClientsTest {
    /** Long enough to see the port answer others while the stalled connections are still open; short for a test. */
    private static final Duration HEADER_TIMEOUT = Duration.ofSeconds(3);
    private static final PortLimits SHORT = PortLimits.DEFAULT.withHandshakeTimeout(Duration.ofSeconds(3))
            .withHttpTimeouts(HEADER_TIMEOUT, Duration.ofSeconds(3), Duration.ofSeconds(2));
    private static final Duration ANSWER_MAX = Duration.ofSeconds(1);
    private static final Duration CLOSE_MAX = Duration.ofSeconds(20);
    private static final String HERE = "127.0.0.1";

    @TempDir
    static Path directory;
    private static FencerServer server;
    private static ManagedChannel channel;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(directory.resolve("data"), new ManualTicker())
                .withHttpPort(0).withPortLimits(SHORT));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        // Warm the paths measured below, so that their first answers do not include the JIT's work.
        RawHttp.call(HERE, server.adminPort(), RawHttp.get("/metrics", false), Duration.ofSeconds(20));
        RawHttp.call(HERE, server.httpPort(), RawHttp.post("Locks/List", "{}", false), Duration.ofSeconds(20));
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void adminPort_eightClientsSendingOneByte_healthAndMetricsAnswerAndTheyAreClosedAfterTheHeaderTimeout()
            throws Exception {
        List<Socket> slow = oneByteClients(server.adminPort(), 8);
        try {
            RawHttp.Reply health = RawHttp.call(HERE, server.adminPort(), RawHttp.get("/healthz", false), ANSWER_MAX);
            RawHttp.Reply metrics = RawHttp.call(HERE, server.adminPort(), RawHttp.get("/metrics", false),
                    ANSWER_MAX);

            assertThat(health.status()).isEqualTo(200);
            assertThat(health.body()).contains("\"status\":\"ok\"");
            assertThat(metrics.status()).isEqualTo(200);
            assertThat(openConnections(metrics.body(), "admin")).as("the stalled ones and this one")
                    .isGreaterThanOrEqualTo(9);
            for (Socket socket : slow) {
                assertThat(RawHttp.closedByServer(socket, CLOSE_MAX)).as("closed after the header timeout").isTrue();
            }
            String after = RawHttp.call(HERE, server.adminPort(), RawHttp.get("/metrics", false), CLOSE_MAX).body();
            assertThat(counter(after, "fencer_connections_timed_out_total", "phase=\"headers\",port=\"admin\""))
                    .isGreaterThanOrEqualTo(8);
        } finally {
            closeAll(slow);
        }
    }

    @Test
    void httpPort_eightClientsSendingOneByte_connectCallsAnswerAndTheyAreClosedAfterTheHeaderTimeout()
            throws Exception {
        List<Socket> slow = oneByteClients(server.httpPort(), 8);
        try {
            RawHttp.Reply listed = RawHttp.call(HERE, server.httpPort(), RawHttp.post("Locks/List", "{}", false),
                    ANSWER_MAX);

            assertThat(listed.status()).as(listed.body()).isEqualTo(200);
            for (Socket socket : slow) {
                assertThat(RawHttp.closedByServer(socket, CLOSE_MAX)).as("closed after the header timeout").isTrue();
            }
        } finally {
            closeAll(slow);
        }
    }

    @Test
    void keepAlive_idleLongerThanTheIdleTimeout_isClosedAndServedUntilThen() throws Exception {
        try (Socket kept = RawHttp.connect(HERE, server.adminPort())) {
            RawHttp.Reply first = RawHttp.exchange(kept, RawHttp.get("/healthz", true), CLOSE_MAX);
            RawHttp.Reply second = RawHttp.exchange(kept, RawHttp.get("/healthz", true), CLOSE_MAX);

            assertThat(first.status()).isEqualTo(200);
            assertThat(second.status()).as("the connection is kept between requests").isEqualTo(200);
            assertThat(RawHttp.closedByServer(kept, CLOSE_MAX)).as("closed after the idle timeout").isTrue();
        }
    }

    @Test
    void grpcPort_connectionThatSendsNothing_isClosedAfterTheHandshakeTimeoutWhileCallsAreServed() throws Exception {
        try (Socket silent = RawHttp.connect(HERE, server.port())) {
            assertThat(TestServers.stub(channel).list(ListRequest.getDefaultInstance())).isNotNull();
            assertThat(RawHttp.closedByServer(silent, CLOSE_MAX)).as("no HTTP/2 preface within the timeout")
                    .isTrue();
        }
    }

    @Test
    void tls_eightStalledHandshakes_holdNoThreadAndAreClosedAfterTheHandshakeTimeout() throws Exception {
        TestTls tls = TestTls.create(directory.resolve("certs"));
        ServerConfig config = TestServers.singlePeer(directory.resolve("tls-data"), new ManualTicker())
                .withTls(tls.serverFiles(true)).withPortLimits(SHORT);
        try (FencerServer tlsServer = FencerServer.start(config)) {
            SocketFactory ops = tls.jdkContext(tls.client("ops")).getSocketFactory();
            RawHttp.Reply warm = RawHttp.exchange(RawHttp.connect(ops, HERE, tlsServer.adminPort()),
                    RawHttp.get("/metrics", false), Duration.ofSeconds(20));
            assertThat(warm.status()).isEqualTo(200);
            List<Socket> stalled = oneByteClients(tlsServer.adminPort(), 8); // one byte of a ClientHello, no more
            try (Socket client = RawHttp.connect(ops, HERE, tlsServer.adminPort())) {
                RawHttp.Reply metrics = RawHttp.exchange(client, RawHttp.get("/metrics", false), ANSWER_MAX);

                assertThat(metrics.status()).as("a client with a certificate is answered").isEqualTo(200);
                for (Socket socket : stalled) {
                    assertThat(RawHttp.closedByServer(socket, CLOSE_MAX)).as("closed after the handshake timeout")
                            .isTrue();
                }
                String after = RawHttp.exchange(RawHttp.connect(ops, HERE, tlsServer.adminPort()),
                        RawHttp.get("/metrics", false), CLOSE_MAX).body();
                assertThat(counter(after, "fencer_connections_timed_out_total",
                        "phase=\"handshake\",port=\"admin\"")).isGreaterThanOrEqualTo(8);
            } finally {
                closeAll(stalled);
            }
        }
    }

    private static List<Socket> oneByteClients(int port, int count) throws IOException {
        List<Socket> sockets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sockets.add(RawHttp.oneByte(HERE, port));
        }
        return sockets;
    }

    private static void closeAll(List<Socket> sockets) throws IOException {
        for (Socket socket : sockets) {
            socket.close();
        }
    }

    /** Returns the gauge of open connections of {@code port} from a Prometheus text. */
    static double openConnections(String metrics, String port) {
        return counter(metrics, "fencer_connections_open", "port=\"" + port + "\"");
    }

    /** Returns the value of the sample {@code name{labels}} (labels in Prometheus's order) of a text, 0 if absent. */
    static double counter(String metrics, String name, String labels) {
        Matcher sample = Pattern.compile("(?m)^" + Pattern.quote(name + "{" + labels + "}") + " (\\S+)$")
                .matcher(metrics);
        return sample.find() ? Double.parseDouble(sample.group(1)) : 0;
    }
}

package io.fencer.it;

import static io.fencer.server.RawHttp.OTHER_ADDRESS;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.server.RawHttp;
import io.fencer.testing.FreePorts;
import io.grpc.Attributes;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Slow clients and connection floods against a real {@code fencer server} process with its default timeouts: clients
 * that open a connection to the admin or HTTP port, send one byte and stay (one, then eight, then more than the cap
 * per address) cost their own connections only: health checks, scrapes and Connect calls of another client are
 * answered within a second; beyond the cap per address, new connections are closed at once, the ones open keep
 * working, and a client from another address (127.0.0.2) is served; the gRPC port caps its connections the same way.
 */
@Isolated
class SlowClientsProcessTest {
    /** Small, so that the test goes past it with a few connections; the default is 256 (512 for gRPC). */
    private static final int PER_ADDRESS_MAX = 16;
    private static final Duration ANSWER_MAX = Duration.ofSeconds(1);
    private static final Duration CALL_MAX = Duration.ofSeconds(30);
    private static final String HERE = "127.0.0.1";

    @TempDir
    Path dir;
    private FencerProcess server;
    private FencerProcess.Ports ports;
    private int httpPort;
    private final List<Socket> sockets = new ArrayList<>();

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        httpPort = FreePorts.choose(1)[0];
        server = FencerProcess.server("server", dir.resolve("data"), ports, "--http-port", Integer.toString(httpPort),
                "--http-connections-per-address-max", Integer.toString(PER_ADDRESS_MAX),
                "--grpc-connections-per-address-max", Integer.toString(PER_ADDRESS_MAX));
        server.awaitHealthy(ports.admin());
        // Warm the paths measured below from both addresses, so that their first answers carry no JIT work.
        for (String source : List.of(HERE, OTHER_ADDRESS)) {
            RawHttp.call(source, ports.admin(), RawHttp.get("/metrics", false), CALL_MAX);
            RawHttp.call(source, ports.admin(), RawHttp.get("/healthz", false), CALL_MAX);
            RawHttp.call(source, httpPort, RawHttp.post("Locks/List", "{}", false), CALL_MAX);
        }
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket socket : sockets) {
            socket.close();
        }
        server.close();
    }

    @Test
    void adminPort_clientsSendingOneByte_healthAndMetricsAnswerWithinASecondAndPastTheCapNewOnesAreClosed()
            throws Exception {
        Socket kept = RawHttp.connect(HERE, ports.admin());
        sockets.add(kept);
        assertThat(RawHttp.exchange(kept, RawHttp.get("/healthz", true), CALL_MAX).status()).isEqualTo(200);

        Socket first = oneByteClients(ports.admin(), 1).get(0);
        assertAdminAnswers(HERE, "one client sending one byte");
        oneByteClients(ports.admin(), 7);
        assertAdminAnswers(HERE, "eight clients sending one byte");
        List<Socket> flood = oneByteClients(ports.admin(), PER_ADDRESS_MAX);
        assertAdminAnswers(OTHER_ADDRESS, "the cap of 127.0.0.1 full");

        assertCapHeld(flood, ports.admin());
        assertThat(RawHttp.exchange(kept, RawHttp.get("/healthz", true), CALL_MAX).status())
                .as("the connection open before the flood keeps working").isEqualTo(200);
        String metrics = RawHttp.call(OTHER_ADDRESS, ports.admin(), RawHttp.get("/metrics", false), CALL_MAX).body();
        assertThat(sample(metrics, "fencer_connections_refused_total{cap=\"per_address\",port=\"admin\"}"))
                .isGreaterThanOrEqualTo(1);
        assertThat(RawHttp.closedByServer(first, Duration.ofSeconds(30)))
                .as("the first slow client is closed after the header timeout (5 s by default)").isTrue();
    }

    @Test
    void httpPort_clientsSendingOneByte_connectCallsAnswerWithinASecondAndPastTheCapNewOnesAreClosed()
            throws Exception {
        Socket kept = RawHttp.connect(HERE, httpPort);
        sockets.add(kept);
        assertThat(RawHttp.exchange(kept, RawHttp.post("Locks/List", "{}", true), CALL_MAX).status()).isEqualTo(200);

        oneByteClients(httpPort, 1);
        assertConnectAnswers(HERE, "one client sending one byte");
        oneByteClients(httpPort, 7);
        assertConnectAnswers(HERE, "eight clients sending one byte");
        List<Socket> flood = oneByteClients(httpPort, PER_ADDRESS_MAX);
        assertConnectAnswers(OTHER_ADDRESS, "the cap of 127.0.0.1 full");

        assertCapHeld(flood, httpPort);
        assertThat(RawHttp.exchange(kept, RawHttp.post("Locks/List", "{}", true), CALL_MAX).status())
                .as("the connection open before the flood keeps working").isEqualTo(200);
    }

    @Test
    void grpcPort_pastThePerAddressCap_newConnectionsClosedAtOnceWhileOthersAreServed() throws Exception {
        ManagedChannel existing = channelFrom(HERE);
        ManagedChannel other = channelFrom(OTHER_ADDRESS);
        try {
            assertThat(call(existing)).as("its connection is one of the cap").isTrue();
            List<Socket> silent = connections(ports.client(), PER_ADDRESS_MAX - 1);
            List<Socket> over = connections(ports.client(), 4);

            for (Socket socket : over) {
                assertThat(RawHttp.closedByServer(socket, Duration.ofSeconds(2))).as("closed at once").isTrue();
            }
            assertThat(silent).as("the ones within the cap are open")
                    .noneMatch(socket -> closedWithin(socket, Duration.ofMillis(50)));
            assertThat(call(existing)).as("the connection open before keeps working").isTrue();
            assertThat(call(other)).as("a client from another address is served").isTrue();
            String metrics = RawHttp.call(OTHER_ADDRESS, ports.admin(), RawHttp.get("/metrics", false), CALL_MAX)
                    .body();
            assertThat(sample(metrics, "fencer_connections_refused_total{cap=\"per_address\",port=\"grpc\"}"))
                    .isGreaterThanOrEqualTo(4);
        } finally {
            existing.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            other.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** Asserts that /healthz and /metrics answer a new connection from {@code source} within a second each. */
    private void assertAdminAnswers(String source, String situation) throws IOException {
        for (String path : List.of("/healthz", "/metrics")) {
            long started = System.nanoTime();
            RawHttp.Reply reply = RawHttp.call(source, ports.admin(), RawHttp.get(path, false), ANSWER_MAX);
            assertThat(reply.status()).as("%s with %s", path, situation).isEqualTo(200);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("%s with %s", path, situation)
                    .isLessThan(ANSWER_MAX);
        }
    }

    /** Asserts that a Connect call on a new connection from {@code source} is answered within a second. */
    private void assertConnectAnswers(String source, String situation) throws IOException {
        long started = System.nanoTime();
        RawHttp.Reply reply = RawHttp.call(source, httpPort, RawHttp.post("Locks/List", "{}", false), ANSWER_MAX);
        assertThat(reply.status()).as("Locks/List with %s: %s", situation, reply.body()).isEqualTo(200);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("Locks/List with %s", situation)
                .isLessThan(ANSWER_MAX);
    }

    /**
     * Asserts that after a flood from 127.0.0.1 at most the cap of its connections are open on the port and the
     * rest of the flood was closed: every connection the test opened from 127.0.0.1 and still holds is counted.
     */
    private void assertCapHeld(List<Socket> flood, int port) throws IOException {
        FencerProcess.pause(300); // the refused ones are closed as they are accepted; give the closes time to land
        long closedOfFlood = flood.stream().filter(socket -> closedWithin(socket, Duration.ofMillis(20))).count();
        long openFromHere = sockets.stream().filter(socket -> socket.getPort() == port)
                .filter(socket -> !socket.isClosed() && !closedWithin(socket, Duration.ofMillis(20))).count();
        assertThat(closedOfFlood).as("connections of the flood closed at once").isGreaterThanOrEqualTo(1);
        assertThat(openFromHere).as("connections from 127.0.0.1 still open").isLessThanOrEqualTo(PER_ADDRESS_MAX);
    }

    private static boolean closedWithin(Socket socket, Duration timeout) {
        try {
            return RawHttp.closedByServer(socket, timeout);
        } catch (IOException e) {
            return true;
        }
    }

    private List<Socket> oneByteClients(int port, int count) throws IOException {
        List<Socket> opened = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            opened.add(RawHttp.oneByte(HERE, port));
        }
        sockets.addAll(opened);
        return opened;
    }

    private List<Socket> connections(int port, int count) throws IOException {
        List<Socket> opened = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            opened.add(RawHttp.connect(HERE, port));
        }
        sockets.addAll(opened);
        return opened;
    }

    private static boolean call(ManagedChannel channel) {
        return LocksGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .list(ListRequest.getDefaultInstance()) != null;
    }

    /** Returns a plaintext channel to the server whose connections come from {@code source}. */
    private ManagedChannel channelFrom(String source) {
        return NettyChannelBuilder.forAddress(HERE, ports.client()).usePlaintext()
                .localSocketPicker(new NettyChannelBuilder.LocalSocketPicker() {
                    @Override
                    public SocketAddress createSocketAddress(SocketAddress remote, Attributes attributes) {
                        return new InetSocketAddress(source, 0);
                    }
                }).build();
    }

    /** Returns the value of one sample (its name and labels as Prometheus writes them) of a text; 0 if absent. */
    private static double sample(String metrics, String nameAndLabels) {
        Matcher matcher = Pattern.compile("(?m)^" + Pattern.quote(nameAndLabels) + " (\\S+)$").matcher(metrics);
        return matcher.find() ? Double.parseDouble(matcher.group(1)) : 0;
    }
}

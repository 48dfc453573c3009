package io.fencer.server;

import static io.fencer.server.RawHttp.OTHER_ADDRESS;
import static io.fencer.server.SlowClientsTest.counter;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.api.v1.ListRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.net.PortLimits;
import io.grpc.Attributes;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The connection caps of every port against a real server with a small cap per address: beyond it, a new
 * connection from that address is closed as it is accepted, the connections already open keep working, a client
 * from another address (127.0.0.2) is served, and the refusal is counted.
 */
class ConnectionCapServerTest {
    private static final int PER_ADDRESS_MAX = 4;
    /** The caps, and a header timeout long enough that the silent connections within the cap stay for the test. */
    private static final PortLimits CAPPED = PortLimits.DEFAULT.withHttpConnections(64, PER_ADDRESS_MAX)
            .withGrpcConnections(64, PER_ADDRESS_MAX)
            .withHttpTimeouts(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofSeconds(60));
    private static final Duration CALL_MAX = Duration.ofSeconds(20);
    private static final Duration REFUSAL_MAX = Duration.ofSeconds(2);
    private static final String HERE = "127.0.0.1";

    @TempDir
    static Path directory;
    private static FencerServer server;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(directory.resolve("data"), new ManualTicker())
                .withHttpPort(0).withPortLimits(CAPPED));
        ManagedChannel channel = TestServers.channel(server);
        try {
            TestServers.awaitServing(server, channel);
        } finally {
            TestServers.close(channel);
        }
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void adminPort_overThePerAddressCap_newConnectionClosedAtOnceWhileOthersAreServed() throws Exception {
        assertCapHolds(server.adminPort(), RawHttp.get("/healthz", true), "admin");
    }

    @Test
    void httpPort_overThePerAddressCap_newConnectionClosedAtOnceWhileOthersAreServed() throws Exception {
        assertCapHolds(server.httpPort(), RawHttp.post("Locks/List", "{}", true), "http");
    }

    /** Fills the cap from 127.0.0.1 with a kept-alive connection and silent ones, then tries one more. */
    private static void assertCapHolds(int port, String request, String portName) throws Exception {
        List<Socket> open = new ArrayList<>();
        try (Socket kept = RawHttp.connect(HERE, port)) {
            assertThat(RawHttp.exchange(kept, request, CALL_MAX).status()).isEqualTo(200);
            for (int i = 1; i < PER_ADDRESS_MAX; i++) {
                open.add(RawHttp.connect(HERE, port));
            }
            Socket over = RawHttp.connect(HERE, port); // the kernel accepts it; the port closes it at once
            open.add(over);

            boolean overClosed = RawHttp.closedByServer(over, REFUSAL_MAX);
            RawHttp.Reply existing = RawHttp.exchange(kept, request, CALL_MAX);
            RawHttp.Reply otherAddress = RawHttp.call(OTHER_ADDRESS, port, request, CALL_MAX);
            String metrics = RawHttp.call(OTHER_ADDRESS, server.adminPort(), RawHttp.get("/metrics", false),
                    CALL_MAX).body();

            assertThat(overClosed).as("the connection over the cap is closed at once").isTrue();
            assertThat(open.subList(0, PER_ADDRESS_MAX - 1)).as("the ones within the cap stay open")
                    .allSatisfy(socket -> assertThat(RawHttp.closedByServer(socket, Duration.ofMillis(200)))
                            .isFalse());
            assertThat(existing.status()).as("the connection open before keeps working").isEqualTo(200);
            assertThat(otherAddress.status()).as("a client from another address is served").isEqualTo(200);
            assertThat(counter(metrics, "fencer_connections_refused_total",
                    "cap=\"per_address\",port=\"" + portName + "\"")).isGreaterThanOrEqualTo(1);
        } finally {
            for (Socket socket : open) {
                socket.close();
            }
        }
    }

    @Test
    void grpcPort_overThePerAddressCap_newConnectionClosedAtOnceWhileOthersAreServed() throws Exception {
        ManagedChannel existing = TestServers.channel(server);
        ManagedChannel other = channelFrom(OTHER_ADDRESS);
        ManagedChannel late = channelFrom(HERE);
        List<Socket> open = new ArrayList<>();
        try {
            TestServers.stub(existing).list(ListRequest.getDefaultInstance()); // its connection: one of the cap
            for (int i = 1; i < PER_ADDRESS_MAX; i++) {
                open.add(RawHttp.connect(HERE, server.port()));
            }
            Socket over = RawHttp.connect(HERE, server.port());
            open.add(over);

            boolean overClosed = RawHttp.closedByServer(over, REFUSAL_MAX);
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> TestServers
                    .stub(late).withDeadlineAfter(3, TimeUnit.SECONDS).list(ListRequest.getDefaultInstance()));
            String metrics = RawHttp.call(OTHER_ADDRESS, server.adminPort(), RawHttp.get("/metrics", false),
                    CALL_MAX).body();

            assertThat(overClosed).as("the connection over the cap is closed at once").isTrue();
            assertThat(refused).as("a new client from the capped address is refused").isNotNull();
            assertThat(refused.getStatus().getCode()).isIn(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED);
            assertThat(TestServers.stub(existing).list(ListRequest.getDefaultInstance()))
                    .as("the connection open before keeps working").isNotNull();
            assertThat(TestServers.stub(other).list(ListRequest.getDefaultInstance()))
                    .as("a client from another address is served").isNotNull();
            assertThat(counter(metrics, "fencer_connections_refused_total", "cap=\"per_address\",port=\"grpc\""))
                    .isGreaterThanOrEqualTo(2);
        } finally {
            for (Socket socket : open) {
                socket.close();
            }
            TestServers.close(existing);
            TestServers.close(other);
            TestServers.close(late);
        }
    }

    /** Returns a plaintext channel to the server whose connections come from {@code source}. */
    static ManagedChannel channelFrom(String source) {
        return NettyChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext()
                .localSocketPicker(new NettyChannelBuilder.LocalSocketPicker() {
                    @Override
                    public SocketAddress createSocketAddress(SocketAddress remote, Attributes attributes) {
                        return new InetSocketAddress(source, 0);
                    }
                }).build();
    }
}

package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.LocksGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class UnaryCallsTest {
    private static final DescribeRequest DESCRIBE = DescribeRequest.newBuilder().setLock("orders").build();

    private ManagedChannel channel;

    @AfterEach
    void tearDown() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Regression: an attempt that a retry pause left no time for (0 ms, on a loaded machine) failed DEADLINE_EXCEEDED
     * before the refused connection did, and the call's error said a server may have seen it: "no leader answered
     * ... a read, it changed nothing" instead of "cannot connect ...; nothing was sent".
     */
    @Test
    void call_deadlinePassesBeforeAnyConnection_failsKnownNeverSent() {
        channel = channelTo(FakeServer.refusedEndpoint());

        StatusRuntimeException failure = describe(1);

        assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(failure.getStatus().getDescription())
                .isEqualTo("no connection to the peer within 0 ms (enforced by the client)");
        assertThat(Unreachable.neverSent(failure)).isTrue();
        assertThat(Unreachable.is(failure)).as("not a refusal: the unreachable timeout does not count it").isFalse();
    }

    @Test
    void call_peerAcceptsTheConnectionButNeverSpeaksHttp2_failsKnownNeverSent() throws IOException {
        // The kernel completes connections into the backlog of a socket nobody accepts from: gRPC's transport
        // waits for the server's HTTP/2 settings, and the call waits for the transport.
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"))) {
            channel = channelTo("127.0.0.1:" + silent.getLocalPort());

            StatusRuntimeException failure = describe(MILLISECONDS.toNanos(300));

            assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(failure.getStatus().getDescription()).startsWith("no connection to the peer within 300 ms");
            assertThat(Unreachable.neverSent(failure)).isTrue();
        }
    }

    /** The control: the same deadline on a call the server received may have been seen, and says so. */
    @Test
    void call_connectedServerNeverAnswers_failsDeadlineThatMayHaveBeenSeen() {
        try (FakeServer server = FakeServer.start()) {
            channel = channelTo(server.endpoint());
            // connected first: a loaded machine's first connection (class loading, the HTTP/2 handshake) may take longer
            // than the deadline below, and this test is about a call that left
            UnaryCalls.call(channel, LocksGrpc.getDescribeMethod(), DESCRIBE, TimeUnit.SECONDS.toNanos(30));
            server.locks.silent = true;

            StatusRuntimeException failure = describe(MILLISECONDS.toNanos(300));

            assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(failure.getStatus().getDescription())
                    .isEqualTo("deadline exceeded after 300 ms (enforced by the client)");
            assertThat(Unreachable.neverSent(failure)).isFalse();
            assertThat(server.locks.count("Describe")).as("the server got both calls").isEqualTo(2);
            await().atMost(Duration.ofSeconds(5))
                    .untilAsserted(() -> assertThat(server.locks.cancelledCalls).containsExactly("Describe"));
        }
    }

    private StatusRuntimeException describe(long timeoutNanos) {
        return catchThrowableOfType(StatusRuntimeException.class,
                () -> UnaryCalls.call(channel, LocksGrpc.getDescribeMethod(), DESCRIBE, timeoutNanos));
    }

    private static ManagedChannel channelTo(String endpoint) {
        return NettyChannelBuilder.forTarget(endpoint).usePlaintext().disableRetry().build();
    }
}

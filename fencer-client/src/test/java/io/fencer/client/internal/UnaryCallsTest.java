package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.Ticker;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ClientStreamTracer;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class UnaryCallsTest {
    private static final DescribeRequest DESCRIBE = DescribeRequest.newBuilder().setLock("orders").build();

    private static final long TIMEOUT_NANOS = MILLISECONDS.toNanos(500);
    private static final AcquireRequest ACQUIRE = AcquireRequest.newBuilder().setSessionId(3).setLock("orders")
            .setRequestId("r-1").setWaitMillis(0).build();
    private static final AcquireResponse GRANT = AcquireResponse.newBuilder().setAcquired(true)
            .setToken(FakeLocks.token("orders", 41)).build();

    private ManagedChannel channel;
    /** The client transport's one thread, when a test makes it: it tells when an answer reached the client. */
    private EventLoopGroup clientTransport;

    @AfterEach
    void tearDown() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (clientTransport != null) {
            clientTransport.shutdownGracefully(0, 0, TimeUnit.SECONDS);
        }
    }

    /**
     * A server whose Acquire answers with a grant once {@link #answer()} lets it, and a channel to it whose transport
     * runs on one thread of the test's: {@link #answer()} returns once the whole answer (message and end) reached
     * the client and waits, queued, for the calling thread, which has not looked since: the moment a call's deadline
     * or abort can meet it.
     */
    private final class AnswerOnCue implements AutoCloseable {
        final FakeServer server = FakeServer.start();
        private final CountDownLatch answerLetGo = new CountDownLatch(1);
        private final CountDownLatch streamEnded = new CountDownLatch(1);
        private final Channel traced;

        AnswerOnCue() {
            server.locks.onAcquire = request -> {
                answerLetGo.await();
                return GRANT;
            };
            clientTransport = new NioEventLoopGroup(1);
            channel = NettyChannelBuilder.forTarget(server.endpoint()).usePlaintext().disableRetry()
                    .eventLoopGroup(clientTransport).channelType(NioSocketChannel.class).build();
            ClientStreamTracer.Factory endSeen = new ClientStreamTracer.Factory() {
                @Override
                public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
                    return new ClientStreamTracer() {
                        @Override
                        public void streamClosed(Status status) {
                            streamEnded.countDown(); // on the transport's thread, just before it queues the end
                        }
                    };
                }
            };
            traced = ClientInterceptors.intercept(channel, new ClientInterceptor() {
                @Override
                public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
                        Channel next) {
                    return next.newCall(method, options.withStreamTracerFactory(endSeen));
                }
            });
            // Connected first: a call made before the connection is ready gets its stream from the calling thread's
            // executor, which the test holds at the cue, and this test is about an answer that arrived.
            UnaryCalls.call(channel, LocksGrpc.getDescribeMethod(), DESCRIBE, TimeUnit.SECONDS.toNanos(30));
        }

        /** Lets the server answer and returns once the answer waits, queued, for the calling thread. */
        void answer() {
            answerLetGo.countDown();
            try {
                assertThat(streamEnded.await(10, TimeUnit.SECONDS)).as("the answer reached the client").isTrue();
                clientTransport.submit(() -> { }).get(10, TimeUnit.SECONDS); // the end is queued when this runs
            } catch (InterruptedException | ExecutionException | TimeoutException e) {
                throw new AssertionError("the answer did not reach the client", e);
            }
        }

        @Override
        public void close() {
            answerLetGo.countDown();
            server.close();
        }
    }

    /** Returns a ticker at the deadline from its second reading on, which first runs {@code atDeadline}. */
    private static Ticker deadlinePassingAt(Runnable atDeadline) {
        AtomicInteger readings = new AtomicInteger();
        return () -> {
            if (readings.incrementAndGet() == 1) {
                return ManualTicker.START_NANOS; // the reading the deadline is counted from
            }
            if (readings.get() == 2) {
                atDeadline.run();
            }
            return ManualTicker.START_NANOS + TIMEOUT_NANOS;
        };
    }

    /** An abort, as a session's end, that first runs {@code asItFires}, then names its failure. */
    private static Router.Abort abortFiringAs(Runnable asItFires) {
        return new Router.Abort() {
            @Override
            public RuntimeException why() {
                asItFires.run();
                return new SessionExpiredException(3, "Acquire of lock 'orders' gave up its wait: session 3 is lost");
            }

            @Override
            public long askAgainInNanos() {
                return MILLISECONDS.toNanos(1);
            }
        };
    }

    @Test
    void call_answerLandsAsTheDeadlinePasses_returnsTheAnswer() {
        try (AnswerOnCue server = new AnswerOnCue()) {
            AcquireResponse answer = UnaryCalls.call(server.traced, LocksGrpc.getAcquireMethod(), ACQUIRE,
                    TIMEOUT_NANOS, null, deadlinePassingAt(server::answer));

            assertThat(answer).as("the grant the service sent, not a timeout that hides it").isEqualTo(GRANT);
        }
    }

    @Test
    void call_answerLandsAsTheAbortFires_returnsTheAnswer() {
        try (AnswerOnCue server = new AnswerOnCue()) {
            AcquireResponse answer = UnaryCalls.call(server.traced, LocksGrpc.getAcquireMethod(), ACQUIRE,
                    TIMEOUT_NANOS, abortFiringAs(server::answer), new ManualTicker());

            assertThat(answer).as("the grant, which the acquire gives back as its session ended, not the session's"
                    + " end that leaves it held on the service").isEqualTo(GRANT);
        }
    }

    /** The control: an abort with no answer come cancels the call at the peer and throws the abort's failure. */
    @Test
    void call_abortFiresWithNoAnswer_cancelsTheCallAndThrowsTheAbort() {
        try (FakeServer server = FakeServer.start()) {
            channel = channelTo(server.endpoint());
            UnaryCalls.call(channel, LocksGrpc.getDescribeMethod(), DESCRIBE, TimeUnit.SECONDS.toNanos(30));
            server.locks.silent = true;

            SessionExpiredException failure = catchThrowableOfType(SessionExpiredException.class,
                    () -> UnaryCalls.call(channel, LocksGrpc.getAcquireMethod(), ACQUIRE, TIMEOUT_NANOS,
                            abortFiringAs(() -> await().atMost(Duration.ofSeconds(10))
                                    .until(() -> server.locks.acquires.size() == 1)), new ManualTicker()));

            assertThat(failure).hasMessageContaining("gave up its wait");
            await().atMost(Duration.ofSeconds(5))
                    .untilAsserted(() -> assertThat(server.locks.cancelledCalls).containsExactly("Acquire"));
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

package io.fencer.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The event loops of a port built by {@link GrpcEndpoints} with a {@link ReplySpin}, over real gRPC: they spin for
 * answers that come soon and not for those that come late, count every call in flight back to zero however it ends,
 * and are shut down with their server. A test-only service answers on another thread, as Raft's apply thread does.
 */
class ReplySpinTest {
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);
    private static final MethodDescriptor<String, String> ECHO = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("fencer.test.Spin/Echo")
            .setRequestMarshaller(TlsIdentityTest.Utf8.INSTANCE)
            .setResponseMarshaller(TlsIdentityTest.Utf8.INSTANCE)
            .build();

    private final ScheduledExecutorService applier = Executors.newSingleThreadScheduledExecutor();
    /** Calls the service holds unanswered ("hold" requests). */
    private final List<StreamObserver<String>> held = new CopyOnWriteArrayList<>();
    private Server server;
    private ManagedChannel channel;
    private long answerDelayMicros;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        applier.shutdownNow();
    }

    @Test
    void calculateStrategy_loneClientAnsweredSoon_spinsFindTheAnswers() throws Exception {
        // Far above an answer here, and above how long a loaded machine leaves a thread unscheduled: with 10 ms, a
        // 2-core machine running another test JVM beside this one let 60 of 200 spins run out (five busy-looping
        // processes beside it: 87 to 96); with 100 ms and those five, 2.
        ReplySpin spin = new ReplySpin(Duration.ofMillis(100));
        start(spin);

        for (int i = 0; i < 200; i++) {
            assertThat(echo("call " + i)).isEqualTo("call " + i);
        }

        await().atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThat(spin.spinsFound()).as("waits for an answer or the next call that polled and found it")
                .isGreaterThanOrEqualTo(100);
        // The wait after the last answer runs out: nothing follows it.
        assertThat(spin.spinsExpired()).as("spins that ran out 100 ms while a lone client calls").isLessThan(20);
    }

    @Test
    void calculateStrategy_answersLaterThanTheSpin_stopsSpinning() throws Exception {
        ReplySpin spin = new ReplySpin(Duration.ofNanos(50_000));
        answerDelayMicros = 3_000;
        start(spin);

        for (int i = 0; i < 40; i++) {
            assertThat(echo("late " + i)).isEqualTo("late " + i);
        }

        await().atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThat(spin.spinsExpired()).as("the first waits spun (the policy was on) and ran out").isPositive();
        assertThat(spin.spinsFound() + spin.spinsExpired()).as("spins of 80 waits once they proved too long")
                .isLessThanOrEqualTo(10);
    }

    @Test
    void callsInFlight_heldThenCancelledFailedOrPastItsDeadline_countsBackToZero() throws Exception {
        ReplySpin spin = new ReplySpin(Duration.ofNanos(300_000));
        start(spin);

        ListenableFuture<String> pending = ClientCalls.futureUnaryCall(channel.newCall(ECHO, CallOptions.DEFAULT),
                "hold");
        await().atMost(WAIT_MAX).until(() -> held.size() == 1 && spin.callsInFlight() == 1);
        pending.cancel(true);
        await().atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThatThrownBy(() -> echo("fail")).isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("FAILED_PRECONDITION: asked to fail");
        await("failed").atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThatThrownBy(() -> ClientCalls.blockingUnaryCall(channel, ECHO,
                CallOptions.DEFAULT.withDeadlineAfter(50, TimeUnit.MILLISECONDS), "hold"))
                .isInstanceOf(StatusRuntimeException.class).hasMessageContaining("DEADLINE_EXCEEDED");
        await("past its deadline").atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThat(echo("still serving")).isEqualTo("still serving");
    }

    /** Regression: gRPC closes a call whose handler threw by itself, past the call's close(); it was counted on. */
    @Test
    void callsInFlight_handlerThrows_countsBackToZero() throws Exception {
        ReplySpin spin = new ReplySpin(Duration.ofNanos(300_000));
        start(spin);

        assertThatThrownBy(() -> echo("throw")).isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("UNKNOWN");

        await().atMost(WAIT_MAX).until(() -> spin.callsInFlight() == 0);
        assertThat(echo("still serving")).isEqualTo("still serving");
    }

    @Test
    void awaitTermination_ofAServerWithItsOwnLoops_shutsTheLoopsDown() throws Exception {
        Set<String> before = loopThreads();
        start(new ReplySpin(Duration.ofNanos(300_000)));
        assertThat(echo("once")).isEqualTo("once");
        assertThat(loopThreads()).as("the port's own loops run").hasSizeGreaterThan(before.size());

        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.shutdown();
        GrpcEndpoints.awaitCalls(server);

        await().atMost(WAIT_MAX).until(() -> before.containsAll(loopThreads()));
    }

    private void start(ReplySpin spin) throws IOException {
        ServerServiceDefinition service = ServerServiceDefinition.builder("fencer.test.Spin")
                .addMethod(ECHO, ServerCalls.asyncUnaryCall(this::answer))
                .build();
        server = GrpcEndpoints.start("127.0.0.1", 0, 1024, List.of(service), null, spin);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    }

    private void answer(String request, StreamObserver<String> answer) {
        switch (request) {
            case "hold" -> held.add(answer);
            case "fail" -> answer.onError(Status.FAILED_PRECONDITION.withDescription("asked to fail").asException());
            case "throw" -> throw new IllegalStateException("a handler's bug");
            default -> applier.schedule(() -> {
                answer.onNext(request);
                answer.onCompleted();
            }, answerDelayMicros, TimeUnit.MICROSECONDS);
        }
    }

    private String echo(String request) {
        return ClientCalls.blockingUnaryCall(channel, ECHO, CallOptions.DEFAULT.withDeadlineAfter(20,
                TimeUnit.SECONDS), request);
    }

    private static Set<String> loopThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(name -> name.startsWith("fencer-grpc-")).collect(Collectors.toSet());
    }
}

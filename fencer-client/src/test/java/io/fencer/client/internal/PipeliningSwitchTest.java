package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The builders' {@code pipelining} switch: off, the client opens no {@code Pipeline} stream and sends Acquire,
 * Release, Write and Get as unary calls; on (the default), it tries the stream first. The fakes serve no Pipeline
 * method, so the default client falls back to unary calls after one UNIMPLEMENTED stream: the server's record of
 * the methods called shows which way the client went.
 */
class PipeliningSwitchTest {
    private static final String LOCKS_PIPELINE = "fencer.v1.Locks/Pipeline";
    private static final String STORE_PIPELINE = "fencer.v1.Store/Pipeline";

    @TempDir
    Path directory;
    private final List<String> methodsCalled = new CopyOnWriteArrayList<>();
    private FakeStore store;
    private Server server;

    @BeforeEach
    void start() throws Exception {
        store = FakeStore.start(directory);
        ServerInterceptor recording = new ServerInterceptor() {
            @Override
            public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
                    Metadata headers, ServerCallHandler<ReqT, RespT> next) {
                methodsCalled.add(call.getMethodDescriptor().getFullMethodName());
                return next.startCall(call, headers);
            }
        };
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(ServerInterceptors.intercept(new FakeLocks(), recording))
                .addService(ServerInterceptors.intercept(store, recording)).build().start();
    }

    @AfterEach
    void stop() throws Exception {
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        store.close();
    }

    @Test
    void pipelining_off_makesNoPipelineStreamAndSendsAcquireAndReleaseAsUnaryCalls() {
        try (FencerClient client = Fencer.newBuilder().endpoints(endpoint()).pipelining(false).build()) {
            lockAndRelease(client);
        }

        assertThat(methodsCalled).doesNotContain(LOCKS_PIPELINE)
                .contains("fencer.v1.Locks/Acquire", "fencer.v1.Locks/Release");
    }

    @Test
    void pipelining_default_triesThePipelineStreamFirst() {
        // The control: the same calls with the default client do open the stream, so its absence above is the switch.
        try (FencerClient client = Fencer.newBuilder().endpoints(endpoint()).build()) {
            lockAndRelease(client);
        }

        assertThat(methodsCalled).contains(LOCKS_PIPELINE);
    }

    @Test
    void storePipelining_off_makesNoPipelineStreamAndSendsWriteAndGetAsUnaryCalls() {
        try (FencedStore client = Fencer.newStoreBuilder().endpoint(endpoint()).pipelining(false).build()) {
            writeAndRead(client);
        }

        assertThat(methodsCalled).doesNotContain(STORE_PIPELINE)
                .contains("fencer.v1.Store/Write", "fencer.v1.Store/Get");
    }

    @Test
    void storePipelining_default_triesThePipelineStreamFirst() {
        try (FencedStore client = Fencer.newStoreBuilder().endpoint(endpoint()).build()) {
            writeAndRead(client);
        }

        assertThat(methodsCalled).contains(STORE_PIPELINE);
    }

    private static void lockAndRelease(FencerClient client) {
        Session session = client.openSession(Duration.ofSeconds(10));
        try (Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5))) {
            assertThat(grant.token().lock()).isEqualTo("orders");
        }
    }

    private static void writeAndRead(FencedStore client) {
        String sequencer = new FencingToken("orders", 32).sequencer();
        client.put("orders", "order-17", "paid", sequencer);
        assertThat(client.get("orders", "order-17")).isNotNull();
    }

    private String endpoint() {
        return "127.0.0.1:" + server.getPort();
    }
}

package io.fencer.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsMaterial;
import io.fencer.testing.TestTls;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The identity a call's handler sees ({@link Identities#current()}) on an endpoint built by {@link GrpcEndpoints}:
 * the CN of the client's verified certificate under TLS, and {@link Identities#ANONYMOUS} without one. A tiny
 * test-only service answers each call with the identity its handler sees, over real gRPC and real TLS.
 */
class TlsIdentityTest {
    private static final MethodDescriptor<String, String> WHO_AM_I = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("fencer.test.Identity/WhoAmI")
            .setRequestMarshaller(Utf8.INSTANCE)
            .setResponseMarshaller(Utf8.INSTANCE)
            .build();

    @TempDir
    Path directory;
    private Server server;
    private ManagedChannel channel;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void current_clientCertificateOfTheCa_isItsCommonName() throws Exception {
        TestTls tls = TestTls.create(directory);
        server = start(tls.serverFiles(true).load());
        channel = tls.channel(server.getPort(), tls.client("billing-worker"));

        assertThat(whoAmI(channel)).isEqualTo("billing-worker");
    }

    @Test
    void current_twoClientsOnOneServer_eachSeesItsOwn() throws Exception {
        TestTls tls = TestTls.create(directory);
        server = start(tls.serverFiles(true).load());
        channel = tls.channel(server.getPort(), tls.client("alice"));
        ManagedChannel bob = tls.channel(server.getPort(), tls.client("bob"));
        try {
            assertThat(whoAmI(channel)).isEqualTo("alice");
            assertThat(whoAmI(bob)).isEqualTo("bob");
        } finally {
            bob.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void current_tlsWithoutClientCertificate_isAnonymous() throws Exception {
        TestTls tls = TestTls.create(directory);
        server = start(tls.serverFiles(false).load());
        channel = tls.channel(server.getPort(), null);

        assertThat(whoAmI(channel)).isEqualTo(Identities.ANONYMOUS);
    }

    @Test
    void current_plaintext_isAnonymous() throws Exception {
        server = start(null);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();

        assertThat(whoAmI(channel)).isEqualTo(Identities.ANONYMOUS);
    }

    private static Server start(TlsMaterial tls) throws IOException {
        ServerServiceDefinition service = ServerServiceDefinition.builder("fencer.test.Identity")
                .addMethod(WHO_AM_I, ServerCalls.asyncUnaryCall((request, answer) -> {
                    answer.onNext(Identities.current());
                    answer.onCompleted();
                }))
                .build();
        return GrpcEndpoints.start("127.0.0.1", 0, 1024, List.of(service), tls,
                new ReplySpin(ServerConfig.REPLY_SPIN_DEFAULT));
    }

    private static String whoAmI(ManagedChannel channel) {
        return ClientCalls.blockingUnaryCall(channel, WHO_AM_I, CallOptions.DEFAULT.withDeadlineAfter(20,
                TimeUnit.SECONDS), "who?");
    }

    /** Strings as UTF-8 bytes: the test services of this package need no .proto. */
    enum Utf8 implements MethodDescriptor.Marshaller<String> {
        INSTANCE;

        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}

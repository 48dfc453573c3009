package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin port under TLS: HTTPS only, and with a client CA only for clients presenting its certificates; the
 * store server's ports likewise.
 */
class TlsAdminHttpTest {
    @TempDir
    Path directory;

    @Test
    void healthz_httpsWithClientCertificate_answersOk() throws Exception {
        TestTls tls = TestTls.create(directory.resolve("certs"));
        try (FencerServer server = startLockServer(tls, true)) {
            awaitServing(server, tls, tls.client("ops"));

            HttpResponse<String> health = get(tls.jdkContext(tls.client("ops")), "https", server.adminPort());

            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"status\":\"ok\"", "\"role\":\"LEADER\"");
        }
    }

    @Test
    void healthz_httpsWithoutClientCertificate_isRefusedAtTheHandshake() throws Exception {
        TestTls tls = TestTls.create(directory.resolve("certs"));
        try (FencerServer server = startLockServer(tls, true)) {
            awaitServing(server, tls, tls.client("ops"));
            assertThat(get(tls.jdkContext(tls.client("ops")), "https", server.adminPort()).statusCode())
                    .as("a client with a certificate is served").isEqualTo(200);

            Throwable anonymous = catchThrowable(() -> get(tls.jdkContext(null), "https", server.adminPort()));
            Throwable foreign = catchThrowable(() -> get(tls.jdkContext(TestTls.foreignClient("mallory")),
                    "https", server.adminPort()));

            assertThat(anonymous).as("no client certificate").isInstanceOf(IOException.class);
            assertThat(foreign).as("a certificate of another CA").isInstanceOf(IOException.class);
        }
    }

    @Test
    void healthz_plainHttpToTheHttpsPort_getsNoHealth() throws Exception {
        TestTls tls = TestTls.create(directory.resolve("certs"));
        try (FencerServer server = startLockServer(tls, false)) {
            awaitServing(server, tls, null);
            assertThat(get(tls.jdkContext(null), "https", server.adminPort()).statusCode())
                    .as("without a client CA, a client that trusts the server's CA is served").isEqualTo(200);

            Throwable plain = catchThrowable(() -> get(tls.jdkContext(null), "http", server.adminPort()));

            assertThat(plain).isInstanceOf(IOException.class);
        }
    }

    @Test
    void storeServer_tls_servesHttpsAndRefusesPlaintextGrpc() throws Exception {
        TestTls tls = TestTls.create(directory.resolve("certs"));
        StoreServerConfig config = StoreServerConfig.defaults(directory.resolve("store")).withPorts(0, 0)
                .withTls(tls.serverFiles(true));
        try (FencerStoreServer server = FencerStoreServer.start(config)) {
            ManagedChannel good = tls.channel(server.port(), tls.client("writer"));
            ManagedChannel plain = TestServers.channel(server.port());
            try {
                GetRequest read = GetRequest.newBuilder().setScope("orders").setKey(ByteString.copyFromUtf8("k"))
                        .build();
                boolean found = StoreGrpc.newBlockingStub(good).withDeadlineAfter(20, TimeUnit.SECONDS).get(read)
                        .getFound();
                StatusRuntimeException refused = (StatusRuntimeException) catchThrowable(() -> StoreGrpc
                        .newBlockingStub(plain).withDeadlineAfter(20, TimeUnit.SECONDS).get(read));
                HttpResponse<String> health = get(tls.jdkContext(tls.client("ops")), "https", server.adminPort());

                assertThat(found).isFalse();
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(health.body()).contains("\"role\":\"store\"");
            } finally {
                TestServers.close(good);
                TestServers.close(plain);
            }
        }
    }

    private FencerServer startLockServer(TestTls tls, boolean clientCertificatesRequired) throws IOException {
        return FencerServer.start(TestServers.singlePeer(directory.resolve("data"), new ManualTicker())
                .withTls(tls.serverFiles(clientCertificatesRequired)));
    }

    private static void awaitServing(FencerServer server, TestTls tls, CertificateAuthority.Issued client)
            throws InterruptedException {
        ManagedChannel channel = tls.channel(server.port(), client);
        try {
            TestServers.awaitServing(server, channel);
        } finally {
            TestServers.close(channel);
        }
    }

    private static HttpResponse<String> get(SSLContext context, String scheme, int port) throws Exception {
        HttpClient http = HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(10)).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + port + "/healthz"))
                .timeout(Duration.ofSeconds(10)).build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }
}

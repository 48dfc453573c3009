package io.fencer.server;

import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client port of a TLS server with a client CA: only TLS, and only with a valid certificate of that CA; a
 * refused client fails at the handshake, before any call reaches the service. Real server, real gRPC, real TLS.
 */
class TlsClientPortTest {
    @TempDir
    Path directory;
    private TestTls tls;
    private FencerServer server;
    private ManagedChannel channel;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void call_validClientCertificate_isServed() throws Exception {
        startServer(true);
        channel = tls.channel(server.port(), tls.client("alice"));

        TestServers.awaitServing(server, channel);
        TestSession session = openSession(TestServers.stub(channel), 60_000);
        AcquireResponse granted = TestServers.acquire(TestServers.stub(channel), session, "orders", 0);

        assertThat(granted.getToken().getValue()).isPositive();
    }

    @Test
    void call_plaintextClient_isRefused() throws Exception {
        startServer(true);
        awaitServingWith(tls.client("alice"));
        channel = TestServers.channel(server.port());

        StatusRuntimeException refused = refusedCall(channel);

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void call_noClientCertificate_isRefusedAtTheHandshake() throws Exception {
        startServer(true);
        awaitServingWith(tls.client("alice"));
        channel = tls.channel(server.port(), null);

        assertRefusedAtTheHandshake(refusedCall(channel));
    }

    @Test
    void call_certificateOfAnotherCa_isRefusedAtTheHandshake() throws Exception {
        startServer(true);
        awaitServingWith(tls.client("alice"));
        channel = tls.channel(server.port(), TestTls.foreignClient("mallory"));

        assertRefusedAtTheHandshake(refusedCall(channel));
    }

    @Test
    void call_expiredClientCertificate_isRefusedAtTheHandshake() throws Exception {
        startServer(true);
        awaitServingWith(tls.client("alice"));
        channel = tls.channel(server.port(), tls.expiredClient("alice"));

        assertRefusedAtTheHandshake(refusedCall(channel));
    }

    @Test
    void call_withoutClientCa_servesClientsWithoutCertificates() throws Exception {
        startServer(false);
        channel = tls.channel(server.port(), null);

        TestServers.awaitServing(server, channel);

        assertThat(openSession(TestServers.stub(channel), 60_000).id()).isPositive();
    }

    @Test
    void call_clientNotTrustingTheServer_failsItsOwnHandshake() throws Exception {
        startServer(false);
        awaitServingWith(null);
        TestTls stranger = TestTls.create(directory.resolve("stranger"));
        channel = stranger.channel(server.port(), null); // trusts another CA than the one that signed the server

        assertRefusedAtTheHandshake(refusedCall(channel));
    }

    private void startServer(boolean clientCertificatesRequired) throws Exception {
        tls = TestTls.create(directory.resolve("certs"));
        server = FencerServer.start(TestServers.singlePeer(directory.resolve("data"), new ManualTicker())
                .withTls(tls.serverFiles(clientCertificatesRequired)));
    }

    /** Waits until the server serves a good client, so a refusal later is the handshake's, not a slow start's. */
    private void awaitServingWith(CertificateAuthority.Issued client) throws Exception {
        ManagedChannel good = tls.channel(server.port(), client);
        try {
            TestServers.awaitServing(server, good);
        } finally {
            TestServers.close(good);
        }
    }

    private static StatusRuntimeException refusedCall(ManagedChannel channel) {
        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                () -> LocksGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                        .openSession(io.fencer.api.v1.OpenSessionRequest.newBuilder().setTtlMillis(60_000).build()));
        assertThat(refused).as("the call should have been refused").isNotNull();
        return refused;
    }

    private static void assertRefusedAtTheHandshake(StatusRuntimeException refused) {
        assertThat(refused.getStatus().getCode()).as("%s", refused).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(causes(refused)).as("the cause of %s", refused).hasAtLeastOneElementOfType(SSLException.class);
    }

    private static java.util.List<Throwable> causes(Throwable error) {
        java.util.List<Throwable> chain = new java.util.ArrayList<>();
        for (Throwable cause = error; cause != null && chain.size() < 16; cause = cause.getCause()) {
            chain.add(cause);
        }
        return chain;
    }
}

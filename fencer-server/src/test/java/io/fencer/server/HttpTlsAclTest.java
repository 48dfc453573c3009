package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS, client certificates and ACLs on the HTTP port, exactly as on the gRPC port: a real TLS server with a client
 * CA and an ACL file; the identity is the certificate's common name on both ports, and no header can claim another.
 */
class HttpTlsAclTest {
    private static final String RULES = """
            scheduler lock  jobs/
            auditor   read  jobs/
            caf\u00e9      admin cafe/
            """;
    /** The header the in-process endpoint carries the HTTP caller's identity in: no external caller may set it. */
    private static final String IN_PROCESS_IDENTITY = "fencer-in-process-identity";

    @TempDir
    static Path directory;
    private static TestTls tls;
    private static FencerServer server;
    private static ConnectCalls scheduler;
    private static ConnectCalls auditor;
    private static ManagedChannel auditorChannel;

    @BeforeAll
    static void start() throws Exception {
        tls = TestTls.create(directory.resolve("certs"));
        Path acl = directory.resolve("fencer.acl");
        Files.writeString(acl, RULES);
        server = FencerServer.start(TestServers.singlePeer(directory.resolve("data"), new ManualTicker())
                .withTls(tls.serverFiles(true)).withAcl(acl).withHttpPort(0));
        scheduler = ConnectCalls.https(server.httpPort(), tls.jdkContext(tls.client("scheduler")));
        auditor = ConnectCalls.https(server.httpPort(), tls.jdkContext(tls.client("auditor")));
        auditorChannel = tls.channel(server.port(), tls.client("auditor"));
        await().atMost(TestServers.STARTUP_MAX).pollInterval(Duration.ofMillis(50)).until(() -> auditor.json(
                "Locks/Describe", "{\"lock\": \"jobs/warm-up\"}").status() == 200);
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(auditorChannel);
        server.close();
    }

    private static OpenSessionResponse open(ConnectCalls caller) {
        return ConnectCalls.parseJson(caller.json("Locks/OpenSession", "{\"ttlMillis\": 60000}"),
                OpenSessionResponse.getDefaultInstance());
    }

    private static AcquireRequest acquire(OpenSessionResponse session, String lock) {
        return AcquireRequest.newBuilder().setSessionId(session.getSessionId()).setSessionSecret(session.getSecret())
                .setLock(lock).setRequestId("r-" + lock).build();
    }

    @Test
    void allowedIdentity_acquiresAndIsNamedByItsCertificateOnBothPorts() {
        OpenSessionResponse session = open(scheduler);
        AcquireResponse granted = ConnectCalls.parseJson(scheduler.json("Locks/Acquire", acquire(session,
                "jobs/allowed")), AcquireResponse.getDefaultInstance());
        assertThat(granted.getAcquired()).isTrue();
        LockInfo overHttp = ConnectCalls.parseJson(auditor.json("Locks/Describe", "{\"lock\": \"jobs/allowed\"}"),
                LockInfo.getDefaultInstance());
        LockInfo overGrpc = TestServers.stub(auditorChannel).describe(DescribeRequest.newBuilder()
                .setLock("jobs/allowed").build());
        assertThat(overHttp.getHolderIdentity()).isEqualTo("scheduler");
        assertThat(overHttp).isEqualTo(overGrpc);
    }

    @Test
    void nonAsciiIdentity_isTheSameIdentityOnBothPorts() throws Exception {
        // A common name is any Unicode text, and ACL lines name it in UTF-8: over HTTP it must not become "caf?".
        CertificateAuthority.Issued certificate = tls.client("caf\u00e9");
        ConnectCalls cafe = ConnectCalls.https(server.httpPort(), tls.jdkContext(certificate));
        ManagedChannel cafeChannel = tls.channel(server.port(), certificate);
        try {
            ConnectCalls.Reply opened = cafe.json("Locks/OpenSession", "{\"ttlMillis\": 60000}");
            assertThat(opened.status()).as("the ACL line of caf\u00e9 covers it over HTTP: %s", opened.text())
                    .isEqualTo(200);
            OpenSessionResponse session = ConnectCalls.parseJson(opened, OpenSessionResponse.getDefaultInstance());
            assertThat(ConnectCalls.parseJson(cafe.json("Locks/Acquire", acquire(session, "cafe/http")),
                    AcquireResponse.getDefaultInstance()).getAcquired()).isTrue();
            LockInfo described = TestServers.stub(cafeChannel).describe(DescribeRequest.newBuilder()
                    .setLock("cafe/http").build());
            assertThat(described.getHolderIdentity()).isEqualTo("caf\u00e9");
        } finally {
            TestServers.close(cafeChannel);
        }
    }

    @Test
    void deniedIdentity_isPermissionDeniedOnBothPortsWithTheSameDetail() {
        ConnectCalls.Reply openRefused = auditor.json("Locks/OpenSession", "{\"ttlMillis\": 60000}");
        assertThat(openRefused.status()).as("auditor has no `lock`: %s", openRefused.text()).isEqualTo(403);
        // The ACL is checked before the secret: the scheduler's session, even with its secret, does not help.
        OpenSessionResponse session = open(scheduler);
        ConnectCalls.Reply refused = auditor.json("Locks/Acquire", acquire(session, "jobs/denied"));
        assertThat(refused.status()).isEqualTo(403);
        assertThat(refused.errorCode()).isEqualTo("permission_denied");
        ErrorDetail overHttp = refused.detail();
        assertThat(overHttp.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(overHttp.getIdentity()).isEqualTo("auditor");
        assertThat(overHttp.getPermission()).isEqualTo("lock");

        StatusRuntimeException overGrpc = catchThrowableOfType(StatusRuntimeException.class, () ->
                TestServers.stub(auditorChannel).acquire(acquire(session, "jobs/denied")));
        assertThat(overGrpc.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(refused.json().get("message").getAsString()).isEqualTo(overGrpc.getStatus().getDescription());
        assertThat(WireErrors.detail(overGrpc).orElseThrow().toBuilder().clearMessage().build())
                .isEqualTo(overHttp.toBuilder().clearMessage().build());
    }

    @Test
    void storeWrite_byReadOnlyIdentity_isPermissionDeniedAndItsReadIsServed() {
        String write = "{\"scope\": \"jobs/store\", \"sequencer\": \"fencer1.am9icy9zdG9yZQ.1\", "
                + "\"ops\": [{\"put\": {\"key\": \"aw==\", \"value\": \"dg==\"}}]}";
        ConnectCalls.Reply refused = auditor.json("Store/Write", write);
        assertThat(refused.status()).as(refused.text()).isEqualTo(403);
        assertThat(refused.errorCode()).isEqualTo("permission_denied");
        assertThat(refused.detail().getIdentity()).isEqualTo("auditor");
        assertThat(refused.detail().getPermission()).isEqualTo("write");
        assertThat(auditor.json("Store/Fence", "{\"scope\": \"jobs/store\"}").status())
                .as("`read` covers Fence").isEqualTo(200);
    }

    @Test
    void identityHeader_fromAnExternalCaller_isIgnoredOnBothPorts() {
        OpenSessionResponse session = open(scheduler);
        byte[] body = acquire(session, "jobs/forged").toByteArray();
        ConnectCalls.Reply forged = auditor.post("/fencer.v1.Locks/Acquire", "application/proto", body,
                Map.of(IN_PROCESS_IDENTITY, "scheduler"));
        assertThat(forged.status()).as("the header did not make auditor the scheduler: %s", forged.text())
                .isEqualTo(403);
        assertThat(forged.detail().getIdentity()).isEqualTo("auditor");

        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of(IN_PROCESS_IDENTITY, Metadata.ASCII_STRING_MARSHALLER), "scheduler");
        LocksGrpc.LocksBlockingStub forging = TestServers.stub(auditorChannel)
                .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
        StatusRuntimeException overGrpc = catchThrowableOfType(StatusRuntimeException.class, () ->
                forging.acquire(acquire(session, "jobs/forged")));
        assertThat(overGrpc.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(WireErrors.detail(overGrpc).orElseThrow().getIdentity()).isEqualTo("auditor");
    }

    @Test
    void clientWithoutCertificateOrWithoutTls_isRefusedAtTheConnection() {
        ConnectCalls anonymous = ConnectCalls.https(server.httpPort(), tls.jdkContext(null));
        ConnectCalls foreign = ConnectCalls.https(server.httpPort(), tls.jdkContext(TestTls.foreignClient("eve")));
        assertThat(catchThrowable(() -> anonymous.json("Locks/OpenSession", "{\"ttlMillis\": 60000}")))
                .as("no client certificate").isInstanceOf(AssertionError.class).hasMessageContaining("failed");
        assertThat(catchThrowable(() -> foreign.json("Locks/OpenSession", "{\"ttlMillis\": 60000}")))
                .as("a certificate of another CA").isInstanceOf(AssertionError.class).hasMessageContaining("failed");
        HttpClient plain = HttpClient.newBuilder().connectTimeout(ConnectCalls.CALL_MAX).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort()
                + "/fencer.v1.Locks/OpenSession")).timeout(ConnectCalls.CALL_MAX).header("Content-Type",
                "application/json").POST(HttpRequest.BodyPublishers.ofString("{\"ttlMillis\": 60000}",
                StandardCharsets.UTF_8)).build();
        Throwable plaintext = catchThrowable(() -> {
            HttpResponse<String> response = plain.send(request, HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).as("a plaintext call is not served").isNotEqualTo(200);
            throw new IllegalStateException("answered " + response.statusCode());
        });
        assertThat(plaintext).isNotNull();
        // Control: the same call with a certificate of the CA is served.
        assertThat(scheduler.json("Locks/OpenSession", "{\"ttlMillis\": 60000}").status()).isEqualTo(200);
    }
}

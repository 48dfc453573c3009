package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.http.ConnectHttpServer;
import io.fencer.server.net.PortLimits;
import io.grpc.ManagedChannel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input on the HTTP port: malformed, truncated, mistyped and oversized bodies, wrong content types, methods and
 * headers. Each is a Connect error naming what is wrong (never a stack trace), and the server keeps serving.
 */
class HttpBadInputTest {
    @TempDir
    static Path dataDir;
    private static FencerServer server;
    private static ManagedChannel channel;
    private static ConnectCalls http;

    @BeforeAll
    static void start() throws Exception {
        // A body read timeout of 2 s, not the default 10 s: the slow body's test waits it out.
        PortLimits limits = PortLimits.DEFAULT.withHttpTimeouts(PortLimits.DEFAULT.headerReadTimeout(),
                Duration.ofSeconds(2), PortLimits.DEFAULT.httpIdleTimeout());
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()).withHttpPort(0)
                .withPortLimits(limits));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        http = new ConnectCalls(server.httpPort());
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    /** After each bad request: the server still serves a good one. */
    @AfterEach
    void stillServing() {
        OpenSessionResponse opened = ConnectCalls.parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\": 60000}"),
                OpenSessionResponse.getDefaultInstance());
        assertThat(opened.getSessionId()).isPositive();
    }

    /** Asserts a Connect error without a stack trace, and returns its message. */
    private static String connectError(ConnectCalls.Reply reply, int status, String code) {
        assertThat(reply.status()).as("HTTP status of %s", reply.text()).isEqualTo(status);
        assertThat(reply.errorCode()).isEqualTo(code);
        assertThat(reply.text()).doesNotContain("Exception").doesNotContain("\tat ").doesNotContain(".java:");
        return reply.json().get("message").getAsString();
    }

    @Test
    void json_truncated_isInvalidArgumentNamingThePosition() {
        ConnectCalls.Reply reply = http.json("Locks/OpenSession", "{\"ttlMillis\": 600");
        assertThat(connectError(reply, 400, "invalid_argument")).contains("line 1 column");
        assertThat(reply.detail().getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(reply.detail().getField()).isEqualTo("body");
    }

    @Test
    void json_notJsonAtAll_isInvalidArgument() {
        ConnectCalls.Reply reply = http.json("Locks/OpenSession", "ttl=60000");
        connectError(reply, 400, "invalid_argument");
        assertThat(reply.detail().getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
    }

    @Test
    void json_emptyBody_isTheEmptyMessage() {
        ConnectCalls.Reply reply = http.json("Locks/List", "");
        assertThat(reply.status()).as(reply.text()).isEqualTo(200);
        ConnectCalls.Reply invalid = http.json("Locks/OpenSession", "");
        assertThat(connectError(invalid, 400, "invalid_argument")).contains("ttl");
    }

    @Test
    void json_unknownField_isInvalidArgumentNamingTheField() {
        ConnectCalls.Reply reply = http.json("Locks/OpenSession", "{\"ttlMillis\": 60000, \"ttlSeconds\": 60}");
        assertThat(connectError(reply, 400, "invalid_argument")).contains("ttlSeconds");
    }

    @Test
    void json_wrongType_isInvalidArgumentNamingTheValue() {
        ConnectCalls.Reply reply = http.json("Locks/OpenSession", "{\"ttlMillis\": \"a minute\"}");
        assertThat(connectError(reply, 400, "invalid_argument")).contains("a minute");
        ConnectCalls.Reply nested = http.json("Locks/Release", "{\"sessionId\": 1, \"token\": 5}");
        assertThat(connectError(nested, 400, "invalid_argument")).contains("token");
        assertThat(nested.detail().getField()).isEqualTo("token");
    }

    @Test
    void proto_garbageBytes_isInvalidArgumentFromTheServicesGuard() {
        ConnectCalls.Reply reply = http.post("/fencer.v1.Locks/OpenSession", "application/proto",
                new byte[] {(byte) 0x0a, (byte) 0xff, (byte) 0xff}, Map.of());
        assertThat(connectError(reply, 400, "invalid_argument")).contains("cannot be decoded");
    }

    @Test
    void body_tenMegabytes_isResourceExhaustedNamingTheHttpLimit() {
        byte[] body = new byte[10 * 1024 * 1024];
        Arrays.fill(body, (byte) ' ');
        ConnectCalls.Reply reply = http.post("/fencer.v1.Locks/OpenSession", "application/json", body, Map.of());
        connectError(reply, 429, "resource_exhausted");
        ErrorDetail detail = reply.detail();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("httpRequestBodyBytesMax");
        assertThat(detail.getLimitValue()).isEqualTo(ConnectHttpServer.REQUEST_BODY_BYTES_MAX);
    }

    @Test
    void body_underTheHttpLimitOverTheLocksLimit_isTheGrpcPortsLimit() {
        String json = "{\"lock\": \"" + "x".repeat(100_000) + "\"}";
        ConnectCalls.Reply reply = http.json("Locks/Describe", json);
        connectError(reply, 429, "resource_exhausted");
        assertThat(reply.detail().getLimit()).isEqualTo("inboundMessageBytesMax");
        assertThat(reply.detail().getLimitValue()).isEqualTo(FencerServer.INBOUND_MESSAGE_BYTES_MAX);
    }

    @Test
    void contentType_textPlainOrMissing_isUnsupportedMediaType() {
        ConnectCalls.Reply plain = http.post("/fencer.v1.Locks/OpenSession", "text/plain",
                "{}".getBytes(StandardCharsets.UTF_8), Map.of());
        assertThat(connectError(plain, 415, "unimplemented")).contains("text/plain");
        ConnectCalls.Reply none = http.post("/fencer.v1.Locks/OpenSession", null,
                "{}".getBytes(StandardCharsets.UTF_8), Map.of());
        connectError(none, 415, "unimplemented");
        ConnectCalls.Reply charset = http.post("/fencer.v1.Locks/OpenSession", "application/json; charset=utf-8",
                "{\"ttlMillis\": 60000}".getBytes(StandardCharsets.UTF_8), Map.of());
        assertThat(charset.status()).as("a charset parameter is fine: %s", charset.text()).isEqualTo(200);
    }

    @Test
    void path_unknownMethodOrService_isNotFoundUnimplemented() {
        assertThat(connectError(http.json("Locks/Nope", "{}"), 404, "unimplemented")).contains("Locks/Nope");
        connectError(http.post("/fencer.v1.Nope/OpenSession", "application/json", new byte[0], Map.of()), 404,
                "unimplemented");
        connectError(http.post("/", "application/json", new byte[0], Map.of()), 404, "unimplemented");
    }

    @Test
    void path_streamingMethod_isUnimplementedPointingAtRenew() {
        assertThat(connectError(http.json("Locks/KeepAlive", "{}"), 501, "unimplemented")).contains("Renew");
        connectError(http.json("Locks/Pipeline", "{}"), 501, "unimplemented");
        connectError(http.json("Store/Pipeline", "{}"), 501, "unimplemented");
    }

    @Test
    void method_get_isMethodNotAllowed() {
        ConnectCalls.Reply reply = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.httpPort() + "/fencer.v1.Locks/List")).GET().build());
        connectError(reply, 405, "unimplemented");
    }

    @Test
    void headers_badTimeoutOrProtocolVersion_areInvalidArgument() {
        byte[] body = "{\"ttlMillis\": 60000}".getBytes(StandardCharsets.UTF_8);
        assertThat(connectError(http.post("/fencer.v1.Locks/OpenSession", "application/json", body,
                Map.of("Connect-Timeout-Ms", "soon")), 400, "invalid_argument")).contains("Connect-Timeout-Ms");
        assertThat(connectError(http.post("/fencer.v1.Locks/OpenSession", "application/json", body,
                Map.of("Connect-Timeout-Ms", "12345678901")), 400, "invalid_argument")).contains("10 digits");
        assertThat(connectError(http.post("/fencer.v1.Locks/OpenSession", "application/json", body,
                Map.of("Connect-Protocol-Version", "2")), 400, "invalid_argument")).contains("version 1");
        assertThat(connectError(http.post("/fencer.v1.Locks/OpenSession", "application/json", body,
                Map.of("Content-Encoding", "gzip")), 501, "unimplemented")).contains("identity");
    }

    @Test
    void timeout_waitingAcquire_endsAtTheConnectTimeoutAndLeavesTheQueue() {
        OpenSessionResponse holder = ConnectCalls.parseJson(http.json("Locks/OpenSession",
                "{\"ttlMillis\": 3600000}"), OpenSessionResponse.getDefaultInstance());
        OpenSessionResponse waiter = ConnectCalls.parseJson(http.json("Locks/OpenSession",
                "{\"ttlMillis\": 3600000}"), OpenSessionResponse.getDefaultInstance());
        AcquireRequest held = AcquireRequest.newBuilder().setSessionId(holder.getSessionId())
                .setSessionSecret(holder.getSecret()).setLock("http-timeout").setRequestId("held").build();
        assertThat(ConnectCalls.parseProto(http.proto("Locks/Acquire", held), AcquireResponse.getDefaultInstance())
                .getAcquired()).isTrue();
        AcquireRequest wait = AcquireRequest.newBuilder().setSessionId(waiter.getSessionId())
                .setSessionSecret(waiter.getSecret()).setLock("http-timeout").setRequestId(UUID.randomUUID().toString())
                .setWaitMillis(3_600_000).build();
        ConnectCalls.Reply reply = http.post("/fencer.v1.Locks/Acquire", "application/proto", wait.toByteArray(),
                Map.of("Connect-Timeout-Ms", "300"));
        // The wait ends with the deadline, as a gRPC deadline ends it: not granted, one way or the other.
        if (reply.status() == 200) {
            assertThat(ConnectCalls.parseProto(reply, AcquireResponse.getDefaultInstance()).getAcquired()).isFalse();
        } else {
            connectError(reply, 504, "deadline_exceeded");
        }
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(ConnectCalls.parseJson(
                http.json("Locks/Describe", DescribeRequest.newBuilder().setLock("http-timeout").build()),
                LockInfo.getDefaultInstance()).getWaitersList()).isEmpty());
    }

    @Test
    void body_sentTooSlowly_connectionIsClosedWhileOtherCallsAreServed() throws Exception {
        try (Socket slow = new Socket("127.0.0.1", server.httpPort())) {
            OutputStream out = slow.getOutputStream();
            out.write(("POST /fencer.v1.Locks/OpenSession HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{\"ttl").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // Control: while the slow client holds its connection, others are served.
            assertThat(http.json("Locks/OpenSession", "{\"ttlMillis\": 60000}").status()).isEqualTo(200);
            slow.setSoTimeout((int) Duration.ofSeconds(60).toMillis());
            InputStream in = slow.getInputStream();
            // The server closes the connection once the body read took too long: the read ends, without an answer.
            assertThat(in.read()).isEqualTo(-1);
        }
    }
}

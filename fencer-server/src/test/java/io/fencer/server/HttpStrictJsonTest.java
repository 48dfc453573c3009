package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.grpc.ManagedChannel;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP port's JSON is as strict as the gRPC port's binary form: a value of the wrong JSON type, bytes that are
 * not UTF-8 and unpaired surrogates are refused (never coerced or replaced), each as INVALID_ARGUMENT with an
 * ErrorDetail, and nothing is granted; what proto3's JSON mapping allows still works.
 */
class HttpStrictJsonTest {
    @TempDir
    static Path dataDir;
    private static FencerServer server;
    private static ManagedChannel channel;
    private static ConnectCalls http;
    private static OpenSessionResponse session;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()).withHttpPort(0));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        http = new ConnectCalls(server.httpPort());
        session = ConnectCalls.parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\": 3600000}"),
                OpenSessionResponse.getDefaultInstance());
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    /**
     * Asserts an INVALID_ARGUMENT Connect error with its ErrorDetail and returns the detail, with the error's message
     * (which travels once, as the Connect error's, not again in the detail).
     */
    private static ErrorDetail invalid(ConnectCalls.Reply reply) {
        assertThat(reply.status()).as("HTTP status of %s", reply.text()).isEqualTo(400);
        assertThat(reply.errorCode()).isEqualTo("invalid_argument");
        ErrorDetail detail = reply.detail();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        String message = reply.json().get("message").getAsString();
        assertThat(message).isNotEmpty();
        return detail.toBuilder().setMessage(message).build();
    }

    private static byte[] acquireBody(byte[] lockJsonString) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.writeBytes(("{\"sessionId\": \"" + session.getSessionId() + "\", \"sessionSecret\": \""
                + session.getSecret() + "\", \"requestId\": \"" + UUID.randomUUID() + "\", \"lock\": ")
                .getBytes(StandardCharsets.UTF_8));
        body.writeBytes(lockJsonString);
        body.writeBytes("}".getBytes(StandardCharsets.UTF_8));
        return body.toByteArray();
    }

    private static ConnectCalls.Reply acquire(byte[] lockJsonString) {
        return http.post("/fencer.v1.Locks/Acquire", "application/json", acquireBody(lockJsonString), Map.of());
    }

    private static boolean held(String lock) {
        LockInfo info = ConnectCalls.parseProto(http.proto("Locks/Describe", DescribeRequest.newBuilder()
                .setLock(lock).build()), LockInfo.getDefaultInstance());
        return info.hasHolder();
    }

    @Test
    void openSession_ttlAsAnArray_isInvalidArgumentNamingFieldAndValue() {
        ConnectCalls.Reply reply = http.json("Locks/OpenSession", "{\"ttlMillis\":[30000]}");

        ErrorDetail detail = invalid(reply);
        assertThat(detail.getField()).isEqualTo("ttlMillis");
        assertThat(detail.getValue()).isEqualTo("[30000]");
        assertThat(detail.getMessage()).contains("ttlMillis", "a JSON number", "an array", "[30000]");
    }

    @Test
    void openSession_ttlAsAWordObjectOrBoolean_isInvalidArgumentNamingFieldAndValue() {
        ErrorDetail word = invalid(http.json("Locks/OpenSession", "{\"ttlMillis\":\"x\"}"));
        ErrorDetail object = invalid(http.json("Locks/OpenSession", "{\"ttlMillis\":{\"value\":30000}}"));
        ErrorDetail bool = invalid(http.json("Locks/OpenSession", "{\"ttlMillis\":true}"));

        assertThat(word.getField()).isEqualTo("ttlMillis");
        assertThat(word.getValue()).isEqualTo("\"x\"");
        assertThat(object.getField()).isEqualTo("ttlMillis");
        assertThat(object.getMessage()).contains("an object");
        assertThat(bool.getField()).isEqualTo("ttlMillis");
    }

    @Test
    void openSession_ttlAsNumberOrDecimalString_isServed() {
        OpenSessionResponse number = ConnectCalls.parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\":30000}"),
                OpenSessionResponse.getDefaultInstance());
        OpenSessionResponse string = ConnectCalls.parseJson(http.json("Locks/OpenSession",
                "{\"ttlMillis\":\"30000\"}"), OpenSessionResponse.getDefaultInstance());

        assertThat(number.getTtlMillis()).isEqualTo(30_000);
        assertThat(string.getTtlMillis()).as("proto3 JSON writes 64-bit numbers as strings").isEqualTo(30_000);
    }

    @Test
    void acquire_lockNameWithInvalidUtf8_isRefusedNamingTheOffsetAndNothingIsGranted() {
        byte[] name = {'"', 'x', (byte) 0xff, 'y', '"'};
        int prefix = acquireBody(new byte[0]).length - 1; // the body before the name (without the closing brace)
        int offset = prefix + 2; // after the name's quote and its 'x'

        ErrorDetail detail = invalid(acquire(name));

        assertThat(detail.getField()).isEqualTo("body");
        assertThat(detail.getValue()).isEqualTo("0xFF");
        assertThat(detail.getMessage()).contains("not valid UTF-8", "offset " + offset);
        assertThat(held("x\ufffdy")).as("no lock under the replaced name").isFalse();
        assertThat(held("xy")).isFalse();
    }

    @Test
    void acquire_lockNameWithAnUnpairedSurrogate_isRefusedAndIsNotTheLockWithAQuestionMark() {
        ErrorDetail detail = invalid(acquire("\"p\\ud800q\"".getBytes(StandardCharsets.UTF_8)));
        AcquireResponse questionMark = ConnectCalls.parseJson(acquire("\"p?q\"".getBytes(StandardCharsets.UTF_8)),
                AcquireResponse.getDefaultInstance());

        assertThat(detail.getField()).isEqualTo("lock");
        assertThat(detail.getMessage()).contains("unpaired surrogate", "\\ud800");
        assertThat(questionMark.getAcquired()).as("p?q is its own lock, free until now").isTrue();
        assertThat(questionMark.getToken().getLock()).isEqualTo("p?q");
    }

    @Test
    void acquire_lockNameWithAPairedSurrogateOrRawUtf8_isServed() {
        AcquireResponse escaped = ConnectCalls.parseJson(acquire("\"emoji-\\ud83d\\ude00\""
                .getBytes(StandardCharsets.UTF_8)), AcquireResponse.getDefaultInstance());
        AcquireResponse raw = ConnectCalls.parseJson(acquire("\"caf\u00e9\"".getBytes(StandardCharsets.UTF_8)),
                AcquireResponse.getDefaultInstance());

        assertThat(escaped.getToken().getLock()).isEqualTo("emoji-\ud83d\ude00");
        assertThat(raw.getToken().getLock()).isEqualTo("caf\u00e9");
    }

    @Test
    void list_refusedRequests_grantedNothing() {
        invalid(http.json("Locks/Acquire", "{\"sessionId\": [1], \"lock\": \"strict-none\", \"requestId\": \"r\"}"));
        invalid(http.json("Locks/Acquire", "{\"lock\": \"strict-none\", \"lock\": \"strict-other\"}"));

        ListResponse listed = ConnectCalls.parseJson(http.json("Locks/List", "{\"prefix\": \"strict-\"}"),
                ListResponse.getDefaultInstance());

        assertThat(listed.getLocksList()).isEmpty();
    }

    @Test
    void openSession_ttlWithAHugeExponent_isRefusedPromptlyAndThePortServesOn() {
        // 24 bytes that protobuf's parser would turn into 10^99999999 on the port's event loop, for minutes
        ErrorDetail detail = invalid(http.json("Locks/OpenSession", "{\"ttlMillis\": 1e99999999}"));
        OpenSessionResponse next = ConnectCalls.parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\": 30000}"),
                OpenSessionResponse.getDefaultInstance());

        assertThat(detail.getField()).isEqualTo("ttlMillis");
        assertThat(detail.getMessage()).contains("at most 20 digits");
        assertThat(next.getTtlMillis()).isEqualTo(30_000);
    }

    @Test
    void json_lenientSyntax_isInvalidArgument() {
        assertThat(invalid(http.json("Locks/OpenSession", "{ttlMillis: 30000}")).getMessage())
                .contains("not valid JSON").doesNotContain("setStrictness").doesNotContain("https://");
        invalid(http.json("Locks/OpenSession", "{'ttlMillis': 30000}"));
        invalid(http.json("Locks/OpenSession", "{\"ttlMillis\": 30000} {}"));
        invalid(http.json("Locks/OpenSession", "[30000]"));
    }
}

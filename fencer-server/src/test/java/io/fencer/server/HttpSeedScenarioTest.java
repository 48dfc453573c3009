package io.fencer.server;

import static io.fencer.server.ConnectCalls.parseJson;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.RenewResponse;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.ManualTicker;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The paused-client scenario over the HTTP port alone, in JSON: holder A pauses past its lease, B is granted a higher
 * token and writes, and A's late write is refused with failed_precondition and an ErrorDetail whose current token is
 * B's.
 */
class HttpSeedScenarioTest {
    private static final long SHORT_TTL_MILLIS = 2_000;

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private ConnectCalls http;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker).withHttpPort(0));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        http = new ConnectCalls(server.httpPort());
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    private static String write(String sequencer, String value) {
        String base64 = Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8));
        return "{\"scope\": \"orders\", \"sequencer\": \"" + sequencer + "\", \"ops\": [{\"put\": "
                + "{\"key\": \"dG90YWw=\", \"value\": \"" + base64 + "\"}}]}";
    }

    private static String acquire(OpenSessionResponse session, String requestId, long waitMillis) {
        return "{\"sessionId\": " + session.getSessionId() + ", \"sessionSecret\": \"" + session.getSecret()
                + "\", \"lock\": \"orders\", \"requestId\": \"" + requestId + "\", \"waitMillis\": " + waitMillis + "}";
    }

    @Test
    void staleWrite_ofPausedHolderA_isRefusedWithBsTokenAsTheCurrentOne() throws Exception {
        OpenSessionResponse sessionA = parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\": " + SHORT_TTL_MILLIS
                + "}"), OpenSessionResponse.getDefaultInstance());
        OpenSessionResponse sessionB = parseJson(http.json("Locks/OpenSession", "{\"ttlMillis\": 3600000}"),
                OpenSessionResponse.getDefaultInstance());
        AcquireResponse grantA = parseJson(http.json("Locks/Acquire", acquire(sessionA, "a-1", 0)),
                AcquireResponse.getDefaultInstance());
        assertThat(grantA.getAcquired()).isTrue();
        // Control: A's token is good while A holds the lock.
        assertThat(parseJson(http.json("Store/Write", write(grantA.getToken().getSequencer(), "from A")),
                WriteResponse.getDefaultInstance()).getAccepted()).isEqualTo(grantA.getToken().getValue());

        // B queues for the lock on a second connection, as a long-poll.
        HttpClient clientB = HttpClient.newBuilder().connectTimeout(ConnectCalls.CALL_MAX).build();
        CompletableFuture<HttpResponse<String>> waitingB = clientB.sendAsync(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + server.httpPort() + "/fencer.v1.Locks/Acquire")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                        acquire(sessionB, "b-1", 60_000))).build(), HttpResponse.BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(30)).until(() -> parseJson(http.json("Locks/Describe",
                "{\"lock\": \"orders\"}"), LockInfo.getDefaultInstance()).getWaitersCount() == 1);

        // A pauses (no Renew) past its ttl; B keeps renewing.
        ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS + 1));
        assertThat(parseJson(http.json("Locks/Renew", "{\"sessionId\": " + sessionB.getSessionId()
                + ", \"sessionSecret\": \"" + sessionB.getSecret() + "\"}"), RenewResponse.getDefaultInstance())
                .getExpired()).isFalse();

        HttpResponse<String> answerB = waitingB.get(30, TimeUnit.SECONDS);
        assertThat(answerB.statusCode()).as(answerB.body()).isEqualTo(200);
        JsonObject grantB = JsonParser.parseString(answerB.body()).getAsJsonObject();
        assertThat(grantB.get("acquired").getAsBoolean()).isTrue();
        long tokenB = grantB.getAsJsonObject("token").get("value").getAsLong();
        assertThat(tokenB).isGreaterThan(grantA.getToken().getValue());
        String sequencerB = grantB.getAsJsonObject("token").get("sequencer").getAsString();
        assertThat(parseJson(http.json("Store/Write", write(sequencerB, "from B")), WriteResponse.getDefaultInstance())
                .getAccepted()).isEqualTo(tokenB);

        // A wakes up and writes with its old token: refused, naming B's token as the current one.
        ConnectCalls.Reply stale = http.json("Store/Write", write(grantA.getToken().getSequencer(), "late A"));
        assertThat(stale.status()).isEqualTo(400);
        assertThat(stale.errorCode()).isEqualTo("failed_precondition");
        ErrorDetail detail = stale.detail();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(detail.getPresentedToken()).isEqualTo(grantA.getToken().getValue());
        assertThat(detail.getCurrentToken()).isEqualTo(tokenB);
        assertThat(stale.debug().getAsJsonObject().get("currentToken").getAsString()).isEqualTo(Long.toString(tokenB));
        GetResponse stored = parseJson(http.json("Store/Get", "{\"scope\": \"orders\", \"key\": \"dG90YWw=\"}"),
                GetResponse.getDefaultInstance());
        assertThat(stored.getValue().toStringUtf8()).isEqualTo("from B");
        assertThat(parseJson(http.json("Locks/Renew", "{\"sessionId\": " + sessionA.getSessionId()
                + ", \"sessionSecret\": \"" + sessionA.getSecret() + "\"}"), RenewResponse.getDefaultInstance())
                .getExpired()).as("A's session ended with its lease").isTrue();
    }
}

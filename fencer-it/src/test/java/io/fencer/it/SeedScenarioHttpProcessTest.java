package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.testing.FreePorts;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
 * The paused-client scenario against a real {@code fencer server} process, over its HTTP port alone (the Connect
 * protocol, JSON, the JDK's HTTP client as curl would send it): A stops renewing past its lease, B is granted the next
 * token and writes, and A's late write is refused with failed_precondition and an ErrorDetail naming B's token.
 */
class SeedScenarioHttpProcessTest {
    @TempDir
    Path dir;
    private FencerProcess server;
    private String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void startServer() throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        int httpPort = FreePorts.choose(1)[0];
        server = FencerProcess.server("server", dir.resolve("data"), ports, "--http-port",
                Integer.toString(httpPort));
        server.awaitHealthy(ports.admin());
        base = "http://127.0.0.1:" + httpPort + "/fencer.v1.";
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpRequest request(String method, String json) {
        return HttpRequest.newBuilder(URI.create(base + method)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build();
    }

    private HttpResponse<String> post(String method, String json) {
        try {
            return http.send(request(method, json), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new AssertionError(method + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private JsonObject ok(String method, String json) {
        HttpResponse<String> response = post(method, json);
        assertThat(response.statusCode()).as("%s: %s", method, response.body()).isEqualTo(200);
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private static String acquire(JsonObject session, String requestId, long waitMillis) {
        return "{\"sessionId\": " + session.get("sessionId").getAsString() + ", \"sessionSecret\": \""
                + session.get("secret").getAsString() + "\", \"lock\": \"orders\", \"requestId\": \"" + requestId
                + "\", \"waitMillis\": " + waitMillis + "}";
    }

    private static String write(String sequencer, String value) {
        return "{\"scope\": \"orders\", \"sequencer\": \"" + sequencer + "\", \"ops\": [{\"put\": "
                + "{\"key\": \"dG90YWw=\", \"value\": \"" + Base64.getEncoder().encodeToString(value.getBytes())
                + "\"}}]}";
    }

    @Test
    void pausedHolder_writesWithItsOldTokenOverHttp_isRefusedWithBsTokenAsCurrent() throws Exception {
        JsonObject sessionA = ok("Locks/OpenSession", "{\"ttlMillis\": 2000}");
        JsonObject sessionB = ok("Locks/OpenSession", "{\"ttlMillis\": 60000}");
        JsonObject tokenA = ok("Locks/Acquire", acquire(sessionA, "a-1", 0)).getAsJsonObject("token");
        ok("Store/Write", write(tokenA.get("sequencer").getAsString(), "from A")); // control: A's token is good

        // B waits for the lock; A, "paused", never renews, and its 2 s lease runs out on the server's clock.
        CompletableFuture<HttpResponse<String>> waitingB = http.sendAsync(
                request("Locks/Acquire", acquire(sessionB, "b-1", 60_000)), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> answerB = waitingB.get(60, TimeUnit.SECONDS);
        assertThat(answerB.statusCode()).as(answerB.body()).isEqualTo(200);
        JsonObject tokenB = JsonParser.parseString(answerB.body()).getAsJsonObject().getAsJsonObject("token");
        assertThat(tokenB.get("value").getAsLong()).isEqualTo(tokenA.get("value").getAsLong() + 1);
        ok("Store/Write", write(tokenB.get("sequencer").getAsString(), "from B"));

        HttpResponse<String> stale = post("Store/Write", write(tokenA.get("sequencer").getAsString(), "late A"));
        assertThat(stale.statusCode()).isEqualTo(400);
        assertThat(stale.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonObject error = JsonParser.parseString(stale.body()).getAsJsonObject();
        assertThat(error.get("code").getAsString()).isEqualTo("failed_precondition");
        JsonObject detail = error.getAsJsonArray("details").get(0).getAsJsonObject();
        assertThat(detail.get("type").getAsString()).isEqualTo("fencer.v1.ErrorDetail");
        ErrorDetail decoded = ErrorDetail.parseFrom(Base64.getDecoder().decode(detail.get("value").getAsString()));
        assertThat(decoded.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(decoded.getCurrentToken()).isEqualTo(tokenB.get("value").getAsLong());
        assertThat(decoded.getPresentedToken()).isEqualTo(tokenA.get("value").getAsLong());
        JsonObject stored = ok("Store/Get", "{\"scope\": \"orders\", \"key\": \"dG90YWw=\"}");
        assertThat(new String(Base64.getDecoder().decode(stored.get("value").getAsString()))).isEqualTo("from B");
    }
}

package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard in docs/ against a live server: every metric its queries name is one that the server's
 * {@code /metrics} serves, once the server has refused a stale store write (the refusal counter of a scope and reason
 * exists from its first refusal on).
 */
class GrafanaDashboardTest {
    private static final Path DASHBOARD = Path.of("..", "docs", "grafana-dashboard.json");
    private static final Pattern METRIC = Pattern.compile("\\bfencer_[a-z0-9_]+");

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void dashboard_everyQuerysMetric_isServedByALiveServersMetrics() throws Exception {
        staleWrite();
        String metrics = metrics();

        Set<String> named = metricsNamed(JsonParser.parseString(Files.readString(DASHBOARD)));

        assertThat(named).as("the dashboard's metrics").contains("fencer_store_refusals_total",
                "fencer_revocations_total");
        for (String metric : named) {
            assertThat(metrics).as("/metrics serves %s", metric).containsPattern("(?m)^" + metric + "[{ ]");
        }
        assertThat(metrics).contains("fencer_store_refusals_total{reason=\"stale_token\",scope=\"orders\"} 1.0");
    }

    /** Writes to scope "orders" under the second grant, then under the first: refused stale. */
    private void staleWrite() {
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        StoreGrpc.StoreBlockingStub store = StoreTesting.stub(channel);
        TestServers.TestSession session = openSession(locks, 60_000);
        FencingToken first = acquire(locks, session, "orders", 0).getToken();
        release(locks, session, first);
        FencingToken second = acquire(locks, session, "orders", 0).getToken();
        store.write(StoreTesting.put("orders", second.getSequencer(), "k", "new"));
        assertThat(failure(() -> store.write(StoreTesting.put("orders", first.getSequencer(), "k", "old")))
                .getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
    }

    /** Every metric name in the expressions of the dashboard's panels' targets. */
    private static Set<String> metricsNamed(JsonElement dashboard) {
        Set<String> names = new TreeSet<>();
        for (JsonElement panel : dashboard.getAsJsonObject().getAsJsonArray("panels")) {
            for (JsonElement target : panel.getAsJsonObject().getAsJsonArray("targets")) {
                Matcher matcher = METRIC.matcher(((JsonObject) target).get("expr").getAsString());
                while (matcher.find()) {
                    names.add(matcher.group());
                }
            }
        }
        return names;
    }

    private String metrics() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString()).body();
    }
}

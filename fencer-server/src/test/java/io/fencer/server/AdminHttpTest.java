package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.ManualTicker;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The admin endpoint: health as JSON, Prometheus metrics, 404 elsewhere. */
class AdminHttpTest {
    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void healthz_onTheLeader_answersOkWithRoleLeaderAndAddress() throws Exception {
        openSession(stub, 60_000); // one applied entry beyond the leader's own

        HttpResponse<String> response = get("/healthz");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(response.body()).contains("\"status\":\"ok\"", "\"id\":\"n1\"", "\"role\":\"LEADER\"",
                "\"leader\":\"127.0.0.1:" + server.port() + "\"").containsPattern("\"appliedIndex\":[1-9][0-9]*");
    }

    @Test
    void metrics_afterAGrant_exposeCountersGaugesAndRequestTimer() throws Exception {
        TestServers.TestSession session = openSession(stub, 60_000);
        AcquireResponse granted = acquire(stub, session, "measured", 0);
        release(stub, session, granted.getToken());

        HttpResponse<String> response = get("/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).contains("fencer_grants_total 1.0", "fencer_releases_total 1.0",
                "fencer_session_expiries_total", "fencer_sessions 1.0", "fencer_locks 0.0", "fencer_waiters 0.0",
                "fencer_is_leader 1.0", "fencer_request_seconds_count{method=\"Acquire\"}",
                "fencer_request_seconds_bucket{method=\"Acquire\"");
    }

    @Test
    void metrics_ofALockServer_exposeTheJavaRuntime() throws Exception {
        String body = get("/metrics").body();

        // The runtime moves the server's speed (see JvmMeters): an operator must see which one each peer runs.
        assertThat(body).contains("jvm_info{", "version=\"" + System.getProperty("java.runtime.version") + "\"",
                "jvm_memory_used_bytes{", "jvm_threads_live_threads", "process_cpu_usage", "process_uptime_seconds");
    }

    @Test
    void unknownPath_isNotFound() throws Exception {
        assertThat(get("/nothing-here").statusCode()).isEqualTo(404);
    }

    private HttpResponse<String> get(String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + path))
                .timeout(Duration.ofSeconds(20)).GET().build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }
}

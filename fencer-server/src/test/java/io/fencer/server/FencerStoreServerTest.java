package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store alone, as a store server process runs it: its own gRPC port and admin HTTP. */
class FencerStoreServerTest {
    @TempDir
    Path dataDir;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @Test
    void start_alone_answersStoreCallsHealthAndMetrics() throws Exception {
        try (FencerStoreServer server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir).withPorts(0, 0))) {
            ManagedChannel channel = TestServers.channel(server.port());
            try {
                StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
                String newer = Sequencer.format(new FencingToken("orders", 12));
                String older = Sequencer.format(new FencingToken("orders", 11));

                WriteResponse written = store.write(StoreServiceTest.StoreTesting.put("orders", newer, "k", "v"));
                StoreServiceTest.assertStale(failure(() -> store.write(
                        StoreServiceTest.StoreTesting.put("orders", older, "k", "old"))), "orders", 11, 12);
                GetResponse read = store.get(GetRequest.newBuilder().setScope("orders")
                        .setKey(ByteString.copyFromUtf8("k")).build());

                assertThat(written.getAccepted()).isEqualTo(12);
                assertThat(read.getValue().toStringUtf8()).isEqualTo("v");
                HttpResponse<String> health = get(server, "/healthz");
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(health.body()).contains("\"status\":\"ok\"", "\"role\":\"store\"");
                String metrics = get(server, "/metrics").body();
                assertThat(metrics).contains("fencer_store_writes_total{outcome=\"accepted\"} 1.0",
                        "fencer_store_writes_total{outcome=\"stale\"} 1.0", "fencer_store_write_seconds_count",
                        "jvm_info{", "jvm_memory_used_bytes{");
            } finally {
                TestServers.close(channel);
            }
        }
        assertThat(dataDir).isNotEmptyDirectory();
    }

    private HttpResponse<String> get(FencerStoreServer server, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + path))
                .timeout(Duration.ofSeconds(10)).build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }
}

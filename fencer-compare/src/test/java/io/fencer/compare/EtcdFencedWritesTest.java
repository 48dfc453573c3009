package io.fencer.compare;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.kv.TxnResponse;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The fenced transaction and the generator against one real etcd member on 127.0.0.1 (the {@code etcd} on the
 * PATH, as bench/store-vs-etcd.sh installs it; skipped without one).
 */
class EtcdFencedWritesTest {
    private static final Duration READY_MAX = Duration.ofSeconds(60);
    private static Path dataDirectory;
    private static Process etcd;
    private static String endpoint;

    @BeforeAll
    static void startEtcd() throws Exception {
        // Fails rather than skips: the module builds only with -Pcompare, whose script installs etcd first.
        if (!onPath("etcd")) {
            throw new IllegalStateException("etcd is not on the PATH: install Debian's etcd-server"
                    + " (bench/store-vs-etcd.sh does)");
        }
        dataDirectory = Files.createTempDirectory("etcd-fenced-writes-test");
        int client = freePort();
        int peer = freePort();
        endpoint = "http://127.0.0.1:" + client;
        String peerUrl = "http://127.0.0.1:" + peer;
        etcd = new ProcessBuilder("etcd", "--name", "t1", "--data-dir", dataDirectory.resolve("data").toString(),
                "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
                "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
                "--initial-cluster", "t1=" + peerUrl, "--initial-cluster-state", "new")
                .redirectErrorStream(true).redirectOutput(dataDirectory.resolve("etcd.log").toFile()).start();
        awaitHealthy();
    }

    @AfterAll
    static void stopEtcd() throws Exception {
        if (etcd != null) {
            etcd.destroy();
            if (!etcd.waitFor(10, TimeUnit.SECONDS)) {
                etcd.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (dataDirectory != null) {
            try (var paths = Files.walk(dataDirectory)) {
                paths.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
        }
    }

    @Test
    void fencedWrite_tokenBelowTheFence_isRefusedAndWritesNothing() throws Exception {
        try (Client client = Client.builder().endpoints(endpoint).build()) {
            KV kv = client.getKVClient();
            ByteSequence fence = EtcdFencedWrites.bytes("fence/refused");
            kv.put(fence, TokenValues.encode(10)).get();
            EtcdFencedWrites.Scope stale = new EtcdFencedWrites.Scope("refused", fence, 9);
            ByteSequence key = stale.dataKey(1);

            TxnResponse response = EtcdFencedWrites.fencedWrite(kv, stale, key, EtcdFencedWrites.bytes("v")).commit()
                    .get();

            assertThat(response.isSucceeded()).isFalse();
            assertThat(TokenValues.decode(response.getGetResponses().get(0).getKvs().get(0).getValue()))
                    .isEqualTo(10);
            assertThat(kv.get(key).get().getKvs()).isEmpty();
            assertThat(TokenValues.decode(kv.get(fence).get().getKvs().get(0).getValue())).isEqualTo(10);
        }
    }

    @Test
    void fencedWrite_tokenAtOrAboveTheFence_isAdmittedAndRaisesTheFence() throws Exception {
        try (Client client = Client.builder().endpoints(endpoint).build()) {
            KV kv = client.getKVClient();
            ByteSequence fence = EtcdFencedWrites.bytes("fence/admitted");
            kv.put(fence, TokenValues.encode(10)).get();
            EtcdFencedWrites.Scope holder = new EtcdFencedWrites.Scope("admitted", fence, 10);
            EtcdFencedWrites.Scope newer = new EtcdFencedWrites.Scope("admitted", fence, 11);

            // the same token twice (AT_LEAST: a holder writes many times), then a newer one
            assertThat(EtcdFencedWrites.fencedWrite(kv, holder, holder.dataKey(1), EtcdFencedWrites.bytes("a"))
                    .commit().get().isSucceeded()).isTrue();
            assertThat(EtcdFencedWrites.fencedWrite(kv, holder, holder.dataKey(1), EtcdFencedWrites.bytes("b"))
                    .commit().get().isSucceeded()).isTrue();
            assertThat(TokenValues.decode(kv.get(fence).get().getKvs().get(0).getValue())).isEqualTo(10);
            assertThat(EtcdFencedWrites.fencedWrite(kv, newer, newer.dataKey(2), EtcdFencedWrites.bytes("c"))
                    .commit().get().isSucceeded()).isTrue();

            assertThat(TokenValues.decode(kv.get(fence).get().getKvs().get(0).getValue())).isEqualTo(11);
            assertThat(kv.get(holder.dataKey(1)).get().getKvs().get(0).getValue().toString(StandardCharsets.UTF_8))
                    .isEqualTo("b");
            // and the older holder is refused from now on
            assertThat(EtcdFencedWrites.fencedWrite(kv, holder, holder.dataKey(1), EtcdFencedWrites.bytes("d"))
                    .commit().get().isSucceeded()).isFalse();
        }
    }

    @Test
    void run_heldLocks_commitsWritesAndRefusesNone() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int exit = EtcdFencedWrites.run(new String[] {"--endpoints", endpoint, "--writers", "4", "--scopes", "2",
            "--warmup", "200ms", "--duration", "1s", "--json"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));

        assertThat(exit).as(err.toString(StandardCharsets.UTF_8)).isZero();
        JsonObject json = JsonParser.parseString(out.toString(StandardCharsets.UTF_8)).getAsJsonObject();
        assertThat(json.get("writes").getAsLong()).isPositive();
        assertThat(json.get("staleRefusals").getAsLong()).isZero();
        assertThat(json.get("errors").getAsLong()).isZero();
        assertThat(json.get("scopes").getAsInt()).isEqualTo(2);
    }

    @Test
    void run_fenceAboveEveryLockToken_countsEveryWriteStale() throws Exception {
        // a namespace of its own, so that the fence raised here stays out of the other tests' scopes
        try (Client client = Client.builder().endpoints(endpoint)
                .namespace(EtcdFencedWrites.bytes("stale-run/")).build()) {
            client.getKVClient().put(EtcdFencedWrites.bytes("fence/" + EtcdFencedWrites.scopeName(0)),
                    TokenValues.encode(Long.MAX_VALUE - 1)).get();

            EtcdFencedWrites.Result result = EtcdFencedWrites.run(client, new EtcdFencedWrites.Settings(2, 1, 16,
                    Duration.ofMillis(500), Duration.ZERO));

            assertThat(result.staleRefusals()).isPositive();
            assertThat(result.writes()).isZero();
            assertThat(result.firstStale()).contains("scope bench-store-0").contains("accepted 9223372036854775806");
        }
    }

    private static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String directory : path.split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(directory, command))) {
                return true;
            }
        }
        return false;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void awaitHealthy() throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + READY_MAX.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!etcd.isAlive()) {
                throw new IllegalStateException("etcd ended: " + Files.readString(dataDirectory.resolve("etcd.log")));
            }
            try {
                HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(endpoint + "/health"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (health.body().contains("\"health\":\"true\"")) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("etcd was not healthy within " + READY_MAX);
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.testing.FencerTestServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencer lock watch} in process against a real server that signs its grants. */
class LockWatchCommandTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path dataDir;
    private static FencerTestServer server;
    private static FencerClient fencer;
    private static String endpoint;

    @BeforeAll
    static void startServer() throws Exception {
        TokenKeys keys = TokenKeys.generate("k1");
        server = FencerTestServer.builder(dataDir).config(config -> config.withTokenKeys(keys)).start();
        endpoint = server.endpoint();
        fencer = Fencer.connect(endpoint);
    }

    @AfterAll
    static void stopServer() {
        if (fencer != null) {
            fencer.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockWatch_json_printsOneLineAnEventWithUnsignedSequencersUntilStopped() throws Exception {
        FencingToken token;
        String signed;
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
                Grant grant = session.lock("watch-cli/a").acquire(Duration.ofSeconds(30))) {
            token = grant.token();
            signed = grant.sequencer();
        }
        StringWriter out = new StringWriter();
        CompletableFuture<String> stop = new CompletableFuture<>();

        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> Main.execute(new Main(() -> stop),
                new PrintWriter(out, true), new PrintWriter(new StringWriter(), true),
                "lock", "watch", "watch-cli/", "--json", "--from", "1", "--server", endpoint));
        await().atMost(GENEROUS).until(() -> out.toString().lines().count() >= 2);
        stop.complete("INT");

        assertThat(exit.get(30, TimeUnit.SECONDS)).as("stopped on purpose").isEqualTo(Main.EXIT_OK);
        List<JsonObject> lines = out.toString().lines().map(line -> JsonParser.parseString(line).getAsJsonObject())
                .toList();
        assertThat(lines).extracting(line -> line.get("kind").getAsString()).containsExactly("GRANTED", "RELEASED");
        JsonObject granted = lines.get(0);
        assertThat(granted.get("lock").getAsString()).isEqualTo("watch-cli/a");
        assertThat(granted.get("token").getAsLong()).isEqualTo(token.value());
        assertThat(granted.get("sequencer").getAsString()).as("unsigned: only the grantee gets the signed one")
                .isEqualTo(Sequencer.format(token, null)).isNotEqualTo(signed);
        assertThat(granted.get("next").getAsString())
                .isEqualTo(granted.get("revision").getAsLong() + ":" + (granted.get("ordinal").getAsInt() + 1));
        assertThat(lines.get(1).get("endCause").getAsString()).isEqualTo("RELEASED");
    }

    @Test
    void lockWatch_fromAFutureRevision_exitsOneNamingTheValue() {
        CommandRun run = CommandRun.run("lock", "watch", "--from", "987654321", "--server", endpoint);

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).contains("from_revision 987654321", "future");
    }

    @Test
    void lockWatch_malformedFrom_isAUsageError() {
        CommandRun run = CommandRun.run("lock", "watch", "--from", "12:x", "--server", endpoint);

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("'12:x' is no watch position");
    }
}

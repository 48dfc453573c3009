package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.testing.FencerTestCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer peers list} against a real group of three in this JVM, one of whose peers the leader has never heard
 * from: it was stopped before that leader was elected, so the leader knows neither its match index nor when it last
 * answered, and says so rather than print a number.
 */
class PeersListCommandTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    Path dataRoot;

    @Test
    void peersList_peerNeverHeardFromByTheLeader_printsUnknownProgressInTextAndNullInJson() {
        try (FencerTestCluster group = FencerTestCluster.start(dataRoot, 3)) {
            int firstLeader = group.leaderIndex();
            int down = (firstLeader + 1) % 3;
            // stop a follower, then make the group elect a leader anew: the new leader never hears from it
            group.stop(down);
            group.stop(firstLeader);
            group.restart(firstLeader);
            int leader = group.leaderIndex();
            int up = IntStream.range(0, 3).filter(i -> i != down && i != leader).findFirst().orElseThrow();
            String running = group.endpoint(leader) + "," + group.endpoint(up);
            // the leader has heard from the running follower once it lists it as live
            await().atMost(GENEROUS).ignoreExceptions().until(() -> peer(list(running), group.id(up)).get("live").getAsBoolean());

            JsonArray peers = list(running);
            CommandRun table = CommandRun.run("peers", "list", "--server", running);

            JsonObject unknown = peer(peers, group.id(down));
            assertThat(unknown.get("matchIndex").isJsonNull()).as(unknown.toString()).isTrue();
            assertThat(unknown.get("lastHeardMillis").isJsonNull()).as(unknown.toString()).isTrue();
            assertThat(unknown.get("live").getAsBoolean()).isFalse();
            JsonObject known = peer(peers, group.id(up));
            assertThat(known.get("matchIndex").isJsonPrimitive()).as(known.toString()).isTrue();
            assertThat(known.get("matchIndex").getAsLong()).as(known.toString()).isNotNegative();
            assertThat(known.get("lastHeardMillis").isJsonPrimitive()).as(known.toString()).isTrue();
            assertThat(known.get("lastHeardMillis").getAsLong()).as(known.toString()).isNotNegative();
            assertThat(table.exitCode()).as(table.err()).isZero();
            List<String> rows = table.out().lines().toList();
            assertThat(rows.get(0)).contains("MATCH", "HEARD", "LIVE");
            assertThat(row(rows, group.id(down))).as(table.out()).containsPattern("\\sunknown\\s+unknown\\s+no$");
            assertThat(row(rows, group.id(up))).as(table.out()).containsPattern("\\s\\d+\\s+\\d+ ms\\s+yes$");
        }
    }

    private static JsonArray list(String servers) {
        CommandRun run = CommandRun.run("peers", "list", "--json", "--server", servers);
        assertThat(run.exitCode()).as(run.err()).isZero();
        return JsonParser.parseString(run.out()).getAsJsonArray();
    }

    private static JsonObject peer(JsonArray peers, String id) {
        return StreamSupport.stream(peers.spliterator(), false).map(JsonElement::getAsJsonObject)
                .filter(peer -> peer.get("id").getAsString().equals(id)).findFirst()
                .orElseThrow(() -> new AssertionError("no peer " + id + " in " + peers));
    }

    private static String row(List<String> rows, String id) {
        return rows.stream().filter(row -> row.startsWith(id + " ")).findFirst()
                .orElseThrow(() -> new AssertionError("no row of " + id + " in " + rows));
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonSyntaxException;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LockEvent;
import io.fencer.client.Session;
import io.fencer.client.Watch;
import io.fencer.client.WatchPosition;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer lock watch --json} with real processes: a watcher killed -9 while events stream, and a new one
 * started with {@code --from} the {@code next} of the killed one's last line, together print exactly the events an
 * uninterrupted watch delivered: nothing missed, nothing doubled.
 */
class WatchProcessTest {
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private final List<FencerProcess> watchers = new ArrayList<>();

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
    }

    @AfterEach
    void stop() {
        watchers.forEach(FencerProcess::close);
        server.close();
    }

    @Test
    void lockWatch_killedAndRestartedFromItsLastLine_printsEveryEventOnce() throws Exception {
        String endpoint = "127.0.0.1:" + ports.client();
        try (FencerClient client = Fencer.connect(endpoint);
                Session session = client.openSession(Duration.ofSeconds(30))) {
            List<String> reference = new CopyOnWriteArrayList<>();
            Watch uninterrupted = client.watch("jobs/", new WatchPosition(1, 0),
                    event -> reference.add(describe(event)));
            FencerProcess first = watcher("watch-1", endpoint, "--from", "1");
            grantAndRelease(session, 0, 20);
            await().atMost(PATIENCE).until(() -> parsed(first).size() >= 40);

            CompletableFuture<Void> meanwhile = CompletableFuture.runAsync(() -> grantAndRelease(session, 20, 40));
            first.kill9();
            List<JsonObject> beforeKill = parsed(first);
            meanwhile.get();
            String next = beforeKill.get(beforeKill.size() - 1).get("next").getAsString();
            FencerProcess second = watcher("watch-2", endpoint, "--from", next);
            grantAndRelease(session, 40, 50);

            await().atMost(PATIENCE).until(() -> reference.size() == 100);
            await().atMost(PATIENCE).until(() -> beforeKill.size() + parsed(second).size() >= 100);
            List<String> printed = new ArrayList<>();
            beforeKill.forEach(line -> printed.add(describe(line)));
            List<JsonObject> afterKill = parsed(second);
            afterKill.forEach(line -> printed.add(describe(line)));
            assertThat(beforeKill.size()).as("the kill came while events streamed: some came after it")
                    .isLessThan(100);
            assertThat(printed).as("killed + resumed = uninterrupted").containsExactlyElementsOf(reference);
            uninterrupted.close();
        }
    }

    private FencerProcess watcher(String name, String endpoint, String... extra) throws Exception {
        List<String> arguments = new ArrayList<>(List.of("lock", "watch", "jobs/", "--json", "--server", endpoint));
        arguments.addAll(List.of(extra));
        FencerProcess watcher = FencerProcess.start(name, dir, arguments);
        watchers.add(watcher);
        return watcher;
    }

    private static void grantAndRelease(Session session, int from, int to) {
        for (int i = from; i < to; i++) {
            session.lock("jobs/" + i).tryAcquire().orElseThrow().close();
        }
    }

    /** Returns the complete JSON lines a watcher printed; a line cut by the kill is no event. */
    private static List<JsonObject> parsed(FencerProcess watcher) {
        List<JsonObject> events = new ArrayList<>();
        for (String line : watcher.lines()) {
            try {
                events.add(JsonParser.parseString(line).getAsJsonObject());
            } catch (JsonSyntaxException | IllegalStateException cut) {
                // the last line, written in part when SIGKILL came
            }
        }
        return events;
    }

    private static String describe(LockEvent event) {
        return event.position() + " " + event.kind() + " " + event.lock() + " " + event.token().value();
    }

    private static String describe(JsonObject line) {
        return line.get("revision").getAsLong() + ":" + line.get("ordinal").getAsInt() + " "
                + line.get("kind").getAsString() + " " + line.get("lock").getAsString() + " "
                + line.get("token").getAsLong();
    }
}

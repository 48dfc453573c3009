package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.SemaphoreStatus;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Five {@code fencer sem exec jobs --permits 2} processes against a real server run two at a time. Each command keeps
 * a marker file (its permit slot and token) until the test lets it go, and records how many markers it saw when it
 * started; the test lets one go at a time, so the markers present are exactly the commands running. Were the
 * semaphore not to limit them, all five markers would be there at once.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class SemaphoreExecProcessTest {
    private static final Duration PATIENCE = Duration.ofSeconds(120);
    private static final int COMMANDS = 5;
    private static final int PERMITS = 2;

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private final Map<String, FencerProcess> execs = new HashMap<>();

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
        Files.createDirectories(dir.resolve("run"));
    }

    @AfterEach
    void stop() {
        execs.values().forEach(FencerProcess::close);
        server.close();
    }

    @Test
    void semExec_fiveCommandsTwoPermits_runTwoAtATime_eachSlotWithRisingTokens() throws Exception {
        for (int i = 0; i < COMMANDS; i++) {
            String name = "cmd-" + i;
            execs.put(name, FencerProcess.start(name, dir, List.of("sem", "exec", "jobs", "--permits",
                    Integer.toString(PERMITS), "--ttl", "10s", "--wait", "100s", "--server", ports.endpoint(), "--",
                    "sh", "-c", script(name))));
        }
        Map<String, List<Long>> tokensBySlot = new HashMap<>();
        List<String> finished = new ArrayList<>();
        try (FencerClient fencer = Fencer.connect(ports.endpoint())) {
            for (int round = 0; round < COMMANDS; round++) {
                int expected = Math.min(PERMITS, COMMANDS - round);
                int waiting = COMMANDS - round - expected;
                int roundNow = round;
                await().atMost(PATIENCE).untilAsserted(() -> assertThat(List.of(running().size(),
                        fencer.describeSemaphore("jobs").waiterSessionIds().size()))
                        .as("running and waiting, round %d; logs: %s", roundNow, logs())
                        .containsExactly(expected, waiting));
                Map<String, String[]> running = running();
                assertThat(running).hasSize(expected);
                assertThat(running.values()).extracting(marker -> marker[0]).as("distinct slots")
                        .doesNotHaveDuplicates();
                SemaphoreStatus status = fencer.describeSemaphore("jobs");
                assertThat(status.permits()).isEqualTo(PERMITS);
                assertThat(status.held()).isEqualTo(expected);
                String next = running.keySet().stream().sorted().findFirst().orElseThrow();
                String[] marker = running.get(next);
                tokensBySlot.computeIfAbsent(marker[0], slot -> new ArrayList<>()).add(Long.parseLong(marker[1]));
                Files.createFile(dir.resolve("run/go-" + next));
                assertThat(execs.get(next).awaitExit(PATIENCE)).as(execs.get(next).logText()).isZero();
                finished.add(next);
            }
        }
        assertThat(finished).hasSize(COMMANDS).doesNotHaveDuplicates();
        for (String name : finished) {
            int seen = Integer.parseInt(Files.readString(dir.resolve("run/seen-" + name)).trim());
            assertThat(seen).as("markers %s saw when it started", name).isBetween(1, PERMITS);
        }
        assertThat(tokensBySlot.keySet()).isSubsetOf("0", "1");
        tokensBySlot.values().forEach(tokens -> assertThat(tokens).as("tokens of one slot, in run order")
                .isSorted().doesNotHaveDuplicates());
    }

    private String logs() {
        StringBuilder logs = new StringBuilder();
        execs.forEach((name, exec) -> logs.append('\n').append(name)
                .append(exec.isAlive() ? " running: " : " exited: ").append(exec.logText()));
        return logs.toString();
    }

    /** The command: a marker while it runs, until the test lets it go (or its directory is gone, after the test). */
    private String script(String name) {
        Path run = dir.resolve("run");
        return "echo \"$FENCER_PERMIT $FENCER_TOKEN_VALUE $FENCER_LOCK\" > '" + run + "/in-" + name + "'; ls '" + run
                + "' | grep -c '^in-' > '" + run + "/seen-" + name + "'; while [ ! -e '" + run + "/go-" + name
                + "' ] && [ -d '" + run + "' ]; do sleep 0.05; done; rm -f '" + run + "/in-" + name + "'";
    }

    /** Returns the markers present: command name to its permit slot, token value and slot lock. */
    private Map<String, String[]> running() throws IOException {
        Map<String, String[]> running = new HashMap<>();
        try (Stream<Path> files = Files.list(dir.resolve("run"))) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("in-")).toList()) {
                String text = Files.exists(file) ? Files.readString(file).trim() : "";
                String[] fields = text.split(" ");
                if (fields.length == 3) { // a marker being written has no fields yet: seen next time
                    running.put(file.getFileName().toString().substring(3), fields);
                }
            }
        } catch (java.nio.file.NoSuchFileException vanished) {
            return running();
        }
        return running;
    }
}

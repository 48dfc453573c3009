package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.StaleTokenException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code fencer lock exec --shared} with real processes against a real server: three readers run at once (each
 * keeps a marker file until the test lets them go, so all three markers exist together only if they overlap), a
 * writer queued behind them waits and then runs alone, and a reader's token is refused by the store for a write
 * (MODE_MISMATCH) and accepted for a fenced read until the writer has written.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class SharedLockExecProcessTest {
    private static final Duration PATIENCE = Duration.ofSeconds(90);
    private static final int READERS = 3;

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private final List<FencerProcess> execs = new ArrayList<>();

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
    }

    @AfterEach
    void stop() {
        execs.forEach(FencerProcess::close);
        server.close();
    }

    @Test
    void lockExecShared_readersOverlap_aQueuedWriterRunsAlone_andReaderTokensMayNotWrite() throws Exception {
        for (int i = 0; i < READERS; i++) {
            execs.add(exec("reader-" + i, true, "echo \"$FENCER_TOKEN\" > '" + dir + "/token-" + i + "'; touch '"
                    + dir + "/reading-" + i + "'; while [ ! -e '" + dir + "/go' ] && [ -d '" + dir + "' ]; do sleep 0.05;"
                    + " done; rm -f '" + dir + "/reading-" + i + "'"));
        }
        try {
            await().atMost(PATIENCE).until(() -> markers("reading-").size() == READERS);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("not every reader ran its command; their logs:\n" + logs(), e);
        }

        FencerProcess writer = exec("writer", false, "if ls '" + dir + "'/reading-* >/dev/null 2>&1; then echo"
                + " overlap; else echo alone; fi > '" + dir + "/writer'; echo \"$FENCER_TOKEN_MODE\" >> '" + dir
                + "/writer'; echo \"$FENCER_TOKEN\" > '" + dir + "/writer-token'");
        execs.add(writer);
        try (FencerClient fencer = Fencer.connect(ports.endpoint());
                FencedStore store = Fencer.store(ports.endpoint(), fencer)) {
            await().atMost(PATIENCE).until(() -> fencer.describe("db").waiterSessionIds().size() == 1);
            assertThat(fencer.describe("db").sharedHolders()).hasSize(READERS);
            assertThat(dir.resolve("writer")).as("the writer waits while readers hold").doesNotExist();

            String readerToken = Files.readString(dir.resolve("token-0")).trim();
            assertThat(readerToken).endsWith(".shared");
            assertThatThrownBy(() -> store.put("db", "k", "by a reader", readerToken))
                    .isInstanceOf(ModeMismatchException.class);
            assertThat(store.get("db", "k", readerToken).value()).as("a fenced read under a reader token").isNull();

            Files.createFile(dir.resolve("go"));
            for (int i = 0; i < READERS; i++) {
                assertThat(execs.get(i).awaitExit(PATIENCE)).as(execs.get(i).logText()).isZero();
            }
            assertThat(writer.awaitExit(PATIENCE)).as(writer.logText()).isZero();
            assertThat(Files.readAllLines(dir.resolve("writer"))).containsExactly("alone", "exclusive");

            String writerToken = Files.readString(dir.resolve("writer-token")).trim();
            store.put("db", "k", "by the writer", writerToken);
            assertThatThrownBy(() -> store.get("db", "k", readerToken)).as("a stale reader after the write")
                    .isInstanceOf(StaleTokenException.class);
        }
    }

    private String logs() {
        StringBuilder text = new StringBuilder();
        for (FencerProcess exec : execs) {
            text.append(exec.isAlive() ? " (running)" : " (exited)").append(":\n")
                    .append(exec.logText()).append('\n');
        }
        return text.toString();
    }

    private FencerProcess exec(String name, boolean shared, String script) throws IOException {
        List<String> arguments = new ArrayList<>(List.of("lock", "exec", "db", "--ttl", "10s", "--wait", "60s",
                "--server", ports.endpoint()));
        if (shared) {
            arguments.add("--shared");
        }
        arguments.addAll(List.of("--", "sh", "-c", script));
        return FencerProcess.start(name, dir, arguments);
    }

    private List<Path> markers(String prefix) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(file -> file.getFileName().toString().startsWith(prefix)).toList();
        }
    }
}

package io.fencer.files;

import io.fencer.testing.HolderProcess;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.testing.FencerTestServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The paused-holder scenario on a shared directory with real processes: holder A, in its own JVM, is granted the
 * lock by a real Fencer server and frozen (SIGSTOP) past its lease; B is granted the next token and writes; A, resumed,
 * writes too. Fenced, A's write is refused and B's file stays; the check-then-act control (A checks the fence before
 * its pause and replaces the file after) loses B's update, which shows the pause is a real fault. And a writer killed
 * (SIGKILL) in the middle of its writes leaves the old or the new file, never a torn one, and a fence that never went
 * backwards.
 */
class FencedDirectoryProcessTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    static Path serverDir;
    private static FencerTestServer server;
    private static FencerClient fencer;

    @TempDir
    Path dir;

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(serverDir);
        fencer = Fencer.connect(server.endpoint());
    }

    @AfterAll
    static void stopServer() {
        fencer.close();
        server.close();
    }

    @Test
    void write_pausedHolderResumedAfterNewerGrantWrote_isRefusedAndNewerFileStays() throws Exception {
        Path shared = Files.createDirectory(dir.resolve("shared"));
        try (HolderProcess a = HolderProcess.start(dir, "a", FileHolder.class, server.endpoint(), shared.toString(),
                "reports-fenced")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.pause();
            FencingToken tokenB = writeAsB(shared, "reports-fenced");
            assertThat(tokenB.value()).isGreaterThan(tokenA.value());
            assertThat(a.isAlive()).as("A is frozen, still believing it holds the lock").isTrue();

            a.resume();
            a.send("write-fenced");
            String answer = a.awaitLine("", WAIT);

            assertThat(answer).startsWith("REFUSED stale token reports-fenced#" + tokenA.value())
                    .contains("accepted token is reports-fenced#" + tokenB.value());
            FencedFile current = FencedDirectory.open(shared, "reports-fenced").read(FileHolder.FILE).orElseThrow();
            assertThat(new String(current.content(), StandardCharsets.UTF_8)).isEqualTo("written by B");
            assertThat(current.writer()).isEqualTo(tokenB);
            a.send("exit");
        }
    }

    @Test
    void checkThenAct_pausedHolderResumedAfterNewerGrantWrote_losesTheNewerUpdate() throws Exception {
        // The control: the same pause against a writer that checks the fence, then replaces the file apart from the
        // check. B's update is lost, so the scenario above does make the fault the fence refuses.
        Path shared = Files.createDirectory(dir.resolve("shared"));
        try (HolderProcess a = HolderProcess.start(dir, "a", FileHolder.class, server.endpoint(), shared.toString(),
                "reports-control")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.send("check");
            assertThat(a.awaitLine("CHECKED ", WAIT)).isEqualTo("CHECKED true");
            a.pause();
            FencingToken tokenB = writeAsB(shared, "reports-control");

            a.resume();
            a.send("write-unfenced");
            assertThat(a.awaitLine("", WAIT)).isEqualTo("WROTE");

            assertThat(Files.readString(shared.resolve(FileHolder.FILE)))
                    .as("B's update is lost: A's stale bytes replaced it").isEqualTo("written by A under " + tokenA);
            assertThat(FencedDirectory.open(shared, "reports-control").writerOf(FileHolder.FILE)).contains(tokenB);
            a.send("exit");
        }
    }

    /** Writer B: waits for the lock (granted once A's lease has expired) and writes its file under its token. */
    private static FencingToken writeAsB(Path shared, String lock) throws Exception {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
                Grant grant = session.lock(lock).acquire(WAIT)) {
            FencedDirectory.open(shared, lock).write(grant.token(), FileHolder.FILE,
                    "written by B".getBytes(StandardCharsets.UTF_8));
            return grant.token();
        }
    }

    @Test
    void write_writerKilledMidWriteThreeTimes_leavesOldOrNewFileAndFenceNeverGoesBack() throws Exception {
        Path shared = Files.createDirectory(dir.resolve("crash"));
        long acknowledged = 0;
        for (int run = 0; run < 3; run++) {
            long start = FencedDirectory.open(shared, "blobs").accepted() + 1;
            try (HolderProcess writer = HolderProcess.start(dir, "writer-" + run, CrashingWriter.class,
                    shared.toString(), "blobs", Long.toString(start))) {
                int writes = 2 + ThreadLocalRandom.current().nextInt(4);
                for (int i = 0; i < writes; i++) {
                    acknowledged = Long.parseLong(writer.awaitLine("WROTE ", WAIT).substring(6));
                }
                writer.kill9(); // it writes without pause, so it dies inside a write (or between two)
            }
            FencedDirectory files = FencedDirectory.open(shared, "blobs");
            FencedFile current = files.read(CrashingWriter.FILE).orElseThrow();
            assertThat(current.content()).as("run %d: the whole content of the token that wrote it", run)
                    .isEqualTo(CrashingWriter.content(current.writer().value()));
            assertThat(current.writer().value()).isGreaterThanOrEqualTo(acknowledged);
            assertThat(files.accepted()).isGreaterThanOrEqualTo(current.writer().value());
            long accepted = files.accepted();
            assertThatThrownBy(() -> files.write(new FencingToken("blobs", accepted - 1), CrashingWriter.FILE,
                    new byte[1])).isInstanceOf(StaleTokenException.class);
            assertThat(files.read(CrashingWriter.FILE).orElseThrow()).isEqualTo(current);
        }
    }
}

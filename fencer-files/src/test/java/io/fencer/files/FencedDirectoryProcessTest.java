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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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

    /**
     * A file system that takes only part of the fence file (a disk filling up, a quota; here a file size limit of the
     * writer's process) must fail the write, not leave a truncated fence: one of those refuses every later write as
     * corrupt and has lost the accepted token. A single FileChannel.write may write only part of its buffer.
     */
    @Test
    void write_fileSystemTakesOnlyPartOfTheFence_failsAndLeavesTheFenceWhole() throws Exception {
        Path shared = Files.createDirectory(dir.resolve("limited"));
        FencedDirectory files = FencedDirectory.open(shared, "limited");
        String longName = "n".repeat(FencedDirectory.NAME_BYTES_MAX - 3);
        for (int i = 0; i < 120; i++) { // a fence of about 40 KiB: a line of some 350 bytes per file
            files.write(new FencingToken("limited", 1), longName + String.format("%03d", i), new byte[] {(byte) i});
        }
        long fenceBytes = Files.size(shared.resolve(FencedDirectory.FENCE_FILE_NAME));
        assertThat(fenceBytes).isGreaterThan(32 * 1024);

        // ulimit -f counts 512- or 1024-byte blocks, by shell: 16 of them is at most 16 KiB, less than the fence.
        List<String> command = new ArrayList<>(List.of("/bin/sh", "-c", "ulimit -f 16 && exec \"$0\" \"$@\"",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:-UsePerfData",
                "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                SizeLimitedWriter.class.getName(), shared.toString(), "limited", "2"));
        Process writer = new ProcessBuilder(command).redirectError(dir.resolve("limited.log").toFile()).start();
        assertThat(writer.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        String answer = new String(writer.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();

        FencedDirectory reopened = FencedDirectory.open(shared, "limited"); // a truncated fence fails here
        assertThat(answer).as("the write that could not persist its fence fails").startsWith("FAILED");
        assertThat(reopened.accepted()).isGreaterThanOrEqualTo(1);
        assertThat(reopened.writerOf(longName + "000")).contains(new FencingToken("limited", 1));
        reopened.write(new FencingToken("limited", 3), SizeLimitedWriter.FILE, new byte[] {3});
        assertThat(reopened.read(SizeLimitedWriter.FILE).orElseThrow().writer())
                .isEqualTo(new FencingToken("limited", 3));
    }
}

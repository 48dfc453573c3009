package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * A dozen {@code fencer lock exec} started at once on a small machine keep their leases: twelve JVMs starting
 * together load two cores for seconds, and a client whose keepalives then went unacknowledged for 2/3 of its ttl
 * would stop its command and exit 3. Each holds its own lock with a 10 s lease and runs a command that outlives the
 * lease ({@code sleep 12}), so the lease must be kept alive through the start-up of the others.
 *
 * <p>The twelve start as a user starts them, through the repository's {@code fencer} launcher on the jar the build
 * packaged (the full suite packages it before these tests), so with the launcher's JVM options and class-data
 * archive; the test makes the archive first when the jar has none yet.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
@ResourceLock(value = TestResources.LAUNCHER_ARCHIVE, mode = ResourceAccessMode.READ)
// The long tier: twelve JVMs starting at once load both cores for seconds and slow every test beside it; the full suite
// keeps LockExecProcessTest (a command run to its end under its lease, and stopped when the lease is lost).
@Tag(Soak.TAG)
class TwelveLockExecsProcessTest {
    private static final int EXECS = 12;
    private static final Duration PATIENCE = Duration.ofSeconds(120);
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    private static final Path JAR = ROOT.resolve("fencer-cli/target/fencer.jar");

    @TempDir
    Path dir;
    private FencerProcess server;
    private final List<Process> execs = new ArrayList<>();

    @AfterEach
    void stop() {
        execs.forEach(Process::destroyForcibly);
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockExec_twelveStartedTogether_everyCommandRunsToItsEndUnderItsLease() throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());

        makeArchive();

        for (int i = 0; i < EXECS; i++) {
            execs.add(launch(i, List.of("lock", "exec", "lock-" + i, "--ttl", "10s", "--server", ports.endpoint(),
                    "--", "sh", "-c",
                    "touch '" + dir + "/started-" + i + "'; sleep 12; touch '" + dir + "/done-" + i + "'")));
        }

        for (int i = 0; i < EXECS; i++) {
            Process exec = execs.get(i);
            assertThat(exec.waitFor(PATIENCE.toSeconds(), TimeUnit.SECONDS)).as("exec-%s ended", i).isTrue();
            String err = Files.readString(dir.resolve("exec-" + i + ".err"));
            assertThat(exec.exitValue()).as("exit of exec-%s (3: lease lost or in jeopardy); stderr:%n%s", i, err)
                    .isZero();
            assertThat(err).as("exec-%s", i).doesNotContain("jeopardy", "lost");
            assertThat(dir.resolve("done-" + i)).as("exec-%s ran its command to the end", i).exists();
        }
        // The control: the twelve commands held their locks at the same time, so their starts did compete.
        assertThat(latest("started-")).as("the last command started before the first one ended")
                .isLessThan(earliest("done-"));
    }

    /** Runs {@code fencer --version} until the launcher has made its class-data archive for this jar and Java. */
    private void makeArchive() throws Exception {
        assertThat(JAR).as("the packaged jar (./mvnw -B verify packages it before this module's tests)").exists();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        do {
            Process version = launch(-1, List.of("--version"));
            assertThat(version.waitFor(PATIENCE.toSeconds(), TimeUnit.SECONDS)).as("--version ended").isTrue();
            // Another test's launcher may be making it: then this one started without it, and it comes soon.
            if (archiveExists()) {
                return;
            }
            FencerProcess.pause(1000);
        } while (System.nanoTime() < deadline);
        throw new AssertionError("no class-data archive beside " + JAR + " after " + PATIENCE);
    }

    /** True when the jar has an archive for this test's Java, whose home the launcher puts in the name. */
    private static boolean archiveExists() throws IOException {
        String home = Path.of(System.getProperty("java.home")).toRealPath().toString()
                .replaceAll("[^A-Za-z0-9]", "_");
        try (Stream<Path> files = Files.list(JAR.getParent())) {
            return files.map(file -> file.getFileName().toString())
                    .anyMatch(name -> name.startsWith("fencer-cds-") && name.contains("-" + home + "-")
                            && name.endsWith(".jsa"));
        }
    }

    /** Starts {@code ./fencer ARGS...}; its output goes to {@code exec-N.out} and {@code exec-N.err}. */
    private Process launch(int n, List<String> arguments) throws IOException {
        List<String> command = new ArrayList<>(List.of(ROOT.resolve("fencer").toString()));
        command.addAll(arguments);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectOutput(dir.resolve("exec-" + n + ".out").toFile())
                .redirectError(dir.resolve("exec-" + n + ".err").toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().remove("FENCER_CDS");
        builder.environment().remove("FENCER_JAVA_OPTS");
        return builder.start();
    }

    private FileTime latest(String prefix) throws IOException {
        FileTime latest = FileTime.fromMillis(0);
        for (int i = 0; i < EXECS; i++) {
            FileTime time = Files.getLastModifiedTime(dir.resolve(prefix + i));
            latest = time.compareTo(latest) > 0 ? time : latest;
        }
        return latest;
    }

    private FileTime earliest(String prefix) throws IOException {
        FileTime earliest = FileTime.fromMillis(Long.MAX_VALUE);
        for (int i = 0; i < EXECS; i++) {
            FileTime time = Files.getLastModifiedTime(dir.resolve(prefix + i));
            earliest = time.compareTo(earliest) < 0 ? time : earliest;
        }
        return earliest;
    }
}

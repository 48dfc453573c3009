package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The command against a real server started from {@code fencer server --acl FILE} options (real Ratis, gRPC and
 * RocksDB, in this JVM): refusals exit 6 naming identity, permission and name; SIGHUP reloads the file. Without
 * TLS every client of the command is {@code anonymous}, which the ACL names.
 */
class AclCommandTest {
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private Path aclFile;
    private FencerServer server;
    private String endpoint;

    @BeforeEach
    void start() throws Exception {
        aclFile = dir.resolve("fencer.acl");
        Files.writeString(aclFile, "anonymous lock jobs/\nanonymous read jobs/\n");
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs("server", "--acl", aclFile.toString(), "--data", dir.resolve("data").toString(),
                "--port", "0", "--admin-port", "-1");
        ServerConfig config = commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config();
        assertThat(config.acl()).isEqualTo(aclFile.toAbsolutePath());
        server = FencerServer.start(config);
        endpoint = "127.0.0.1:" + server.port();
        await().atMost(WAIT_MAX).until(() -> CommandRun.run("lock", "status", "jobs/warm-up", "--server", endpoint)
                .exitCode() == Main.EXIT_OK);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void lockAcquire_nameOutsideTheLockPrefix_exits6NamingIdentityPermissionAndName() {
        CommandRun run = CommandRun.run("lock", "acquire", "other", "--wait", "5s", "--server", endpoint);

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_PERMISSION_DENIED).isEqualTo(6);
        assertThat(run.err().strip()).isEqualTo(
                "fencer: permission denied: identity 'anonymous' has no 'lock' permission on 'other'");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void kvPutAndLockStatus_withoutWriteOrReadThere_exit6() {
        String token = Sequencer.format(new FencingToken("db/x", 1));

        CommandRun put = CommandRun.run("kv", "put", "db/x", "k", "v", "--token", token, "--store", endpoint);
        CommandRun listAll = CommandRun.run("lock", "status", "--server", endpoint);
        CommandRun describeJobs = CommandRun.run("lock", "status", "jobs/a", "--server", endpoint);

        assertThat(put.exitCode()).as(put.err()).isEqualTo(Main.EXIT_PERMISSION_DENIED);
        assertThat(put.err()).contains("permission denied", "'anonymous'", "'write'", "'db/x'");
        assertThat(listAll.exitCode()).as(listAll.err()).isEqualTo(Main.EXIT_PERMISSION_DENIED);
        assertThat(listAll.err()).contains("permission denied: identity 'anonymous' has no 'read' permission on '*'");
        assertThat(describeJobs.exitCode()).as(describeJobs.err()).isEqualTo(Main.EXIT_OK);
    }

    @Test
    void sighup_changedFile_isReloadedAndAMalformedOneKeepsTheRules() throws Exception {
        AtomicInteger reloads = new AtomicInteger();
        boolean installed = ServerCommand.installAclReload(() -> {
            try {
                server.reloadAcl();
            } finally {
                reloads.incrementAndGet();
            }
        });
        // Without the handler the JVM's default for SIGHUP would end this test run: check before signalling.
        assertThat(installed).as("SIGHUP handler installed").isTrue();
        assertThat(CommandRun.run("lock", "status", "other", "--server", endpoint).exitCode()).isEqualTo(6);

        Files.writeString(aclFile, "anonymous lock jobs/\nanonymous read *\n");
        hangUp();
        await().atMost(WAIT_MAX).until(() -> reloads.get() == 1);
        CommandRun allowed = CommandRun.run("lock", "status", "other", "--server", endpoint);
        Files.writeString(aclFile, "anonymous lock jobs/\nanonymous read\n");
        hangUp();
        await().atMost(WAIT_MAX).until(() -> reloads.get() == 2);
        CommandRun stillAllowed = CommandRun.run("lock", "status", "other", "--server", endpoint);

        assertThat(allowed.exitCode()).as(allowed.err()).isEqualTo(Main.EXIT_OK);
        assertThat(stillAllowed.exitCode()).as("the malformed file changed nothing: " + stillAllowed.err())
                .isEqualTo(Main.EXIT_OK);
    }

    private static void hangUp() throws Exception {
        Process kill = new ProcessBuilder("kill", "-HUP", Long.toString(ProcessHandle.current().pid()))
                .inheritIO().start();
        assertThat(kill.waitFor()).isZero();
    }
}

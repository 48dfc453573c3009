package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.it.LockExecProcessTest.Processes;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * {@code fencer lock exec} stopped by signals other than a single SIGINT or SIGTERM, with real processes: the
 * command runs in its own session, so a signal that ends fencer without stopping the command's group leaves the
 * command running with nothing holding its lock, and the next holder runs beside it once the session expires.
 */
@Isolated
class LockExecSignalsProcessTest {
    private static final Duration PATIENCE = Duration.ofSeconds(60);
    private static final int SIGHUP = 1;

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private FencerProcess exec;
    private String lock;

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
    }

    @AfterEach
    void stop() {
        if (exec != null) {
            exec.close();
        }
        if (lock != null) { // what the defect leaves running: the command, orphaned
            Processes.withEnvironment("FENCER_LOCK=" + lock).forEach(pid -> ProcessHandle.of(pid)
                    .ifPresent(ProcessHandle::destroyForcibly));
        }
        server.close();
    }

    /** A terminal closed or an ssh session dropped: the shell sends SIGHUP to fencer, never to the command. */
    @Test
    void lockExec_sighup_stopsTheCommandsGroupBeforeExitingAndReleasesTheLock() throws Exception {
        long groupId = startExec("exec-hangup", "while :; do date +%s%N >> ticks; sleep 0.05; done");
        Assumptions.assumeFalse(ignores(exec.pid(), SIGHUP), "fencer was started with SIGHUP ignored (nohup)");

        exec.signal("HUP");
        int exit = exec.awaitExit(PATIENCE);

        assertThat(Processes.groupMembers(groupId)).as("the command's group once fencer exited %s; log:\n%s", exit,
                exec.logText()).isEmpty();
        assertThat(exit).as("128 + SIGHUP, or the command's status once stopped").isIn(129, 143);
        try (FencerClient fencer = Fencer.newBuilder().endpoints(ports.endpoint()).build()) {
            assertThat(fencer.describe(lock).holder()).as("released, not left to expire").isNull();
        }
    }

    /**
     * Ctrl-C pressed twice: the first stops the command (SIGTERM to its group, then a grace); the second, during the
     * grace, must not leave a command that is slow to stop (here it ignores SIGTERM) running without the lock.
     */
    @Test
    void lockExec_secondSigintDuringTheGrace_killsTheCommandsGroupBeforeHalting() throws Exception {
        Path terms = dir.resolve("terms");
        long groupId = startExec("exec-twice", "trap 'echo term >> " + terms + "' TERM; "
                + "while :; do date +%s%N >> ticks; sleep 0.05; done");

        exec.signal("INT");
        await().atMost(PATIENCE).until(() -> Files.exists(terms)); // fencer is in the grace: the group had SIGTERM
        assertThat(exec.isAlive()).as("fencer waits out --kill-after 30s").isTrue();
        exec.signal("INT");
        int exit = exec.awaitExit(PATIENCE);

        assertThat(Processes.groupMembers(groupId)).as("the command's group once fencer exited %s; log:\n%s", exit,
                exec.logText()).isEmpty();
        assertThat(exit).isEqualTo(130);
    }

    /** Starts {@code lock exec} of {@code script} (run by sh in dir); returns its group id once it ticks. */
    private long startExec(String name, String script) throws IOException {
        lock = name;
        Path ticks = dir.resolve("ticks");
        exec = FencerProcess.start("exec", dir, List.of("lock", "exec", name, "--ttl", "90s", "--kill-after", "30s",
                "--server", ports.endpoint(), "--", "sh", "-c", "cd '" + dir + "' && " + script));
        await().atMost(PATIENCE).until(() -> Files.exists(ticks) && Files.readAllLines(ticks).size() >= 3);
        long child = ProcessHandle.of(exec.pid()).orElseThrow().children().findFirst().orElseThrow().pid();
        long groupId = Processes.groupOf(child).orElseThrow();
        assertThat(groupId).as("the command leads its own group").isEqualTo(child);
        return groupId;
    }

    /** Whether process {@code pid} ignores signal {@code number}, from the SigIgn mask of /proc/PID/status. */
    private static boolean ignores(long pid, int number) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("SigIgn:")) {
                return new BigInteger(line.substring("SigIgn:".length()).trim(), 16).testBit(number - 1);
            }
        }
        throw new AssertionError("no SigIgn in /proc/" + pid + "/status");
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * {@code fencer lock exec} fails closed, with real processes: a real server frozen with SIGSTOP while the command
 * runs, and the command of the defect, whose grandchild ignores SIGTERM and ticks the wall clock into a file. The
 * whole process group is dead before a ttl has passed since the last acknowledged keepalive; the control run, with
 * the group kill off, shows the grandchild outliving the lease, so the test can see the fault it guards against.
 */
@Isolated
class LockExecProcessTest {
    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration PATIENCE = Duration.ofSeconds(60);
    /** A second to exit after the command is stopped, plus a second for a loaded machine's noise. */
    private static final Duration EXIT_AFTER_STOP_MAX = Duration.ofSeconds(2);
    private static final Pattern LEASE_END = Pattern.compile("the local lease ends in \\d+ ms, at (\\S+Z); stopping");

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private FencerProcess exec;
    private Path ticks;
    private String lock;

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
        ticks = dir.resolve("ticks");
    }

    @AfterEach
    void stop() {
        if (exec != null) {
            exec.close();
        }
        if (lock != null) { // whatever still carries the lock's environment: a grandchild that escaped
            Processes.withEnvironment("FENCER_LOCK=" + lock).forEach(pid -> ProcessHandle.of(pid)
                    .ifPresent(ProcessHandle::destroyForcibly));
        }
        server.close(); // resumes it first when frozen
    }

    @Test
    void lockExec_serverFrozen_killsTheCommandAndEveryDescendantBeforeTheTtlEnds() throws Exception {
        long groupId = startExec("exec-frozen", false);
        assertThat(Processes.groupMembers(groupId)).as("sh and its ticking subshell").hasSizeGreaterThanOrEqualTo(2);

        server.pause();
        long frozenMillis = System.currentTimeMillis(); // the last acknowledged keepalive was sent before this
        long boundMillis = frozenMillis + TTL.toMillis();

        await().atMost(PATIENCE).until(() -> exec.logText().contains("fencer: lease on exec-frozen#"));
        await().atMost(PATIENCE).pollInterval(Duration.ofMillis(10))
                .until(() -> Processes.groupMembers(groupId).isEmpty());
        long groupGoneSeenMillis = System.currentTimeMillis();

        long lastTickMillis = lastTickNanos() / 1_000_000;
        Instant leaseEnd = leaseEndSaid(exec.logText());
        assertThat(lastTickMillis).as("the last tick (%s ms after the freeze; group seen gone after %s ms) is "
                + "within a ttl of the freeze", lastTickMillis - frozenMillis, groupGoneSeenMillis - frozenMillis)
                .isLessThan(boundMillis);
        assertThat(lastTickMillis).as("and before the local lease end that fencer said").isLessThan(
                leaseEnd.toEpochMilli());
        assertThat(leaseEnd.toEpochMilli()).isLessThanOrEqualTo(boundMillis);
        assertThat(Processes.groupMembers(groupId)).isEmpty();
        assertThat(Processes.withEnvironment("FENCER_LOCK=exec-frozen")).as("no process carries the lock").isEmpty();
        assertThat(exec.logText()).contains("in jeopardy: ").contains("; stopping sh");

        assertThat(exec.awaitExit(PATIENCE)).as(exec.logText()).isEqualTo(3); // the service still frozen
        long exitSeenMillis = System.currentTimeMillis();
        assertThat(exec.logText()).contains("fencer: could not release exec-frozen#");
        // The release is best effort with a short deadline: fencer must not linger on a service that does not answer.
        assertThat(exitSeenMillis - groupGoneSeenMillis).as("ms from the group's death to fencer's exit, server "
                + "still frozen").isLessThan(EXIT_AFTER_STOP_MAX.toMillis());
        server.resume();
    }

    @Test
    void lockExec_serverFrozenAndTheGroupKillOff_theGrandchildOutlivesTheLease() throws Exception {
        startExec("exec-child-only", true);
        long sh = ProcessHandle.of(exec.pid()).orElseThrow().children().findFirst().orElseThrow().pid();

        server.pause();
        long boundMillis = System.currentTimeMillis() + TTL.toMillis();
        await().atMost(PATIENCE).until(() -> exec.logText().contains("fencer: lease on exec-child-only#"));
        await().atMost(PATIENCE).until(() -> ProcessHandle.of(sh).isEmpty() || !Processes.running(sh));

        // The defect: the direct child is gone, its grandchild ticks on past the bound and is never stopped.
        await().atMost(PATIENCE).until(() -> lastTickNanos() / 1_000_000 > boundMillis + 1_000);
        assertThat(Processes.withEnvironment("FENCER_LOCK=exec-child-only")).as("the grandchild").isNotEmpty();
        server.resume();
        assertThat(exec.awaitExit(PATIENCE)).as(exec.logText()).isEqualTo(3);
        assertThat(Processes.withEnvironment("FENCER_LOCK=exec-child-only")).as("still running after fencer exited")
                .isNotEmpty();
    }

    /** Starts the defect's {@code lock exec} under {@code name}; returns its group id once it ticks with the lock. */
    private long startExec(String name, boolean signalChildOnly) throws IOException {
        lock = name;
        List<String> arguments = new ArrayList<>(List.of("lock", "exec", name, "--ttl", "3s",
                "--server", ports.endpoint()));
        if (signalChildOnly) {
            arguments.add("--signal-child-only");
        }
        arguments.addAll(List.of("--", "sh", "-c", "(trap '' TERM; while :; do date +%s%N >> '" + ticks
                + "'; sleep 0.05; done) & wait"));
        exec = FencerProcess.start("exec", dir, arguments);
        try {
            await().atMost(PATIENCE).until(() -> tickCount() >= 3);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("the command did not tick; fencer's log:\n" + exec.logText(), e);
        }
        long child = ProcessHandle.of(exec.pid()).orElseThrow().children().findFirst().orElseThrow().pid();
        long groupId = Processes.groupOf(child).orElseThrow();
        assertThat(groupId == child).as("the command leads its own group").isEqualTo(!signalChildOnly);
        return groupId;
    }

    private long tickCount() throws IOException {
        return tickLines().size();
    }

    private long lastTickNanos() throws IOException {
        List<String> lines = tickLines();
        assertThat(lines).isNotEmpty();
        return Long.parseLong(lines.get(lines.size() - 1));
    }

    private List<String> tickLines() throws IOException {
        if (!Files.exists(ticks)) {
            return List.of();
        }
        // A line being written may be cut short: only whole readings count.
        return Files.readAllLines(ticks).stream().filter(line -> line.matches("\\d{19}")).collect(Collectors.toList());
    }

    private static Instant leaseEndSaid(String log) {
        Matcher matcher = LEASE_END.matcher(log);
        assertThat(matcher.find()).as("the lease end in %s", log).isTrue();
        return Instant.parse(matcher.group(1));
    }

    /** The process table, from {@code /proc}. */
    static final class Processes {
        private Processes() {}

        /** Returns the pids of the running (not zombie) processes in group {@code groupId}. */
        static List<Long> groupMembers(long groupId) {
            return all().stream().filter(pid -> groupOf(pid).orElse(-1L) == groupId && running(pid))
                    .collect(Collectors.toList());
        }

        /** Returns the pids of running processes whose environment holds {@code entry} ("NAME=value"). */
        static List<Long> withEnvironment(String entry) {
            List<Long> found = new ArrayList<>();
            for (long pid : all()) {
                try {
                    String environment = Files.readString(Path.of("/proc", Long.toString(pid), "environ"),
                            StandardCharsets.ISO_8859_1);
                    if (("\0" + environment).contains("\0" + entry + "\0") && running(pid)) {
                        found.add(pid);
                    }
                } catch (IOException | SecurityException exitedOrNotOurs) {
                    // not ours to read, or gone
                }
            }
            return found;
        }

        static Optional<Long> groupOf(long pid) {
            return stat(pid).map(fields -> Long.parseLong(fields[2]));
        }

        static boolean running(long pid) {
            return stat(pid).map(fields -> !fields[0].equals("Z") && !fields[0].equals("X")).orElse(false);
        }

        /** Returns the fields of /proc/PID/stat after the command name: state, ppid, pgrp, session, ... */
        private static Optional<String[]> stat(long pid) {
            try {
                String text = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.UTF_8);
                return Optional.of(text.substring(text.lastIndexOf(')') + 2).split(" "));
            } catch (IOException exited) {
                return Optional.empty();
            }
        }

        private static List<Long> all() {
            List<Long> pids = new ArrayList<>();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
                entries.forEach(entry -> pids.add(Long.parseLong(entry.getFileName().toString())));
            } catch (IOException e) {
                throw new AssertionError("cannot list /proc", e);
            }
            return pids;
        }
    }
}

package io.fencer.cli.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencingToken;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The supervision of {@code fencer lock exec}'s child, with real child processes and no server. */
class ChildSupervisorTest {
    private static final FencingToken TOKEN = new FencingToken("orders", 32);
    private static final Duration GENEROUS = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    private final StringWriter err = new StringWriter();
    private final List<ProcessHandle> started = new ArrayList<>();
    private final Map<Process, ProcessGroup> groups = new HashMap<>();
    private String commandName;

    @AfterEach
    void killLeftovers() throws IOException {
        for (ProcessHandle process : started) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            ProcessGroup.livingMembers(process.pid()).forEach(pid -> ProcessHandle.of(pid)
                    .ifPresent(ProcessHandle::destroyForcibly));
        }
        Path escaped = directory.resolve("grandchild.pid");
        if (Files.exists(escaped) && !Files.readString(escaped).isBlank()) {
            ProcessHandle.of(Long.parseLong(Files.readString(escaped).strip()))
                    .ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void supervise_childExitsByItself_passesItsStatusThrough() throws Exception {
        Process child = start("sh", "-c", "exit 7");

        int status = supervisor(child, Duration.ofSeconds(5)).supervise(lease(new CompletableFuture<>()),
                new CompletableFuture<>());

        assertThat(status).isEqualTo(7);
        assertThat(err.toString()).isEmpty();
    }

    @Test
    void supervise_childSucceeds_returnsZero() throws Exception {
        Process child = start("true");

        assertThat(supervisor(child, Duration.ofSeconds(5)).supervise(lease(new CompletableFuture<>()),
                new CompletableFuture<>())).isZero();
    }

    @Test
    void processBuilder_token_putsLockSequencerAndValueInTheChildsEnvironment() throws Exception {
        Process child = start("sh", "-c",
                "echo \"$FENCER_LOCK|$FENCER_TOKEN|$FENCER_TOKEN_VALUE|$HOME\"");

        int status = supervisor(child, Duration.ofSeconds(5)).supervise(lease(new CompletableFuture<>()),
                new CompletableFuture<>());

        assertThat(status).isZero();
        assertThat(output().strip()).isEqualTo("orders|fencer1.b3JkZXJz.32|32|" + System.getenv("HOME"));
    }

    @Test
    void supervise_leaseLost_stopsTheChildWithSigtermAndReturnsThree() throws Exception {
        Process child = start("sleep", "60");
        CompletableFuture<String> leaseLost = new CompletableFuture<>();
        ChildSupervisor supervisor = supervisor(child, GENEROUS);

        CompletableFuture<Integer> status = CompletableFuture.supplyAsync(() -> superviseUnchecked(supervisor,
                leaseLost, new CompletableFuture<>()));
        leaseLost.complete("session 5 expired");

        assertThat(status.get(GENEROUS.toSeconds(), TimeUnit.SECONDS))
                .isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(child.isAlive()).isFalse();
        assertThat(child.exitValue()).as("ended by SIGTERM (128 + 15)").isEqualTo(143);
        assertThat(err.toString()).isEqualTo("fencer: lease on orders#32 lost: session 5 expired; stopping sleep"
                + System.lineSeparator());
    }

    @Test
    void supervise_leaseLost_sendsSigtermFirst() throws Exception {
        Process child = start("sh", "-c",
                "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.1; done");
        awaitOutput("ready");

        // The lease is lost (a keepalive failed) while the local lease still has a day left: SIGTERM, and the grace
        // for the child's trap. A lease with no time left would go straight on to SIGKILL, racing the trap.
        ChildSupervisor.Lease lost = new ChildSupervisor.Lease(CompletableFuture.completedFuture("lost: keepalive"),
                () -> Duration.ofDays(1));
        int status = supervisor(child, GENEROUS).supervise(lost, new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(output()).contains("got-term");
        assertThat(child.exitValue()).as("the child's own trap ended it").isZero();
    }

    @Test
    void supervise_leaseLostAndChildIgnoresSigterm_killsItAfterTheGrace() throws Exception {
        Process child = start("sh", "-c", "trap '' TERM; echo ready; sleep 60; echo done");
        awaitOutput("ready");
        List<ProcessHandle> tree = new ArrayList<>(child.descendants().collect(Collectors.toList()));
        tree.add(child.toHandle());

        int status = supervisor(child, Duration.ofMillis(300)).supervise(
                lease(CompletableFuture.completedFuture("no keepalive acknowledged for 10000 ms")),
                new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(child.exitValue()).as("ended by SIGKILL (128 + 9)").isEqualTo(137);
        await().atMost(GENEROUS).until(() -> tree.stream().noneMatch(ProcessHandle::isAlive));
        assertThat(output()).doesNotContain("done");
        assertThat(err.toString()).contains("lost: no keepalive acknowledged for 10000 ms; stopping sh");
    }

    @Test
    void supervise_stopRequested_stopsTheChildAndReturnsItsStatus() throws Exception {
        Process child = start("sleep", "60");

        int status = supervisor(child, GENEROUS).supervise(lease(new CompletableFuture<>()),
                CompletableFuture.completedFuture("INT"));

        assertThat(status).isEqualTo(143);
        assertThat(child.isAlive()).isFalse();
        assertThat(err.toString()).as("a requested stop is no error").isEmpty();
    }

    /** The defect's command: a grandchild that ignores SIGTERM and ticks the wall clock (ns) into a file. */
    private static final String TICKER = "(trap '' TERM; while :; do date +%s%N >> ticks; sleep 0.05; done) & "
            + "echo $! > grandchild.pid; wait";

    @Test
    void supervise_leaseLostAndGrandchildIgnoresSigterm_killsTheWholeGroup() throws Exception {
        Process child = start("sh", "-c", TICKER);
        awaitTicks();
        long grandchild = grandchildPid();

        int status = supervisor(child, Duration.ofMillis(300)).supervise(
                lease(CompletableFuture.completedFuture("session 5 expired")), new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(ProcessGroup.livingMembers(child.pid())).as("no member of the group is left").isEmpty();
        assertThat(ProcessGroup.ProcStat.read(grandchild).filter(ProcessGroup.ProcStat::running))
                .as("the grandchild that ignored SIGTERM").isEmpty();
    }

    @Test
    void supervise_directChildOnly_leavesTheGrandchildRunning() throws Exception {
        Process child = started(ProcessGroup.directChildOnly(builder("sh", "-c", TICKER)));
        awaitTicks();
        long grandchild = grandchildPid();

        int status = supervisor(child, Duration.ofMillis(300)).supervise(
                lease(CompletableFuture.completedFuture("session 5 expired")), new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(child.isAlive()).isFalse();
        long ticksAtReturn = ticks().size();
        await().atMost(GENEROUS).until(() -> ticks().size() > ticksAtReturn + 2);
        assertThat(ProcessGroup.ProcStat.read(grandchild).filter(ProcessGroup.ProcStat::running))
                .as("without the group, the grandchild outlives the stop (the defect)").isPresent();
    }

    @Test
    void supervise_childExitsLeavingABackgroundProcess_stopsItAndPassesTheStatusThrough() throws Exception {
        Process child = start("sh", "-c", "sleep 60 & echo $! > grandchild.pid; exit 4");

        int status = supervisor(child, GENEROUS).supervise(lease(new CompletableFuture<>()),
                new CompletableFuture<>());

        assertThat(status).isEqualTo(4);
        assertThat(ProcessGroup.livingMembers(child.pid())).isEmpty();
        assertThat(ProcessGroup.ProcStat.read(grandchildPid()).filter(ProcessGroup.ProcStat::running)).isEmpty();
        assertThat(err.toString()).contains("fencer: sh exited with 4 and left 1 process(es) running in its "
                + "process group " + child.pid() + "; stopping them before releasing the lock");
    }

    @Test
    void supervise_leaseRunsLow_killsTheGroupBeforeTheLocalLeaseEnds() throws Exception {
        Process child = start("sh", "-c", "trap '' TERM; while :; do date +%s%N >> ticks; sleep 0.05; done");
        awaitTicks();
        long leaseEndMillis = System.currentTimeMillis() + 1_500;
        ChildSupervisor.Lease lease = new ChildSupervisor.Lease(new CompletableFuture<>(),
                () -> Duration.ofMillis(Math.max(0, leaseEndMillis - System.currentTimeMillis())));
        Duration killAfter = Duration.ofMillis(300);

        int status = supervisor(child, killAfter).supervise(lease, new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(ProcessGroup.livingMembers(child.pid())).isEmpty();
        List<Long> ticks = ticks();
        long lastTickMillis = ticks.get(ticks.size() - 1) / 1_000_000;
        assertThat(lastTickMillis).as("the last tick is before the local lease end").isLessThan(leaseEndMillis);
        long stopAtMillis = leaseEndMillis - killAfter.plus(ChildSupervisor.KILL_MARGIN).toMillis();
        assertThat(lastTickMillis).as("it ran on after SIGTERM, which it ignores, until SIGKILL")
                .isGreaterThanOrEqualTo(stopAtMillis);
        assertThat(err.toString()).startsWith("fencer: lease on orders#32 in jeopardy: ")
                .contains("ms of the local lease left, no more than --kill-after (300 ms) + 150 ms; "
                        + "the local lease ends in ")
                .endsWith("; stopping sh" + System.lineSeparator());
    }

    private void awaitTicks() {
        await().atMost(GENEROUS).until(() -> ticks().size() >= 2);
    }

    private List<Long> ticks() throws IOException {
        Path file = directory.resolve("ticks");
        if (!Files.exists(file)) {
            return List.of();
        }
        // The last line may be half written.
        return Files.readAllLines(file).stream().filter(line -> line.matches("\\d{19}")).map(Long::parseLong)
                .collect(Collectors.toList());
    }

    private long grandchildPid() throws IOException {
        await().atMost(GENEROUS).until(() -> Files.exists(directory.resolve("grandchild.pid"))
                && !Files.readString(directory.resolve("grandchild.pid")).isBlank());
        return Long.parseLong(Files.readString(directory.resolve("grandchild.pid")).strip());
    }

    /** Starts {@code command} in its own process group, as {@code fencer lock exec} does. */
    private Process start(String... command) throws IOException {
        return started(ProcessGroup.start(builder(command)));
    }

    private ProcessBuilder builder(String... command) {
        commandName = command[0];
        return ChildSupervisor.processBuilder(List.of(command), TOKEN, TOKEN.sequencer())
                .redirectOutput(directory.resolve("out.txt").toFile())
                .redirectErrorStream(true)
                .directory(directory.toFile());
    }

    private Process started(ProcessGroup group) {
        groups.put(group.leader(), group);
        started.add(group.leader().toHandle());
        return group.leader();
    }

    private ChildSupervisor supervisor(Process child, Duration killAfter) {
        return new ChildSupervisor(groups.get(child), commandName, TOKEN, killAfter, new PrintWriter(err, true));
    }

    /** A lease that is lost when {@code leaseLost} completes (with the detail): until then it never runs low. */
    private static ChildSupervisor.Lease lease(CompletableFuture<String> leaseLost) {
        return new ChildSupervisor.Lease(leaseLost.thenApply(detail -> "lost: " + detail),
                () -> leaseLost.isDone() ? Duration.ZERO : Duration.ofDays(1));
    }

    private String output() throws IOException {
        return Files.readString(directory.resolve("out.txt"), StandardCharsets.UTF_8);
    }

    private void awaitOutput(String text) {
        await().atMost(GENEROUS).until(() -> output().contains(text));
    }

    private static int superviseUnchecked(ChildSupervisor supervisor, CompletableFuture<String> leaseLost,
            CompletableFuture<String> stop) {
        try {
            return supervisor.supervise(lease(leaseLost), stop);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}

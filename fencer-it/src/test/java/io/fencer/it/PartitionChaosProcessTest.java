package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.chaos.ChaosOptions;
import io.fencer.chaos.ChaosRun;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.fault.FaultSchedule;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Network faults in CI: every process on its own network namespace, partitions made and healed by the harness,
 * the {@code lease-belief} check, and the network's cleanup. Needs root (CI runs as root): without it every test
 * here fails, it is never skipped.
 *
 * <p>The runs are short (25 s of workload for the mixed faults, 30 s for the six leader-minority partitions; 30 s
 * each with {@code -Dfencer.soak=true}); {@code fencer chaos --faults partition --duration 3m} is the long run
 * (docs/chaos.md).
 */
@ResourceLock(TestResources.CHAOS)
class PartitionChaosProcessTest {
    /** The leader-minority runs' workload: six partitions of 2 to 4 s each, with their gaps, need about 30 s. */
    private static final Duration RUN = Duration.ofSeconds(30);
    /**
     * The mixed-fault runs' workload: the first seed's schedule (two partitions, a pause, a leader kill) ends at
     * 24.0 s; with 30 s it has a second leader kill.
     */
    private static final Duration MIXED_RUN = Soak.pick(Duration.ofSeconds(25), Duration.ofSeconds(30));
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration INTERVAL = Duration.ofSeconds(3);
    private static final Launcher LAUNCHER = ChildJvm.launcher();
    /** The most runs the teeth test makes to find the race the lease fix closes. */
    private static final int TEETH_RUNS_MAX = 4;

    @TempDir
    Path dir;

    @BeforeAll
    static void requireRoot() throws Exception {
        ChaosRuns.requireRoot();
    }

    @Test
    void chaos_threePeersPartitionsPausesAndLeaderKills_findsNoViolationAndControlFindsLostUpdates()
            throws Exception {
        Set<Fault.Kind> kinds = EnumSet.of(Fault.Kind.PARTITION, Fault.Kind.PAUSE, Fault.Kind.KILL_LOCK);
        Set<Fault.Partition> partitions = EnumSet.allOf(Fault.Partition.class);
        long seed = firstSeed(kinds, partitions, 4, MIXED_RUN, TTL, INTERVAL, 1,
                schedule -> count(schedule, Fault.Kind.PARTITION) >= 2 && count(schedule, Fault.Kind.PAUSE) >= 1
                        && count(schedule, Fault.Kind.KILL_LOCK) >= 1);

        ChaosRun.Outcome[] runs = ChaosRuns.together(options(seed, kinds, partitions, 4, Duration.ofMillis(100),
                true, false, "fenced"), options(seed, kinds, partitions, 4, Duration.ofMillis(100), false, false,
                "control"), LAUNCHER);
        ChaosRun.Outcome fenced = runs[0];
        ChaosRun.Outcome control = runs[1];

        CheckResult result = fenced.result();
        assertThat(result.violations()).as("violations with fencing").isEmpty();
        assertThat(result.violationsByCheck()).containsEntry(CheckResult.LEASE_BELIEF, 0);
        assertThat(result.counts().get("partitions")).isGreaterThanOrEqualTo(2);
        assertThat(result.counts().get("failovers")).isGreaterThanOrEqualTo(1);
        assertThat(result.counts().get("writes_stale")).as("stale writes refused").isGreaterThanOrEqualTo(1);
        assertThat(Files.readString(dir.resolve("fenced.json"))).contains("\"partitions\": ", "\"lease-belief\": 0");
        assertThat(Files.readString(dir.resolve("fenced.svg"))).contains("fr-cuts", "cut off");
        assertThat(Files.readString(fenced.history())).contains("\"op\":\"partition\"", "\"op\":\"heal\"");

        assertThat(control.schedule()).isEqualTo(fenced.schedule());
        assertThat(control.result().violations()).as("the control run (fencing off) must find violations")
                .isNotEmpty();
        assertThat(control.result().counts().get("partitions")).isGreaterThanOrEqualTo(2);
    }

    /**
     * The lease fix has teeth: with it switched off ({@code --unsafe-lease-ack}), a deposed leader cut from its
     * peers, with the holder of the lock that reaches only it, still acknowledges the holder's keepalives, whose
     * local lease so runs on while the new leader expires the session and grants the lock to another worker.
     *
     * <p>A partition shows it only when the deposed leader's last acknowledgement comes after the majority elected
     * its leader, and the holder still holds then: a race each partition runs once. Measured here, a 30 s run of
     * six partitions found violations about two times in three, so the test runs at most {@link #TEETH_RUNS_MAX}
     * runs, each a fixed, replayable schedule, and fails when none finds one. Four: with three, a fresh-clone run of
     * the suite missed it once (the one in 27 that three allow); four miss one in 81, and the fourth runs only then.
     */
    @Test
    @Tag(Soak.TAG) // with its twin below: up to four 30 s runs; the default suite's budget cannot hold them
    void chaos_leaderMinorityWithUnsafeLeaseAck_findsLeaseBeliefViolations() throws Exception {
        List<Integer> found = new ArrayList<>();
        for (int attempt = 1; attempt <= TEETH_RUNS_MAX && found.stream().mapToInt(Integer::intValue).sum() == 0;
                attempt++) {
            CheckResult result = run(leaderMinority(attempt, true, "unsafe-" + attempt)).result();
            assertThat(result.counts().get("partitions")).isGreaterThanOrEqualTo(6);
            // fencing still holds: the stale holder's writes are refused, the store's state is whole
            assertThat(result.violationsByCheck()).containsEntry(CheckResult.TOKENS_MONOTONIC, 0)
                    .containsEntry(CheckResult.NO_LOST_UPDATE, 0);
            found.add(result.violationsByCheck().get(CheckResult.LEASE_BELIEF));
        }
        assertThat(found).as("lease-belief violations per run with the server's lease fix switched off")
                .anyMatch(count -> count > 0);
    }

    /** The same run with the lease fix on: no worker believes it holds the lock while another is granted it. */
    @Test
    @Tag(Soak.TAG) // default suite: the three-peer partition run above holds lease-belief at 0 with the fix on
    void chaos_leaderMinorityWithLeaseFix_findsNoLeaseBeliefViolation() throws Exception {
        ChaosRun.Outcome outcome = run(leaderMinority(1, false, "safe"));

        CheckResult result = outcome.result();
        assertThat(result.counts().get("partitions")).isGreaterThanOrEqualTo(6);
        assertThat(result.violations()).as("violations with the lease fix on").isEmpty();
    }

    /**
     * Leader-minority partitions, many (one every 1.5 s or so), with a short lease (1 s: keepalives every 333 ms,
     * so the deposed leader's last acknowledgement comes late in its last term) and long holds (think up to 10 s,
     * so the holder still holds when the majority's leader expires its session).
     */
    private ChaosOptions leaderMinority(int nthSeed, boolean unsafeLeaseAck, String name) {
        Set<Fault.Kind> kinds = EnumSet.of(Fault.Kind.PARTITION);
        Set<Fault.Partition> partitions = EnumSet.of(Fault.Partition.LEADER_MINORITY);
        Duration ttl = Duration.ofSeconds(1);
        Duration interval = Duration.ofMillis(1_500); // many partitions: each is one chance for the defect
        long seed = firstSeed(kinds, partitions, 4, RUN, ttl, interval, nthSeed,
                schedule -> count(schedule, Fault.Kind.PARTITION) >= 6);
        return new ChaosOptions(4, Workload.COUNTER, RUN, seed, kinds, 3, Duration.ofSeconds(10), ttl, interval,
                true, dir.resolve(name), dir.resolve(name + ".html"), null, dir.resolve(name + ".json"), partitions,
                unsafeLeaseAck);
    }

    /**
     * A harness killed with SIGKILL in the middle of a partition run leaves its namespaces, links and servers
     * behind (the control: the leftovers are real); the next run sweeps them all away.
     */
    @Test
    @Tag(Soak.TAG) // housekeeping, not safety: the default suite's runs each start by sweeping what a killed run left
    void chaos_afterHarnessKilledMidRun_nextRunLeavesNoLeftover() throws Exception {
        List<String> command = new ArrayList<>(LAUNCHER.commandPrefix());
        command.addAll(List.of("chaos", "--faults=partition", "--peers=1", "--workers=1", "--duration=60s",
                "--seed=1", "--dir=" + dir.resolve("crashed")));
        Process harness = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("crashed.log").toFile()).start();
        String tag = Long.toString(harness.pid(), 36) + "x";
        try {
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
                    .until(() -> Files.readString(dir.resolve("crashed.log")).contains("workers ready"));
            List<Long> children = harness.descendants().map(ProcessHandle::pid).toList();

            harness.destroyForcibly();
            harness.waitFor(30, TimeUnit.SECONDS);

            assertThat(namespacesOf(tag)).as("the crashed run's namespaces").hasSize(3); // n1, store, w1
            assertThat(linksOf(tag)).as("the crashed run's bridge and veth ends").isNotEmpty();
            assertThat(children).as("the crashed run's servers and worker").isNotEmpty();

            ChaosRun.Outcome next = run(new ChaosOptions(1, Workload.COUNTER, Duration.ofSeconds(1), 1,
                    EnumSet.of(Fault.Kind.PARTITION), 1, Duration.ofMillis(100), TTL, INTERVAL, true,
                    dir.resolve("next"), null, null, null));

            assertThat(next.result().violations()).isEmpty();
            assertThat(namespacesOf(tag)).as("namespaces left by the crashed run").isEmpty();
            assertThat(linksOf(tag)).as("links left by the crashed run").isEmpty();
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(children.stream()
                    .filter(pid -> ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)))
                    .as("processes left by the crashed run").isEmpty());
            assertThat(namespacesOf(Long.toString(ProcessHandle.current().pid(), 36) + "x"))
                    .as("the next run's own namespaces, after it ended").isEmpty();
        } finally {
            harness.destroyForcibly();
        }
    }

    /** Without root a run with network faults fails at once, naming what is missing; it is never skipped. */
    @Test
    void chaos_partitionAsNonRoot_failsAtOnceNamingRoot() throws Exception {
        Path jar = Path.of("..", "fencer-cli", "target", "fencer.jar").toAbsolutePath().normalize();
        // the build's class path lies under /root, which user nobody cannot read; the packaged jar is readable
        assertThat(jar).as("the CLI's jar, packaged before this module's tests").exists();
        List<String> command = List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", jar.toString(), "chaos",
                "--faults=partition", "--duration=5s", "--dir=" + dir.resolve("nobody"));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();

        assertThat(process.exitValue()).as(output).isNotZero();
        assertThat(output).contains("network faults (partition, flaky) need root (this process runs as uid 65534");
        assertThat(output).doesNotContain("servers up");
        assertThat(dir.resolve("nobody")).doesNotExist();
    }

    private ChaosRun.Outcome run(ChaosOptions options) throws Exception {
        return ChaosRuns.narrated(options, LAUNCHER);
    }

    private ChaosOptions options(long seed, Set<Fault.Kind> kinds, Set<Fault.Partition> partitions, int workers,
            Duration thinkMax, boolean fencing, boolean unsafeLeaseAck, String name) {
        return new ChaosOptions(workers, Workload.COUNTER, MIXED_RUN, seed, kinds, 3, thinkMax, TTL, INTERVAL,
                fencing, dir.resolve(name), dir.resolve(name + ".html"), dir.resolve(name + ".svg"),
                dir.resolve(name + ".json"), partitions, unsafeLeaseAck);
    }

    /**
     * Returns the {@code nth} seed from 1 whose schedule {@code wanted} accepts: the run is then fixed, and
     * replayable.
     */
    private static long firstSeed(Set<Fault.Kind> kinds, Set<Fault.Partition> partitions, int workers,
            Duration run, Duration ttl, Duration interval, int nth, Predicate<List<Fault>> wanted) {
        int accepted = 0;
        for (long seed = 1; seed < 1_000; seed++) {
            if (wanted.test(FaultSchedule.plan(seed, kinds, partitions, workers, 3, run, ttl, interval))
                    && ++accepted == nth) {
                return seed;
            }
        }
        throw new AssertionError("no seed below 1000 gives the wanted schedule");
    }

    private static long count(List<Fault> schedule, Fault.Kind kind) {
        return schedule.stream().filter(fault -> fault.kind() == kind).count();
    }

    private static List<String> namespacesOf(String tagPrefix) throws IOException, InterruptedException {
        return lines("ip", "netns", "list").stream().map(line -> line.split("\\s+")[0])
                .filter(name -> name.startsWith("fc-" + tagPrefix)).toList();
    }

    private static List<String> linksOf(String tagPrefix) throws IOException, InterruptedException {
        return lines("ip", "-o", "link", "show").stream().map(line -> line.split(":\\s+", 3))
                .filter(fields -> fields.length >= 2).map(fields -> fields[1].split("@")[0])
                .filter(name -> name.matches("fc[bvp]" + tagPrefix + ".*")).toList();
    }

    private static List<String> lines(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        process.waitFor(30, TimeUnit.SECONDS);
        return output.lines().filter(line -> !line.isBlank()).toList();
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.ChaosOptions;
import io.fencer.chaos.ChaosRun;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.fault.FaultSchedule;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.workload.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code fencer chaos --store replicated}: the counter workload writes to the three peers' replicated store, no
 * store server runs, {@code kill-store} kills the group's leader (the store's leader) and the partitions isolate it.
 * With fencing the checker finds nothing; the control run of the same schedule, fencing off, finds lost updates.
 * Needs root for the partitions (CI runs as root): without it the test fails, it is never skipped.
 */
@ResourceLock(TestResources.CHAOS)
class ReplicatedStoreChaosProcessTest {
    private static final Duration RUN = Duration.ofSeconds(25);
    /** A failover (detection, election) should not end every lease. */
    private static final Duration TTL = Duration.ofSeconds(3);
    private static final Duration INTERVAL = Duration.ofSeconds(3);
    private static final int WORKERS = 4;
    /** The time a paused worker is given after it resumes, to make its stale write before the run ends. */
    private static final Duration AFTER_PAUSE = Duration.ofSeconds(8);
    private static final Set<Fault.Kind> KINDS = EnumSet.of(Fault.Kind.PAUSE, Fault.Kind.KILL_LOCK,
            Fault.Kind.KILL_STORE, Fault.Kind.PARTITION);
    /** The partitions that cut the store's leader off: alone, or with the worker that last read under a grant. */
    private static final Set<Fault.Partition> PARTITIONS = EnumSet.of(Fault.Partition.LEADER_ISOLATED,
            Fault.Partition.LEADER_MINORITY);
    private static final Launcher LAUNCHER = ChildJvm.launcher();

    @TempDir
    Path dir;

    @BeforeAll
    static void requireRoot() throws Exception {
        ChaosRuns.requireRoot();
    }

    @Test
    void chaos_replicatedStoreLeaderKilledAndIsolated_findsNoViolationAndControlFindsLostUpdates() throws Exception {
        long seed = firstSeed();

        ChaosRun.Outcome[] runs = ChaosRuns.together(options(seed, true, "fenced"), options(seed, false, "control"),
                LAUNCHER);
        ChaosRun.Outcome fenced = runs[0];
        ChaosRun.Outcome control = runs[1];

        CheckResult result = fenced.result();
        assertThat(result.violations()).as("violations with fencing").isEmpty();
        assertThat(result.counts().get("writes_ok")).isPositive();
        assertThat(result.counts().get("writes_stale")).as("stale writes refused").isGreaterThanOrEqualTo(1);
        assertThat(result.counts().get("store_failovers")).as("kills of the store's leader")
                .isGreaterThanOrEqualTo(1);
        assertThat(result.counts().get("partitions")).isGreaterThanOrEqualTo(1);
        assertThat(Files.readString(fenced.history())).as("no store server ran").doesNotContain("\"target\":\"store\"");
        assertThat(Files.exists(dir.resolve("fenced").resolve("servers").resolve("store"))).isFalse();

        assertThat(control.schedule()).isEqualTo(fenced.schedule());
        assertThat(control.result().violations()).as("the control run (fencing off) must find violations")
                .isNotEmpty();
        assertThat(control.result().violationsByCheck().get(CheckResult.NO_LOST_UPDATE)).isPositive();
    }

    private ChaosOptions options(long seed, boolean fencing, String name) {
        return new ChaosOptions(WORKERS, Workload.COUNTER, RUN, seed, KINDS, 3, Duration.ofMillis(100), TTL,
                INTERVAL, fencing, dir.resolve(name), null, null, dir.resolve(name + ".json"), PARTITIONS, false)
                .withReplicatedStore(true);
    }

    /**
     * Returns the first seed from 1 whose schedule has every kind of fault, and a pause that ends at least
     * {@link #AFTER_PAUSE} before the run does: the run is then fixed, and replayable. Why the margin: a pause arms
     * at the worker's next read under a grant, and the frozen worker's stale write comes after it resumes; with the
     * pause last in the run (seed 22), a busy machine once ended the run before that write, and nothing was refused.
     */
    private static long firstSeed() {
        for (long seed = 1; seed < 1_000; seed++) {
            List<Fault> schedule = FaultSchedule.plan(seed, KINDS, PARTITIONS, WORKERS, 3, RUN, TTL, INTERVAL);
            boolean earlyPause = schedule.stream().anyMatch(fault -> fault.kind() == Fault.Kind.PAUSE
                    && fault.atMillis() + fault.durationMillis() <= RUN.minus(AFTER_PAUSE).toMillis());
            if (earlyPause && KINDS.stream().allMatch(kind -> schedule.stream().anyMatch(f -> f.kind() == kind))) {
                return seed;
            }
        }
        throw new AssertionError("no seed below 1000 gives the wanted schedule");
    }
}

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
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code fencer chaos --workload semaphore} in CI: four real worker processes share a semaphore of two permits,
 * each writing its slot's counter under the slot's token, with SIGSTOP pauses past the lease and SIGKILLs of
 * workers. With fencing the per-slot checks and {@code permits-bounded} find nothing and at least one stale write
 * was refused (the pause hurt); the control, the same schedule with fencing off, must find lost updates per slot.
 */
@ResourceLock(TestResources.CHAOS)
// The long tier: the full suite keeps SemaphoreCheckTest (the per-slot check), SemaphoreExecProcessTest (real
// processes holding slots) and the lock's chaos runs, whose writes pass the same token check in the store.
@Tag(Soak.TAG)
class SemaphoreChaosProcessTest {
    private static final int WORKERS = 4;
    private static final int PERMITS = 2;
    /** Seed 1's schedule (a worker kill, two pauses) ends at 14.2 s; 20 s with {@code -Dfencer.soak=true}. */
    private static final Duration RUN = Soak.pick(Duration.ofSeconds(16), Duration.ofSeconds(20));
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration INTERVAL = Duration.ofSeconds(2);
    private static final Set<Fault.Kind> KINDS = EnumSet.of(Fault.Kind.PAUSE, Fault.Kind.KILL_WORKER);
    private static final Launcher LAUNCHER = ChildJvm.launcher();

    @TempDir
    Path dir;

    @Test
    void chaos_semaphoreWithFencing_pausesAndKills_findsNoViolationAndControlFindsLostUpdates() throws Exception {
        long seed = firstSeed();

        ChaosRun.Outcome[] runs = ChaosRuns.together(options(seed, true, "fenced"), options(seed, false, "control"),
                LAUNCHER);
        ChaosRun.Outcome fenced = runs[0];

        CheckResult result = fenced.result();
        assertThat(result.workload()).isEqualTo(Workload.SEMAPHORE);
        assertThat(result.violations()).as("violations with fencing").isEmpty();
        assertThat(result.violationsByCheck()).containsEntry(CheckResult.PERMITS_BOUNDED, 0)
                .containsEntry(CheckResult.NO_LOST_UPDATE, 0).containsEntry(CheckResult.LEASE_BELIEF, 0);
        assertThat(result.counts().get("pauses")).isGreaterThanOrEqualTo(2);
        assertThat(result.counts().get("kills")).isGreaterThanOrEqualTo(1);
        assertThat(result.counts().get("slots_used")).as("both permits used").isEqualTo(PERMITS);
        assertThat(result.counts().get("writes_ok")).isPositive();
        assertThat(result.counts().get("writes_stale")).as("stale writes refused").isGreaterThanOrEqualTo(1);
        assertThat(Files.readString(dir.resolve("fenced.json"))).contains("\"valid\": true");
        List<String> finalReads = Files.readAllLines(fenced.history()).stream()
                .filter(line -> line.contains("\"final_read\"")).toList();
        assertThat(finalReads).as("one final read per slot").hasSize(PERMITS)
                .anySatisfy(line -> assertThat(line).contains("chaos/permit-0"))
                .anySatisfy(line -> assertThat(line).contains("chaos/permit-1"));

        ChaosRun.Outcome control = runs[1];

        assertThat(control.schedule()).isEqualTo(fenced.schedule());
        assertThat(control.result().violations()).as("the control run (fencing off) must find violations")
                .isNotEmpty();
        assertThat(control.result().violationsByCheck().get(CheckResult.NO_LOST_UPDATE)).isPositive();
        assertThat(control.result().violations()).anySatisfy(violation ->
                assertThat(violation.description()).startsWith("chaos/permit-"));
    }

    private ChaosRun.Outcome run(ChaosOptions options) throws Exception {
        return ChaosRuns.narrated(options, LAUNCHER);
    }

    private ChaosOptions options(long seed, boolean fencing, String name) {
        return new ChaosOptions(WORKERS, Workload.SEMAPHORE, RUN, seed, KINDS, 1, Duration.ofMillis(100), TTL,
                INTERVAL, fencing, dir.resolve(name), null, null, dir.resolve(name + ".json"),
                EnumSet.allOf(Fault.Partition.class), false, PERMITS);
    }

    /** Returns the first seed from 1 with at least two pauses and a worker kill: the run is fixed and replayable. */
    private static long firstSeed() {
        for (long seed = 1; seed < 1_000; seed++) {
            List<Fault> schedule = FaultSchedule.plan(seed, KINDS, WORKERS, RUN, TTL, INTERVAL);
            if (count(schedule, Fault.Kind.PAUSE) >= 2 && count(schedule, Fault.Kind.KILL_WORKER) >= 1) {
                return seed;
            }
        }
        throw new AssertionError("no seed below 1000 gives the wanted schedule");
    }

    private static long count(List<Fault> schedule, Fault.Kind kind) {
        return schedule.stream().filter(fault -> fault.kind() == kind).count();
    }
}

package io.fencer.chaos.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FaultScheduleTest {
    private static final Set<Fault.Kind> ALL = EnumSet.allOf(Fault.Kind.class);
    private static final Duration RUN = Duration.ofMinutes(2);
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration INTERVAL = Duration.ofSeconds(3);

    @Test
    void plan_sameSeed_givesSameSchedule() {
        List<Fault> first = FaultSchedule.plan(42, ALL, 5, RUN, TTL, INTERVAL);
        List<Fault> again = FaultSchedule.plan(42, EnumSet.copyOf(ALL), 5, RUN, TTL, INTERVAL);

        assertThat(first).isNotEmpty().isEqualTo(again);
    }

    @Test
    void plan_otherSeed_givesAnotherSchedule() {
        assertThat(FaultSchedule.plan(42, ALL, 5, RUN, TTL, INTERVAL))
                .isNotEqualTo(FaultSchedule.plan(43, ALL, 5, RUN, TTL, INTERVAL));
    }

    @Test
    void plan_faultsFollowOneAnotherAndEndBeforeTheRun() {
        for (long seed = 0; seed < 50; seed++) {
            List<Fault> faults = FaultSchedule.plan(seed, ALL, 5, RUN, TTL, INTERVAL);
            long previousEnd = 0;
            for (Fault fault : faults) {
                assertThat(fault.atMillis()).as("seed %d: %s", seed, fault)
                        .isGreaterThan(previousEnd).isGreaterThanOrEqualTo(FaultSchedule.WARM_UP_MILLIS);
                assertThat(fault.endMillis()).isLessThanOrEqualTo(RUN.toMillis());
                previousEnd = fault.endMillis();
            }
        }
    }

    @Test
    void plan_pausesOutlastTheLeaseAndTargetExistingWorkers() {
        List<Fault> faults = FaultSchedule.plan(7, EnumSet.of(Fault.Kind.PAUSE, Fault.Kind.KILL_WORKER), 3,
                RUN, TTL, INTERVAL);

        assertThat(faults).isNotEmpty().allSatisfy(fault -> {
            assertThat(fault.worker()).isBetween(1, 3);
            if (fault.kind() == Fault.Kind.PAUSE) {
                assertThat(fault.durationMillis()).isGreaterThan(TTL.toMillis());
            }
        });
    }

    @Test
    void plan_clockFaults_startTheScheduleAndTargetTheLeaderOrAWorker() {
        Set<Fault.Kind> kinds = EnumSet.of(Fault.Kind.CLOCK, Fault.Kind.PAUSE, Fault.Kind.KILL_LOCK);
        Set<Integer> targets = new HashSet<>();
        for (long seed = 0; seed < 50; seed++) {
            List<Fault> faults = FaultSchedule.plan(seed, kinds, 3, RUN, TTL, INTERVAL);
            assertThat(faults.get(0).kind()).as("seed %d", seed).isEqualTo(Fault.Kind.CLOCK);
            faults.stream().filter(fault -> fault.kind() == Fault.Kind.CLOCK).forEach(fault -> {
                assertThat(fault.worker()).isBetween(0, 3);
                assertThat(fault.durationMillis()).isGreaterThan(TTL.toMillis());
                targets.add(fault.worker());
            });
        }
        assertThat(targets).containsExactlyInAnyOrder(0, 1, 2, 3);
    }

    @Test
    void plan_withoutClockFaults_scheduleUnchangedByThem() {
        // the clock fault's first place must not move the draws of runs without it (their seeds are in tests)
        List<Fault> faults = FaultSchedule.plan(42, EnumSet.of(Fault.Kind.PAUSE, Fault.Kind.KILL_STORE), 5, RUN,
                TTL, INTERVAL);
        assertThat(faults).noneMatch(fault -> fault.kind() == Fault.Kind.CLOCK).isNotEmpty();
        assertThat(faults.get(0).kind()).isIn(Fault.Kind.PAUSE, Fault.Kind.KILL_STORE);
    }

    @Test
    void plan_onlyTheChosenKinds() {
        assertThat(FaultSchedule.plan(9, EnumSet.of(Fault.Kind.KILL_STORE), 5, RUN, TTL, INTERVAL))
                .isNotEmpty().allSatisfy(fault -> assertThat(fault.kind()).isEqualTo(Fault.Kind.KILL_STORE));
        assertThat(FaultSchedule.plan(9, Set.of(), 5, RUN, TTL, INTERVAL)).isEmpty();
    }

    @Test
    void plan_badSettings_failNamingTheValue() {
        assertThatThrownBy(() -> FaultSchedule.plan(1, ALL, 0, RUN, TTL, INTERVAL))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("workers 0");
        assertThatThrownBy(() -> FaultSchedule.plan(1, ALL, 5, RUN, TTL, Duration.ofMillis(10)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0.01S");
    }

    @Test
    void ofFlag_unknownName_listsTheKnownOnes() {
        assertThat(Fault.Kind.ofFlag("kill-store")).isEqualTo(Fault.Kind.KILL_STORE);
        assertThatThrownBy(() -> Fault.Kind.ofFlag("reboot")).hasMessageContaining("'reboot'")
                .hasMessageContaining("kill-lock");
    }

    @Test
    void plan_partitionsWithOnePeer_drawOnlyWorkerIsolated() {
        List<Fault> faults = FaultSchedule.plan(3, EnumSet.of(Fault.Kind.PARTITION),
                EnumSet.allOf(Fault.Partition.class), 4, 1, RUN, TTL, INTERVAL);

        assertThat(faults).isNotEmpty().allSatisfy(fault -> {
            assertThat(fault.partition()).isEqualTo(Fault.Partition.WORKER_ISOLATED);
            assertThat(fault.worker()).isBetween(1, 4);
            assertThat(fault.durationMillis()).isGreaterThan(TTL.toMillis());
        });
        assertThatThrownBy(() -> FaultSchedule.plan(3, EnumSet.of(Fault.Kind.PARTITION),
                EnumSet.of(Fault.Partition.RING), 4, 1, RUN, TTL, INTERVAL))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 lock peer(s)");
    }

    @Test
    void plan_partitionsWithThreePeers_drawEveryChosenPartitionAndLeaveOtherKindsAsTheyWere() {
        List<Fault> faults = FaultSchedule.plan(5, EnumSet.of(Fault.Kind.PARTITION, Fault.Kind.FLAKY),
                EnumSet.allOf(Fault.Partition.class), 3, 3, Duration.ofMinutes(10), TTL, INTERVAL);

        assertThat(faults).extracting(Fault::partition).filteredOn(java.util.Objects::nonNull)
                .containsAll(EnumSet.allOf(Fault.Partition.class));
        assertThat(faults).filteredOn(fault -> fault.kind() == Fault.Kind.FLAKY)
                .isNotEmpty().allSatisfy(fault -> assertThat(fault.partition()).isNull());
        // the process faults' draws do not depend on the partitions or the peers
        Set<Fault.Kind> processFaults = EnumSet.of(Fault.Kind.PAUSE, Fault.Kind.KILL_LOCK);
        assertThat(FaultSchedule.plan(5, processFaults, EnumSet.of(Fault.Partition.RING), 3, 5, RUN, TTL,
                INTERVAL)).isEqualTo(FaultSchedule.plan(5, processFaults, 3, RUN, TTL, INTERVAL));
    }

    @Test
    void fault_partitionWithoutItsKindOrWorker_isRefused() {
        assertThatThrownBy(() -> new Fault(10, Fault.Kind.PARTITION, 0, 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("partition null");
        assertThatThrownBy(() -> new Fault(10, Fault.Kind.PARTITION, 0, 10, Fault.Partition.WORKER_ISOLATED))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("worker 0");
        assertThat(new Fault(4_200, Fault.Kind.PARTITION, 2, 3_100, Fault.Partition.WORKER_ISOLATED))
                .hasToString("at 4.20 s: partition: w2 cut from the lock service, heal after 3.10 s");
        assertThat(Fault.Partition.ofFlag("ring")).isEqualTo(Fault.Partition.RING);
        assertThatThrownBy(() -> Fault.Partition.ofFlag("split")).hasMessageContaining("leader-minority");
    }
}

package io.fencer.chaos.fault;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The faults of a run, drawn from a seed: the same seed and settings give the same schedule, so a run that found
 * something can be replayed. Faults follow one another (each ends before the next starts), a gap of about
 * {@code interval} apart, and all end before the run does.
 */
public final class FaultSchedule {
    /** The workload runs this long before the first fault, so every worker has cycled once. */
    static final long WARM_UP_MILLIS = 1_500;
    /** How long a pause outlasts the lease at least: the lease must end while the worker is frozen. */
    static final long PAUSE_BEYOND_TTL_MILLIS = 1_000;
    /** The shortest time a membership fault is given: a spare peer's JVM starts in it on a busy machine. */
    static final long MEMBERSHIP_MIN_MILLIS = 3_000;

    private FaultSchedule() {
    }

    /**
     * Draws the schedule.
     *
     * @param seed the schedule's random seed; printed by the harness so the run can be replayed
     * @param kinds the kinds of fault to draw from; empty for none
     * @param workers how many workers there are (targets of worker faults)
     * @param run how long the workload runs
     * @param ttl the workers' lease (a pause lasts longer)
     * @param interval the mean gap between the end of one fault and the start of the next
     */
    public static List<Fault> plan(long seed, Set<Fault.Kind> kinds, int workers, Duration run, Duration ttl,
            Duration interval) {
        return plan(seed, kinds, EnumSet.allOf(Fault.Partition.class), workers, 3, run, ttl, interval);
    }

    /**
     * Draws the schedule of a run with {@code peers} lock peers, whose partitions are drawn from
     * {@code partitions}: leader-isolated, ring and leader-minority partitions need at least three peers, so with
     * one peer only worker-isolated ones are drawn. The draws of the other kinds do not depend on these two arguments.
     *
     * @throws IllegalArgumentException when partitions are asked for and none of {@code partitions} applies
     */
    public static List<Fault> plan(long seed, Set<Fault.Kind> kinds, Set<Fault.Partition> partitions, int workers,
            int peers, Duration run, Duration ttl, Duration interval) {
        List<Fault.Partition> partitionChoices = partitions.stream()
                .filter(partition -> peers >= 3 || partition == Fault.Partition.WORKER_ISOLATED).sorted().toList();
        if (kinds.contains(Fault.Kind.PARTITION) && partitionChoices.isEmpty()) {
            throw new IllegalArgumentException("no partition of " + partitions + " applies to " + peers
                    + " lock peer(s): all but worker-isolated need at least 3");
        }
        if (kinds.contains(Fault.Kind.MEMBERSHIP) && peers < 3) {
            throw new IllegalArgumentException("the membership fault needs at least 3 lock peers, not " + peers
                    + ": a group of one has no voter to spare (use --peers 3)");
        }
        if (workers < 1) {
            throw new IllegalArgumentException("workers " + workers + " < 1");
        }
        if (interval.toMillis() < 100) {
            throw new IllegalArgumentException("fault interval " + interval + " is below 100 ms");
        }
        List<Fault.Kind> choices = new ArrayList<>(kinds.isEmpty() ? EnumSet.noneOf(Fault.Kind.class)
                : EnumSet.copyOf(kinds)); // enum order, whatever order the caller's set iterates in
        List<Fault> faults = new ArrayList<>();
        if (choices.isEmpty()) {
            return faults;
        }
        SplittableRandom random = new SplittableRandom(seed);
        long intervalMillis = interval.toMillis();
        long at = WARM_UP_MILLIS;
        boolean first = true;
        while (true) {
            at += intervalMillis / 2 + random.nextLong(intervalMillis);
            // a run with clock faults starts with one, so that every other fault of the run meets a wrong clock
            Fault.Kind kind = first && choices.contains(Fault.Kind.CLOCK) ? Fault.Kind.CLOCK
                    : choices.get(random.nextInt(choices.size()));
            first = false;
            Fault.Partition partition = kind == Fault.Kind.PARTITION
                    ? partitionChoices.get(random.nextInt(partitionChoices.size())) : null;
            int worker = kind == Fault.Kind.PAUSE || kind == Fault.Kind.KILL_WORKER
                    || partition == Fault.Partition.WORKER_ISOLATED ? 1 + random.nextInt(workers)
                    // a clock fault: the lock leader's clock (0) or a worker's, one draw in workers + 1 each
                    : kind == Fault.Kind.CLOCK ? random.nextInt(workers + 1) : 0;
            long duration = switch (kind) {
                case PAUSE -> ttl.toMillis() + PAUSE_BEYOND_TTL_MILLIS + random.nextLong(1_000);
                case KILL_WORKER -> 500 + random.nextLong(1_000);
                case KILL_STORE -> 200 + random.nextLong(1_000);
                case KILL_LOCK -> 500 + random.nextLong(1_500);
                // long enough that the cut side's leases end and the lock moves on
                case PARTITION -> ttl.toMillis() + PAUSE_BEYOND_TTL_MILLIS + random.nextLong(2_000);
                case FLAKY -> 1_000 + random.nextLong(2_000);
                // the time a change is given: a spare's start, its catch-up and the calls (it may take longer)
                case MEMBERSHIP -> MEMBERSHIP_MIN_MILLIS + random.nextLong(2_000);
                // a lease and more under the skew before the next fault: sessions renew and end under it
                case CLOCK -> ttl.toMillis() + PAUSE_BEYOND_TTL_MILLIS + random.nextLong(1_000);
            };
            if (at + duration > run.toMillis()) {
                return List.copyOf(faults);
            }
            faults.add(new Fault(at, kind, worker, duration, partition));
            at += duration;
        }
    }
}

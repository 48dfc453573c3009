package io.fencer.chaos;

import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.workload.WorkerOptions;
import io.fencer.chaos.workload.Workload;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * The settings of one chaos run.
 *
 * @param workers how many worker processes share the lock (1 to {@link #WORKERS_MAX})
 * @param workload what they do
 * @param duration how long the workload runs (faults included; start-up and the final read come on top)
 * @param seed the random seed of the fault schedule and the workers' think times
 * @param faults the kinds of fault to inject; empty for none
 * @param peers lock service peers: 1, 3 or 5
 * @param thinkMax the longest think between a worker's read and its write
 * @param ttl the workers' lease
 * @param faultInterval the mean gap between faults
 * @param fencing false for the control run: workers write without meaningful tokens
 * @param directory where the run keeps its data, logs and history
 * @param htmlFile where to write the HTML timeline, or null
 * @param svgFile where to write the timeline as an SVG picture alone, or null
 * @param summaryFile where to write the summary JSON, or null
 * @param partitions the partitions a {@link Fault.Kind#PARTITION} fault is drawn from
 * @param unsafeLeaseAck test only: start every lock peer with {@code -Dfencer.testing.unsafeLeaseAck=true}, which
 *     switches the server's lease fix off (a peer acknowledges keepalives without confirming it still leads), so
 *     a test can show that the {@code lease-belief} check finds what the fix prevents
 * @param permits the semaphore workload's permit count, 1 to {@code workers - 1} so permits are contended (1 for
 *     the other workloads, which ignore it)
 * @param clockDrift what a {@link Fault.Kind#CLOCK} fault does to a clock's rate, as a fraction (0.005: the lock
 *     leader's clock runs 0.5% fast, a worker's 0.5% slow), 0 to {@link #CLOCK_DRIFT_MAX}
 * @param clockJump how far a {@link Fault.Kind#CLOCK} fault makes the lock leader's clock jump forward, 0 to
 *     {@link #CLOCK_JUMP_MAX}
 * @param replicatedStore true: the workload's store is the lock peers' replicated store (the workers' store client
 *     gets every peer's address and follows the leader), no store server runs, and {@link Fault.Kind#KILL_STORE}
 *     kills the group's leader, which is the store's leader; needs 3 or 5 peers. False (the default): a separate
 *     {@code fencer store-server} process, as a single-node deployment runs it
 */
public record ChaosOptions(int workers, Workload workload, Duration duration, long seed, Set<Fault.Kind> faults,
        int peers, Duration thinkMax, Duration ttl, Duration faultInterval, boolean fencing, Path directory,
        Path htmlFile, Path svgFile, Path summaryFile, Set<Fault.Partition> partitions, boolean unsafeLeaseAck,
        int permits, double clockDrift, Duration clockJump, boolean replicatedStore) {
    /** The most workers a run may start. */
    public static final int WORKERS_MAX = 32;
    /** The longest run. */
    public static final Duration DURATION_MAX = Duration.ofHours(24);
    /** The most permits a semaphore run may use (the workers bound it first: permits must be contended). */
    public static final int PERMITS_MAX = WorkerOptions.PERMITS_MAX;
    /** The semaphore workload's permit count when none is given. */
    public static final int PERMITS_DEFAULT = 2;
    /** A clock fault's drift when none is given: within what the lease rules tolerate (docs/guarantees.md). */
    public static final double CLOCK_DRIFT_DEFAULT = 0.005;
    /** The largest drift: a worker's clock at 1 - drift must still run. */
    public static final double CLOCK_DRIFT_MAX = 0.9;
    /** The longest jump of a clock fault. */
    public static final Duration CLOCK_JUMP_MAX = Duration.ofMinutes(1);

    /** The options of a run whose clock faults, if any, have the default drift and no jump. */
    public ChaosOptions(int workers, Workload workload, Duration duration, long seed, Set<Fault.Kind> faults,
            int peers, Duration thinkMax, Duration ttl, Duration faultInterval, boolean fencing, Path directory,
            Path htmlFile, Path svgFile, Path summaryFile, Set<Fault.Partition> partitions, boolean unsafeLeaseAck,
            int permits) {
        this(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval, fencing, directory,
                htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck, permits, CLOCK_DRIFT_DEFAULT,
                Duration.ZERO);
    }

    /** The options of a run that draws every partition and keeps the server's lease fix on. */
    public ChaosOptions(int workers, Workload workload, Duration duration, long seed, Set<Fault.Kind> faults,
            int peers, Duration thinkMax, Duration ttl, Duration faultInterval, boolean fencing, Path directory,
            Path htmlFile, Path svgFile, Path summaryFile) {
        this(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval, fencing, directory,
                htmlFile, svgFile, summaryFile, EnumSet.allOf(Fault.Partition.class), false);
    }

    /** The options of a run with {@code partitions} and {@code unsafeLeaseAck}, and the default permit count. */
    public ChaosOptions(int workers, Workload workload, Duration duration, long seed, Set<Fault.Kind> faults,
            int peers, Duration thinkMax, Duration ttl, Duration faultInterval, boolean fencing, Path directory,
            Path htmlFile, Path svgFile, Path summaryFile, Set<Fault.Partition> partitions, boolean unsafeLeaseAck) {
        this(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval, fencing, directory,
                htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck,
                workload == Workload.SEMAPHORE ? PERMITS_DEFAULT : 1);
    }

    /** The options of a run whose workload writes to a separate store server, with clock faults as given. */
    public ChaosOptions(int workers, Workload workload, Duration duration, long seed, Set<Fault.Kind> faults,
            int peers, Duration thinkMax, Duration ttl, Duration faultInterval, boolean fencing, Path directory,
            Path htmlFile, Path svgFile, Path summaryFile, Set<Fault.Partition> partitions, boolean unsafeLeaseAck,
            int permits, double clockDrift, Duration clockJump) {
        this(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval, fencing, directory,
                htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck, permits, clockDrift, clockJump, false);
    }

    public ChaosOptions {
        Objects.requireNonNull(workload, "workload");
        if (partitions.isEmpty()) {
            throw new IllegalArgumentException("no partition kinds to draw from");
        }
        partitions = Set.copyOf(EnumSet.copyOf(partitions));
        Objects.requireNonNull(duration, "duration");
        faults = faults.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(faults));
        Objects.requireNonNull(thinkMax, "thinkMax");
        Objects.requireNonNull(ttl, "ttl");
        Objects.requireNonNull(faultInterval, "faultInterval");
        Objects.requireNonNull(directory, "directory");
        if (workers < 1 || workers > WORKERS_MAX) {
            throw new IllegalArgumentException("workers " + workers + " is outside [1, " + WORKERS_MAX + "]");
        }
        if (duration.toMillis() < 1_000 || duration.compareTo(DURATION_MAX) > 0) {
            throw new IllegalArgumentException("duration " + duration + " is outside [1 s, " + DURATION_MAX + "]");
        }
        if (peers != 1 && peers != 3 && peers != 5) {
            throw new IllegalArgumentException("peers must be 1, 3 or 5, not " + peers);
        }
        if (faults.contains(Fault.Kind.MEMBERSHIP) && peers < 3) {
            throw new IllegalArgumentException("the membership fault needs --peers 3 or 5, not " + peers
                    + ": it adds a spare peer and removes a voter, and a group of one has no voter to spare");
        }
        checkReplicatedStore(replicatedStore, peers);
        if (thinkMax.isNegative() || thinkMax.toMillis() > 10_000) {
            throw new IllegalArgumentException("think " + thinkMax + " is outside [0, 10 s]");
        }
        if (ttl.toMillis() < 1_000 || ttl.toMillis() > 60_000) {
            throw new IllegalArgumentException("ttl " + ttl + " is outside [1 s, 60 s]");
        }
        if (workload == Workload.SEMAPHORE && (permits < 1 || permits > workers - 1)) {
            throw new IllegalArgumentException("permits " + permits + " is outside [1, workers - 1 = "
                    + (workers - 1) + "]: a semaphore run needs more workers than permits");
        }
        Objects.requireNonNull(clockJump, "clockJump");
        if (!(clockDrift >= 0 && clockDrift <= CLOCK_DRIFT_MAX)) {
            throw new IllegalArgumentException("clock drift " + clockDrift + " is outside [0, " + CLOCK_DRIFT_MAX
                    + "]");
        }
        if (clockJump.isNegative() || clockJump.compareTo(CLOCK_JUMP_MAX) > 0) {
            throw new IllegalArgumentException("clock jump " + clockJump + " is outside [0, " + CLOCK_JUMP_MAX + "]");
        }
        if (workload != Workload.SEMAPHORE && permits != 1) {
            throw new IllegalArgumentException("permits " + permits + " given to the " + workload
                    + " workload, which has no permits");
        }
    }

    private static void checkReplicatedStore(boolean replicatedStore, int peers) {
        if (replicatedStore && peers < 3) {
            throw new IllegalArgumentException("the replicated store needs --peers 3 or 5, not " + peers
                    + ": a single peer keeps a single-node store");
        }
    }

    /** Returns true when a fault of the run needs the processes on their own network hosts (and root). */
    public boolean networkFaults() {
        return faults.stream().anyMatch(Fault.Kind::network);
    }

    /** Returns true when the run has clock faults: its lock peers and workers then read their clocks from files. */
    public boolean clockFaults() {
        return faults.contains(Fault.Kind.CLOCK);
    }

    /** Returns these options with {@code newDirectory}. */
    public ChaosOptions withDirectory(Path newDirectory) {
        return new ChaosOptions(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval,
                fencing, newDirectory, htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck, permits, clockDrift,
                clockJump, replicatedStore);
    }

    /** Returns these options with {@code newSeed}. */
    public ChaosOptions withSeed(long newSeed) {
        return new ChaosOptions(workers, workload, duration, newSeed, faults, peers, thinkMax, ttl, faultInterval,
                fencing, directory, htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck, permits, clockDrift,
                clockJump, replicatedStore);
    }

    /** Returns these options with the workload's store the peers' replicated store ({@code true}) or not. */
    public ChaosOptions withReplicatedStore(boolean replicated) {
        return new ChaosOptions(workers, workload, duration, seed, faults, peers, thinkMax, ttl, faultInterval,
                fencing, directory, htmlFile, svgFile, summaryFile, partitions, unsafeLeaseAck, permits, clockDrift,
                clockJump, replicated);
    }
}

package io.fencer.chaos.workload;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The settings of one worker process of a chaos run or the demo.
 *
 * @param id the worker's name in the history ({@code w1} ...)
 * @param lockEndpoints the lock service peers, {@code host:port}
 * @param storeEndpoint the store, {@code host:port}
 * @param lock the shared lock; the store scope has the same name
 * @param workload what the worker does in loop mode
 * @param thinkMax the longest think between the read and the write (each think is uniform in [0, thinkMax])
 * @param ttl the session's lease
 * @param fencing false for the control: writes carry no meaningful token, reads are plain
 * @param historyFile where the worker appends its history
 * @param originNanos the run's origin on the host's monotonic clock
 * @param seed the random seed of the worker's think times
 * @param permits the semaphore workload's permit count (1 for the other workloads, which ignore it)
 * @param replicatedStore true when the store is a group's replicated store, which serves no units: a fenced cycle
 *     then claims the scope with a write under its token ({@code Worker.CLAIM_KEY}) before it reads, instead of
 *     beginning a unit; either way no older holder's write is accepted after the read
 */
public record WorkerOptions(String id, List<String> lockEndpoints, String storeEndpoint, String lock,
        Workload workload, Duration thinkMax, Duration ttl, boolean fencing, Path historyFile, long originNanos,
        long seed, int permits, boolean replicatedStore) {
    /**
     * The most permits a worker's semaphore may have: one below the most workers a run starts
     * ({@code ChaosOptions.WORKERS_MAX}, 32), because a run's permits must be contended. It is kept here so that a
     * worker checks the command line it is given without reading the run's options.
     */
    public static final int PERMITS_MAX = 31;

    /** The options of a worker of a workload without permits (counter, set): {@code permits} is 1. */
    public WorkerOptions(String id, List<String> lockEndpoints, String storeEndpoint, String lock,
            Workload workload, Duration thinkMax, Duration ttl, boolean fencing, Path historyFile, long originNanos,
            long seed) {
        this(id, lockEndpoints, storeEndpoint, lock, workload, thinkMax, ttl, fencing, historyFile, originNanos, seed,
                1);
    }

    /** The options of a worker writing to a single store (a store server, or a single node's). */
    public WorkerOptions(String id, List<String> lockEndpoints, String storeEndpoint, String lock,
            Workload workload, Duration thinkMax, Duration ttl, boolean fencing, Path historyFile, long originNanos,
            long seed, int permits) {
        this(id, lockEndpoints, storeEndpoint, lock, workload, thinkMax, ttl, fencing, historyFile, originNanos, seed,
                permits, false);
    }

    public WorkerOptions {
        Objects.requireNonNull(id, "id");
        lockEndpoints = List.copyOf(lockEndpoints);
        Objects.requireNonNull(storeEndpoint, "storeEndpoint");
        Objects.requireNonNull(lock, "lock");
        Objects.requireNonNull(workload, "workload");
        Objects.requireNonNull(thinkMax, "thinkMax");
        Objects.requireNonNull(ttl, "ttl");
        Objects.requireNonNull(historyFile, "historyFile");
        if (lockEndpoints.isEmpty()) {
            throw new IllegalArgumentException("no lock endpoints for worker " + id);
        }
        if (thinkMax.isNegative()) {
            throw new IllegalArgumentException("negative think " + thinkMax + " for worker " + id);
        }
        if (permits < 1 || permits > PERMITS_MAX) {
            throw new IllegalArgumentException("permits " + permits + " for worker " + id + " is outside [1, "
                    + PERMITS_MAX + "]");
        }
    }
}

package io.fencer.chaos.fault;

import java.util.Locale;
import java.util.Objects;

/**
 * One scheduled fault of a chaos run.
 *
 * @param atMillis when it starts, in milliseconds after the workload started
 * @param kind what it does
 * @param worker for worker faults, the worker's number (1-based); else 0
 * @param durationMillis how long a pause lasts, how long a killed process stays down before its restart, or how
 *     long a partition or a flaky link lasts before it heals
 * @param partition for a partition, which one; else null
 */
public record Fault(long atMillis, Kind kind, int worker, long durationMillis, Partition partition) {

    /** The faults the harness can inject. */
    public enum Kind {
        /** SIGSTOP a worker right after it read under its grant, SIGCONT it after longer than its lease. */
        PAUSE("pause"),
        /** SIGKILL a worker; start it again later. */
        KILL_WORKER("kill-worker"),
        /** SIGKILL the store; restart it from its data directory. */
        KILL_STORE("kill-store"),
        /** SIGKILL the lock server (the group's leader with several peers); restart it from its data. */
        KILL_LOCK("kill-lock"),
        /** Cut the network between processes (see {@link Partition}); heal it later. Needs root. */
        PARTITION("partition"),
        /** Delay and drop what the lock leader sends ({@code tc netem}); end it later. Needs root. */
        FLAKY("flaky"),
        /**
         * Change the lock group's membership through the {@code Peers} calls an operator makes: start a spare peer
         * with {@code --join}, add it as a learner and promote it once it caught up; or, when the group has a voter
         * more than it started with, remove a voter (a follower, or the leader) and SIGKILL its process. Needs at
         * least three peers. See {@link MembershipPlan}.
         */
        MEMBERSHIP("membership"),
        /**
         * A clock goes wrong, through the clock file each lock peer and worker reads its time from (see
         * {@code io.fencer.core.SkewedTicker}): the lock leader's clock jumps forward by the run's clock jump and
         * runs fast by its clock drift, or (a fault with a worker) that worker's clock runs slow by it: the two
         * ways a holder can go on believing in a lease its session has lost. The clock stays wrong until the run
         * ends (a machine's clock that went wrong stays so), so the faults after it meet it; the fault's own
         * duration is a lease and more for the skew to meet the workload alone.
         */
        CLOCK("clock");

        private final String flag;

        Kind(String flag) {
            this.flag = flag;
        }

        /** Returns the kind's name on the command line and in reports ({@code kill-store}). */
        public String flag() {
            return flag;
        }

        /** Returns the kind named {@code flag}. */
        public static Kind ofFlag(String flag) {
            for (Kind kind : values()) {
                if (kind.flag.equals(flag.strip().toLowerCase(Locale.ROOT))) {
                    return kind;
                }
            }
            throw new IllegalArgumentException("unknown fault '" + flag + "': expected pause, kill-worker, "
                    + "kill-store, kill-lock, partition, flaky, membership or clock");
        }

        /** Returns true for the faults that need the run's processes on their own network hosts. */
        public boolean network() {
            return this == PARTITION || this == FLAKY;
        }
    }

    /** The partitions the harness can make: the ways a network can split a lock service from its clients. */
    public enum Partition {
        /** The lock leader cut from the other peers, while every worker still reaches it (and them). */
        LEADER_ISOLATED("leader-isolated"),
        /** One worker cut from every lock peer, while it still reaches the store. */
        WORKER_ISOLATED("worker-isolated"),
        /**
         * Majorities ring: each peer sees a majority, and the majorities differ (what broke Hazelcast's locks
         * under Jepsen). Five peers: each sees its two ring neighbours. Three peers: the leader and one follower
         * are cut from each other, the third peer sees both (each of the two sees itself and that one).
         */
        RING("ring"),
        /**
         * A clean split: the lock leader and the worker holding the lock (the last one to read under a grant) on
         * one side, the other peers and workers on the other. The holder's session sits on the deposed leader, the
         * only peer it reaches, while the majority elects another leader and, once the holder's session expires
         * there, grants the lock to another worker. A client partitioned with a deposed leader; what the server's
         * lease fix is for.
         */
        LEADER_MINORITY("leader-minority");

        private final String flag;

        Partition(String flag) {
            this.flag = flag;
        }

        /** Returns the partition's name on the command line and in reports ({@code leader-isolated}). */
        public String flag() {
            return flag;
        }

        /** Returns the partition named {@code flag}. */
        public static Partition ofFlag(String flag) {
            for (Partition partition : values()) {
                if (partition.flag.equals(flag.strip().toLowerCase(Locale.ROOT))) {
                    return partition;
                }
            }
            throw new IllegalArgumentException("unknown partition '" + flag + "': expected leader-isolated, "
                    + "worker-isolated, ring or leader-minority");
        }
    }

    /** A fault other than a partition. */
    public Fault(long atMillis, Kind kind, int worker, long durationMillis) {
        this(atMillis, kind, worker, durationMillis, null);
    }

    public Fault {
        Objects.requireNonNull(kind, "kind");
        if (atMillis < 0 || durationMillis < 0) {
            throw new IllegalArgumentException("negative time in fault " + kind + " at " + atMillis + " ms for "
                    + durationMillis + " ms");
        }
        if ((kind == Kind.PARTITION) != (partition != null)) {
            throw new IllegalArgumentException("fault " + kind + " with partition " + partition);
        }
        boolean workerFault = kind == Kind.PAUSE || kind == Kind.KILL_WORKER || partition == Partition.WORKER_ISOLATED;
        if (kind != Kind.CLOCK && workerFault != (worker > 0) || worker < 0) { // a clock: a worker's or the leader's
            throw new IllegalArgumentException("fault " + kind + " with worker " + worker);
        }
    }

    /** Returns the fault's end, in milliseconds after the workload started. */
    public long endMillis() {
        return atMillis + durationMillis;
    }

    /** Returns e.g. {@code "at 4.20 s: pause w3 for 3.10 s"}. */
    @Override
    public String toString() {
        String target = switch (kind) {
            case PAUSE -> "pause w" + worker + " for ";
            case KILL_WORKER -> "kill -9 w" + worker + ", restart after ";
            case KILL_STORE -> "kill -9 the store, restart after ";
            case KILL_LOCK -> "kill -9 the lock leader, restart after ";
            case PARTITION -> switch (partition) {
                case LEADER_ISOLATED -> "partition: the lock leader cut from the other peers, heal after ";
                case WORKER_ISOLATED -> "partition: w" + worker + " cut from the lock service, heal after ";
                case RING -> "partition: majorities ring of the lock peers, heal after ";
                case LEADER_MINORITY -> "partition: the lock leader and the holder cut from the other peers, "
                        + "heal after ";
            };
            case FLAKY -> "flaky: the lock leader's sends delayed and lost, end after ";
            case CLOCK -> worker > 0 ? "clock: w" + worker + "'s clock runs slow, for good; next fault after "
                    : "clock: the lock leader's clock jumps and runs fast, for good; next fault after ";
            case MEMBERSHIP -> "membership: the next change (start a spare, add and promote it; or remove a voter), "
                    + "allowed ";
        };
        return String.format(Locale.ROOT, "at %.2f s: %s%.2f s", atMillis / 1000.0, target,
                durationMillis / 1000.0);
    }
}

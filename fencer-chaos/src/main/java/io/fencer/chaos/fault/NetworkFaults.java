package io.fencer.chaos.fault;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.process.Cluster;
import io.fencer.chaos.process.Network;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The network faults of a run: partitions (blackhole routes between the processes' network hosts) and flaky
 * links ({@code tc netem}), each recorded in the history as an {@code info} event when it starts and when it heals,
 * with the processes it cut off as the target (comma-separated) so the timeline draws a band across their lanes.
 */
public final class NetworkFaults {
    /** A flaky link's delay, its jitter and the share of packets it loses. */
    private static final Duration FLAKY_DELAY = Duration.ofMillis(100);
    private static final Duration FLAKY_JITTER = Duration.ofMillis(50);
    private static final int FLAKY_LOSS_PERCENT = 10;

    private NetworkFaults() {
    }

    /**
     * Makes {@code fault}'s partition, waits for its duration and heals it; {@code holder} names the worker that
     * last read under a grant (the likely holder of the lock) at the moment it is asked, and {@code otherWorkers}
     * are every worker's name.
     */
    public static void partition(Fault fault, Network network, Cluster cluster, HistoryLog nemesis,
            Supplier<String> holder, List<String> otherWorkers) throws InterruptedException {
        List<String> peers = cluster.lockHostNames();
        List<String[]> cuts = new ArrayList<>();
        List<String> cutOff = new ArrayList<>();
        String description;
        switch (fault.partition()) {
            case LEADER_ISOLATED -> {
                String leader = cluster.leaderHostName();
                for (String peer : peers) {
                    if (!peer.equals(leader)) {
                        cuts.add(new String[] {leader, peer});
                    }
                }
                cutOff.add(lane(leader));
                description = lane(leader) + " (the leader) cut from the other lock peers; workers reach every peer";
            }
            case WORKER_ISOLATED -> {
                String worker = "w" + fault.worker();
                for (String peer : peers) {
                    cuts.add(new String[] {worker, peer});
                }
                cutOff.add(worker);
                description = worker + " cut from every lock peer; it still reaches the store";
            }
            case RING -> description = ring(cluster.leaderHostName(), peers, cuts, cutOff);
            case LEADER_MINORITY -> {
                String leader = cluster.leaderHostName();
                String worker = holder.get();
                List<String> majority = new ArrayList<>(peers);
                majority.remove(leader);
                majority.addAll(otherWorkers.stream().filter(other -> !other.equals(worker)).toList());
                for (String host : majority) {
                    cuts.add(new String[] {leader, host});
                    cuts.add(new String[] {worker, host});
                }
                cutOff.add(lane(leader));
                cutOff.add(worker);
                description = lane(leader) + " (the leader) and " + worker + " (the last to read under a grant) cut"
                        + " from the other lock peers and workers: " + worker + " reaches only the old leader, the"
                        + " others only the majority";
            }
            default -> throw new IllegalStateException("unknown partition " + fault.partition());
        }
        for (String[] cut : cuts) {
            network.cut(cut[0], cut[1]);
        }
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO,
                Op.PARTITION).withTarget(String.join(",", cutOff)).withValue(fault.partition().flag() + ": "
                        + description));
        Thread.sleep(fault.durationMillis());
        network.heal();
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO, Op.HEAL)
                .withTarget(String.join(",", cutOff)).withValue(fault.partition().flag() + " healed"));
    }

    /**
     * Plans a majorities ring: with five peers each sees its two neighbours on the ring n1 … n5 (cut from the two
     * others); with three, the leader and the next peer are cut from each other and the third sees both.
     */
    private static String ring(String leader, List<String> peers, List<String[]> cuts, List<String> cutOff) {
        if (peers.size() >= 5) {
            for (int i = 0; i < peers.size(); i++) {
                cuts.add(new String[] {peers.get(i), peers.get((i + 2) % peers.size())});
            }
            peers.forEach(peer -> cutOff.add(lane(peer)));
            return "each lock peer sees itself and its two ring neighbours only: every majority differs";
        }
        int leaderIndex = peers.indexOf(leader);
        String other = peers.get((leaderIndex + 1) % peers.size());
        String bridge = peers.get((leaderIndex + 2) % peers.size());
        cuts.add(new String[] {leader, other});
        cutOff.add(lane(leader));
        cutOff.add(lane(other));
        return lane(leader) + " (the leader) and " + lane(other) + " cut from each other; " + lane(bridge)
                + " sees both: majorities {" + lane(leader) + ", " + lane(bridge) + "} and {" + lane(other) + ", "
                + lane(bridge) + "}";
    }

    /** Makes the lock leader's link flaky for {@code fault}'s duration, then steady again. */
    public static void flaky(Fault fault, Network network, Cluster cluster, HistoryLog nemesis)
            throws InterruptedException {
        String leader = cluster.leaderHostName();
        String applied = network.flaky(leader, FLAKY_DELAY, FLAKY_JITTER, FLAKY_LOSS_PERCENT);
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO, Op.FLAKY)
                .withTarget(lane(leader)).withValue(applied));
        Thread.sleep(fault.durationMillis());
        network.steady(leader);
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO, Op.HEAL)
                .withTarget(lane(leader)).withValue("flaky link ended"));
    }

    /** Returns the history's name of the process on network host {@code hostName}: {@code lock-n1}, {@code w2}. */
    private static String lane(String hostName) {
        return hostName.matches("n\\d+") ? "lock-" + hostName : hostName;
    }
}

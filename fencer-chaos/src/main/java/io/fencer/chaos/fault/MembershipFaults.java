package io.fencer.chaos.fault;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.process.Cluster;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.PeerStatus;
import io.fencer.core.FencerException;
import io.fencer.core.MembershipRefusedException;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The membership faults of a run: each makes the next change of a {@link MembershipPlan} through the {@code Peers}
 * calls an operator makes ({@code fencer peers add|promote|remove}), never by touching a peer's files. A grow is
 * one fault: start the spare with {@code --join}, add it as a learner, wait until it caught up, promote it (two
 * changes, one after the other); a shrink is the next: remove a voter and SIGKILL its process. Every completed
 * change is an {@code info} event of the history ({@code add_peer}, {@code promote_peer}, {@code remove_peer}); a
 * refused one is a {@code membership_refused} event, and the plan offers it again on the next membership fault.
 */
public final class MembershipFaults {
    /** How long a spare may take to start and say it waits to be added (a JVM on a busy machine). */
    private static final Duration SPARE_START_TIMEOUT = Duration.ofSeconds(60);
    /** How long a learner is given to catch up before its promotion is tried anyway (and may be refused). */
    private static final Duration CATCH_UP_TIMEOUT = Duration.ofSeconds(20);
    /** Promote's own bound: a learner more entries behind the leader than this is refused. */
    private static final long CATCH_UP_ENTRIES_MAX = 1_000;
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

    private final MembershipPlan plan;
    private final Cluster cluster;
    private final HistoryLog nemesis;
    private final PrintStream out;
    private final Duration joinWait;
    private final int sparesMax;
    private int sparesStarted;

    /**
     * The membership faults of a run on {@code cluster}, recorded in {@code nemesis} and narrated on {@code out}.
     *
     * @param joinWait how long a spare waits to be added before it gives up (past the run's end)
     * @param sparesMax how many spares the run may start (the network has a host for each)
     */
    public MembershipFaults(MembershipPlan plan, Cluster cluster, HistoryLog nemesis, PrintStream out,
            Duration joinWait, int sparesMax) {
        this.plan = plan;
        this.cluster = cluster;
        this.nemesis = nemesis;
        this.out = out;
        this.joinWait = joinWait;
        this.sparesMax = sparesMax;
    }

    /** Returns the plan, whose counts say how many changes completed and how many were refused. */
    public MembershipPlan plan() {
        return plan;
    }

    /** Makes the next change; after an add, the promotion too. A refused change is recorded and left for later. */
    public void change() throws InterruptedException {
        MembershipPlan.Change change = plan.next(cluster.leaderId());
        if (change.step() == MembershipPlan.Step.ADD) {
            if (!add(change)) {
                return;
            }
            change = plan.next(cluster.leaderId());
        }
        if (change.step() == MembershipPlan.Step.PROMOTE) {
            awaitCaughtUp(change.peer());
        }
        call(change);
    }

    /**
     * Starts the next spare ahead of its add, so that it waits to be added by the time a membership fault comes
     * (a JVM's start is most of an add's time); a spare that fails to start is started again by the add.
     */
    public void prepare() {
        String id = plan.nextSpare();
        if (sparesStarted >= sparesMax || cluster.spareRunning(id)) {
            return;
        }
        try {
            cluster.discardSpare(id);
            sparesStarted++;
            cluster.launchSpare(id, joinWait);
            out.println("    started spare lock peer " + id + " with --join, ahead of its add");
        } catch (IOException | RuntimeException e) {
            out.println("    spare lock peer " + id + " did not start ahead of its add: " + e.getMessage());
        }
        out.flush();
    }

    /** Starts the spare if it does not run, waits until it waits to be added, and adds it; false when it did not. */
    private boolean add(MembershipPlan.Change change) throws InterruptedException {
        String id = change.peer();
        if (!cluster.spareRunning(id)) {
            cluster.discardSpare(id); // a spare that exited: its half-made data are not reused
            if (sparesStarted >= sparesMax) {
                lose(change, "no spare host left: the run planned " + sparesMax);
                return false;
            }
            try {
                sparesStarted++;
                cluster.launchSpare(id, joinWait);
                out.println("    started spare lock peer " + id + " with --join");
            } catch (IOException | RuntimeException e) {
                lose(change, "the spare did not start: " + e.getMessage());
                return false;
            }
        }
        try {
            cluster.awaitSpareWaiting(id, SPARE_START_TIMEOUT);
        } catch (IllegalStateException e) {
            lose(change, firstLine(e.getMessage()));
            return false;
        }
        return call(change);
    }

    private void lose(MembershipPlan.Change change, String why) {
        cluster.discardSpare(change.peer());
        plan.spareLost(change);
        record(Op.MEMBERSHIP_REFUSED, change, why);
    }

    /** Makes {@code change} with the Peers calls; returns whether it completed (recorded either way). */
    private boolean call(MembershipPlan.Change change) {
        try (FencerClient client = client()) {
            try {
                switch (change.step()) {
                    case ADD -> client.peers().add(change.peer(), cluster.spareRaftAddress(change.peer()),
                            cluster.spareClientAddress(change.peer()));
                    case PROMOTE -> client.peers().promote(change.peer());
                    case REMOVE -> client.peers().remove(change.peer());
                }
            } catch (MembershipRefusedException refused) {
                return refused(change, refused.why());
            } catch (FencerException failed) {
                // the call may or may not have taken effect (the leader changed, a timeout): the group's list tells
                if (!tookEffect(client, change)) {
                    return refused(change, failed.getMessage());
                }
            }
        } catch (FencerException unreachable) {
            return refused(change, unreachable.getMessage());
        }
        completed(change);
        return true;
    }

    private boolean refused(MembershipPlan.Change change, String why) {
        plan.refused(change);
        record(Op.MEMBERSHIP_REFUSED, change, why);
        return false;
    }

    private void completed(MembershipPlan.Change change) {
        plan.completed(change);
        switch (change.step()) {
            case ADD -> {
                cluster.admit(change.peer());
                record(Op.ADD_PEER, change, "");
            }
            case PROMOTE -> record(Op.PROMOTE_PEER, change, "");
            case REMOVE -> {
                cluster.retire(change.peer());
                record(Op.REMOVE_PEER, change, "");
                prepare();
            }
        }
    }

    /** Returns whether the group's configuration shows {@code change} made (asked after a call that failed). */
    private static boolean tookEffect(FencerClient client, MembershipPlan.Change change) {
        List<PeerStatus> peers;
        try {
            peers = client.peers().list();
        } catch (FencerException e) {
            return false;
        }
        Optional<PeerStatus> peer = peers.stream().filter(status -> status.id().equals(change.peer())).findFirst();
        return switch (change.step()) {
            case ADD -> peer.isPresent();
            case PROMOTE -> peer.isPresent() && peer.get().voter();
            case REMOVE -> peer.isEmpty();
        };
    }

    /** Waits until the learner {@code id} is live and within Promote's bound of the leader, or the wait ends. */
    private void awaitCaughtUp(String id) throws InterruptedException {
        long deadline = System.nanoTime() + CATCH_UP_TIMEOUT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            try (FencerClient client = client()) {
                List<PeerStatus> peers = client.peers().list();
                long leaderIndex = peers.stream().filter(PeerStatus::leader)
                        .mapToLong(peer -> peer.matchIndex().orElse(Long.MAX_VALUE)).findFirst()
                        .orElse(Long.MAX_VALUE);
                // a learner whose match index the leader does not know yet has not caught up
                boolean caughtUp = peers.stream().anyMatch(peer -> peer.id().equals(id) && peer.live()
                        && peer.matchIndex().isPresent()
                        && leaderIndex - peer.matchIndex().getAsLong() <= CATCH_UP_ENTRIES_MAX);
                if (caughtUp) {
                    return;
                }
            } catch (FencerException e) {
                // no leader for the moment: ask again
            }
            Thread.sleep(200);
        }
    }

    private FencerClient client() {
        return Fencer.newBuilder().endpoints(cluster.lockEndpoints().toArray(String[]::new))
                .callTimeout(CALL_TIMEOUT).build();
    }

    private void record(Op op, MembershipPlan.Change change, String error) {
        String what = switch (op) {
            case ADD_PEER -> change.peer() + " added as a learner";
            case PROMOTE_PEER -> change.peer() + " promoted to voter; voters " + String.join(",", plan.voters());
            case REMOVE_PEER -> change.peer() + " removed (" + (change.leader() ? "the leader" : "a follower")
                    + "), its process then killed for good; voters " + String.join(",", plan.voters());
            default -> change + " refused";
        };
        out.println("    membership: " + what + (error.isEmpty() ? "" : ": " + error));
        out.flush();
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO, op)
                .withTarget("lock-" + change.peer()).withValue(what).withError(error));
    }

    private static String firstLine(String text) {
        int end = text.indexOf('\n');
        return end < 0 ? text : text.substring(0, end);
    }
}

package io.fencer.chaos.fault;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * Which membership change a run makes next, without processes: the harness asks {@link #next} for a change, makes
 * it through the {@code Peers} calls, and reports it {@link #completed} or {@link #refused}. The group keeps the
 * voter count it started with (its target): a spare peer is added as a learner and promoted, the group then has
 * one voter more, and the next change removes a voter; so there are always target or target + 1 voters and at most
 * one learner.
 *
 * <p>One change at a time: {@link #next} refuses to plan while the change it returned last has no outcome. A
 * refused change (no live majority during a kill or a partition, a learner that has not caught up) changed
 * nothing: it is counted as refused, not as a change, and {@link #next} offers it again, so it is retried on the
 * next membership fault. A remove decides its victim when it is made (the leader, or the oldest follower), since
 * the leader may have changed since the last try.
 *
 * <p>Spare peers are named after the founders, {@code n4}, {@code n5} ... in a group founded by {@code n1} to
 * {@code n3}; a run plans their network hosts up front with {@link #sparesMax}.
 */
public final class MembershipPlan {
    /** One in this many removes takes the leader out; the others a follower. */
    static final int REMOVE_LEADER_ONE_IN = 3;

    /** A step of a membership change, as the {@code Peers} service names it. */
    public enum Step {
        ADD, PROMOTE, REMOVE;

        /** Returns the step's name in the history and the narration: {@code add}, {@code promote}, {@code remove}. */
        public String flag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * One change.
     *
     * @param step what it does
     * @param peer the peer it is about
     * @param leader for a remove: true when {@code peer} was the leader when the change was planned
     */
    public record Change(Step step, String peer, boolean leader) {
        public Change {
            Objects.requireNonNull(step, "step");
            Objects.requireNonNull(peer, "peer");
            if (leader && step != Step.REMOVE) {
                throw new IllegalArgumentException("only a remove takes out the leader, not " + step);
            }
        }

        /** Returns e.g. {@code "remove n2 (the leader)"}. */
        @Override
        public String toString() {
            return step.flag() + " " + peer + (step == Step.REMOVE ? leader ? " (the leader)" : " (a follower)" : "");
        }
    }

    private final SplittableRandom random;
    private final int target;
    /** The voters, oldest first. */
    private final List<String> voters;
    private String learner;
    private int nextSpareNumber;
    /** The change {@link #next} returned last, while it has no outcome. */
    private Change unfinished;
    /** A refused change, offered again by the next {@link #next}. */
    private Change retry;
    private int completedCount;
    private int refusedCount;

    /**
     * A plan for a group founded by {@code founders} ({@code n1} ... {@code nN}, at least three), whose remove
     * victims are drawn from {@code seed}.
     */
    public MembershipPlan(long seed, List<String> founders) {
        if (founders.size() < 3) {
            throw new IllegalArgumentException("membership changes need at least 3 voters, not " + founders.size()
                    + ": " + founders);
        }
        this.random = new SplittableRandom(seed);
        this.target = founders.size();
        this.voters = new ArrayList<>(founders);
        this.nextSpareNumber = founders.size() + 1;
    }

    /** The most spare peers a run starts, whatever its length: each has a host of the run's /24 network. */
    public static final int SPARES_MAX = 100;

    /**
     * Returns how many spare peers a run with {@code membershipFaults} membership faults starts at most: one per
     * fault (a fault adds at most one), one started ahead of the first add, and one more for a start that failed;
     * at most {@link #SPARES_MAX}.
     */
    public static int sparesMax(long membershipFaults) {
        return (int) Math.min(membershipFaults + 2, SPARES_MAX);
    }

    /**
     * Returns the next change: a refused one again; else promote the learner; else remove a voter when there is one
     * more than the target (the leader {@code leaderId} one time in {@value #REMOVE_LEADER_ONE_IN}, else the oldest
     * follower); else add the next spare.
     *
     * @param leaderId the current leader's id, or null when none is known (then a follower is removed)
     * @throws IllegalStateException while the change returned last has no outcome
     */
    public Change next(String leaderId) {
        if (unfinished != null) {
            throw new IllegalStateException("membership change '" + unfinished + "' is unfinished: one change at a "
                    + "time");
        }
        Change change;
        if (retry != null && retry.step() != Step.REMOVE) {
            change = retry;
        } else if (learner != null) {
            change = new Change(Step.PROMOTE, learner, false);
        } else if (voters.size() > target) {
            boolean takeLeader = retry != null ? retry.leader() : random.nextInt(REMOVE_LEADER_ONE_IN) == 0;
            change = removal(takeLeader, leaderId);
        } else {
            change = new Change(Step.ADD, nextSpare(), false);
        }
        retry = null;
        unfinished = change;
        return change;
    }

    private Change removal(boolean takeLeader, String leaderId) {
        if (takeLeader && voters.contains(leaderId)) {
            return new Change(Step.REMOVE, leaderId, true);
        }
        for (String voter : voters) {
            if (!voter.equals(leaderId)) {
                return new Change(Step.REMOVE, voter, false);
            }
        }
        throw new IllegalStateException("no follower among the voters " + voters);
    }

    /** Records that {@code change}, the unfinished one, was made. */
    public void completed(Change change) {
        finish(change);
        switch (change.step()) {
            case ADD -> {
                learner = change.peer();
                nextSpareNumber++;
            }
            case PROMOTE -> {
                voters.add(change.peer());
                learner = null;
            }
            case REMOVE -> voters.remove(change.peer());
        }
        completedCount++;
    }

    /** Records that {@code change}, the unfinished one, was refused and changed nothing: it is offered again. */
    public void refused(Change change) {
        finish(change);
        retry = change;
        refusedCount++;
    }

    /**
     * Records that the spare {@code change} was to add could not be started: the add is dropped and the next add
     * takes the next spare's name (a half-started peer's name and data are not reused).
     */
    public void spareLost(Change change) {
        finish(change);
        if (change.step() != Step.ADD) {
            throw new IllegalArgumentException("only an add has a spare to lose, not " + change);
        }
        nextSpareNumber++;
        refusedCount++;
    }

    private void finish(Change change) {
        if (!change.equals(unfinished)) {
            throw new IllegalStateException("the outcome of '" + change + "' while '" + unfinished
                    + "' is the unfinished change");
        }
        unfinished = null;
    }

    /** Returns the id the next add gives its spare. */
    public String nextSpare() {
        return "n" + nextSpareNumber;
    }

    /** Returns the voters as the completed changes left them, oldest first. */
    public List<String> voters() {
        return List.copyOf(voters);
    }

    /** Returns the learner, or null when there is none. */
    public String learner() {
        return learner;
    }

    /** Returns the voter count the plan keeps. */
    public int target() {
        return target;
    }

    /** Returns how many changes completed (adds, promotes and removes). */
    public int completedCount() {
        return completedCount;
    }

    /** Returns how many changes were refused (each is offered again). */
    public int refusedCount() {
        return refusedCount;
    }
}

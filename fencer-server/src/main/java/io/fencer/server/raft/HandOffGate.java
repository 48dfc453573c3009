package io.fencer.server.raft;

import io.fencer.lock.Command;

/**
 * When the proposer may let a release's grant be answered before the release is durable (an early hand-off), kept
 * under the proposer's lock. Two things make such an answer true to what the log will say:
 *
 * <ul>
 *   <li><b>Nothing queued changes the hand-off.</b> The answer is read from the applied state and the early
 *       hand-offs still queued; a command queued and not yet applied that could change a lock's queue head, its
 *       holder or the token its next grant takes (a cancelled wait, a revoke, a session's close or expiry, the end of
 *       a lock-delay, a floor raised, or a release the usual way, which may drop a record and fold its counter into
 *       the floor) would make the entry grant another session or another token. Such commands are <i>hazards</i>:
 *       while one is queued or in flight, nobody is answered early; one queued after an early answer is applied
 *       after its release, which is what the answer assumed. The caller takes a ticket (the count of hazards ever
 *       queued) before it reads the state and queues its release only if the count has not moved since.</li>
 *   <li><b>A lost answer's token is never granted again.</b> A crash, or a failed entry, may lose a release
 *       answered early; the restored state would grant the same token again, perhaps to another session. So the
 *       proposer sends a {@link Command.RaiseFloor} before any other command when it starts (on a group of one) and
 *       after a failed entry once an early hand-off was queued, and answers early only within an incarnation whose
 *       RaiseFloor has applied: every grant after it is above every token any earlier incarnation answered.</li>
 * </ul>
 *
 * Not thread-safe: every method runs under the proposer's lock.
 */
final class HandOffGate {
    /** Hazards ever queued: a ticket taken before reading the state is still good while this has not moved. */
    private long hazardsQueued;
    /** Hazards queued or in flight, not yet applied or failed. */
    private int hazardsOutstanding;
    /** Releases answered early for their grant, queued or in flight. */
    private int handOffsOutstanding;
    /** The incarnation that may give tickets: nothing owed, and the group at format level 5; null = none. */
    private String armedIncarnation;
    /**
     * The incarnation in which the last RaiseFloor owed applied, raised or refused at format level 4 (where no grant
     * was ever answered early, since none is before a raise of level 5 applies); null = none yet.
     */
    private String paidIncarnation;
    /**
     * A RaiseFloor must go out before any other command: the proposer started (an earlier process may have answered
     * grants early), or an entry failed after an early hand-off of this incarnation was queued.
     */
    private boolean raiseOwed;
    /** A RaiseFloor is queued or in flight. */
    private boolean raiseQueued;
    /** An early hand-off was queued in the current incarnation: a failed entry then owes a RaiseFloor. */
    private boolean handedOffThisIncarnation;
    /** The gap of the RaiseFloor commands: the most grants of one lock answered ahead of its applied state; 0 = off. */
    private final int gap;

    /** A gate whose RaiseFloor commands lift the floor by {@code gap}; 0 = early hand-offs off, nothing owed. */
    HandOffGate(int gap) {
        if (gap < 0) {
            throw new IllegalArgumentException("the gap must not be negative: " + gap);
        }
        this.gap = gap;
        this.raiseOwed = gap > 0;
    }

    /** True for a command that may change a lock's queue head, holder or next token (see the class doc). */
    static boolean isHazard(Command command) {
        return !(command instanceof Command.Acquire || command instanceof Command.AcquireAll
                || command instanceof Command.AcquirePermit || command instanceof Command.OpenSession
                || command instanceof Command.CheckpointLeases || command instanceof Command.StoreEntry
                || command instanceof Command.SetFormatLevel);
    }

    /** Returns a ticket for an early hand-off in {@code incarnation}, or -1 when none may be answered now. */
    long ticket(String incarnation) {
        return incarnation.equals(armedIncarnation) && hazardsOutstanding == 0 && !raiseOwed ? hazardsQueued : -1;
    }

    /** True when a hand-off whose ticket is {@code ticket} may still be answered early in {@code incarnation}. */
    boolean admits(long ticket, String incarnation) {
        return ticket >= 0 && ticket == hazardsQueued && ticket(incarnation) == ticket;
    }

    void queued(Command command, boolean handOff) {
        if (handOff) {
            handOffsOutstanding++;
            handedOffThisIncarnation = true;
        } else if (isHazard(command)) {
            hazardsQueued++;
            hazardsOutstanding++;
        }
    }

    void done(Command command, boolean handOff) {
        if (handOff) {
            handOffsOutstanding--;
        } else if (isHazard(command)) {
            hazardsOutstanding--;
        }
        assert handOffsOutstanding >= 0 && hazardsOutstanding >= 0 : "more done than queued: hand-offs "
                + handOffsOutstanding + ", hazards " + hazardsOutstanding;
    }

    /** True while an early hand-off is queued or in flight: entries then leave one at a time (see Proposer). */
    boolean handOffsOutstanding() {
        return handOffsOutstanding > 0;
    }

    /**
     * Returns the RaiseFloor to send ahead of every queued command now, or null when none is owed or one is on its
     * way. In a group of more than one peer nothing was answered early, and nothing is owed: an early hand-off of a
     * group of one is committed before any later change of the group's configuration, which follows it in the log.
     */
    Command.RaiseFloor owedRaise(boolean groupOfOne) {
        if (!raiseOwed || raiseQueued) {
            return null;
        }
        if (!groupOfOne) {
            raiseOwed = false;
            return null;
        }
        raiseQueued = true;
        return new Command.RaiseFloor(gap);
    }

    /**
     * The group's format level reached 5 in {@code incarnation}: it arms, when the RaiseFloor it owed applied in it
     * (refused at level 4, where nothing was ever answered early, so that no raise is owed either). No second raise,
     * which would lift the tokens of a group that is running.
     */
    void levelRaised(String incarnation) {
        if (gap > 0 && !raiseOwed && incarnation.equals(paidIncarnation)) {
            armedIncarnation = incarnation;
        }
    }

    /**
     * A RaiseFloor queued in {@code queuedIn} ended: {@code applied} (it reached the state, raised or refused at
     * format level 4) pays what was owed; {@code raised} in the current incarnation arms it.
     */
    void raiseEnded(boolean applied, boolean raised, String queuedIn, String current) {
        raiseQueued = false;
        if (applied && queuedIn.equals(current)) {
            raiseOwed = false;
            paidIncarnation = current;
            if (raised) {
                armedIncarnation = current;
            }
        }
    }

    /**
     * Incarnation {@code next} starts (a failed entry, or the proposer closing). When an early hand-off of the old one
     * may have been lost it owes a RaiseFloor, and is not armed until that applied; otherwise nothing was lost, and it
     * keeps what the old one had.
     */
    void newIncarnation(String next) {
        if (handedOffThisIncarnation) {
            raiseOwed = true;
            armedIncarnation = null;
        } else {
            boolean paid = paidIncarnation != null;
            armedIncarnation = armedIncarnation != null ? next : null;
            paidIncarnation = paid ? next : null;
        }
        handedOffThisIncarnation = false;
    }

    /** True when {@code incarnation} is armed and owes no RaiseFloor: tickets may be given (see {@link #ticket}). */
    boolean ticketsPossible(String incarnation) {
        return incarnation.equals(armedIncarnation) && !raiseOwed;
    }

    /** True while a RaiseFloor is owed and not yet on its way. */
    boolean raiseOwed() {
        return raiseOwed && !raiseQueued;
    }
}

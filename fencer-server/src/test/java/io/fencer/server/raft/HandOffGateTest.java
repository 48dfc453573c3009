package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import io.fencer.lock.Command;
import io.fencer.lock.SecretHash;
import java.util.List;
import org.junit.jupiter.api.Test;

/** When the proposer lets a release's grant be answered before the release is durable ({@link HandOffGate}). */
class HandOffGateTest {
    private static final SecretHash SECRET = SecretHash.of("a session secret");
    private static final Command.Release RELEASE = new Command.Release(1, SECRET, "jobs", 3);

    @Test
    void ticket_beforeTheStartsRaiseFloorApplied_isRefused() {
        HandOffGate gate = new HandOffGate(8);
        assertThat(gate.ticket("a-0")).isEqualTo(-1);

        Command.RaiseFloor raise = gate.owedRaise(true);
        assertThat(raise).isEqualTo(new Command.RaiseFloor(8));
        assertThat(gate.owedRaise(true)).as("one on its way").isNull();
        gate.queued(raise, false);
        assertThat(gate.ticket("a-0")).as("on its way").isEqualTo(-1);
        gate.done(raise, false);
        gate.raiseEnded(true, true, "a-0", "a-0");

        assertThat(gate.ticket("a-0")).as("armed; the raise was the one hazard queued").isEqualTo(1);
        assertThat(gate.ticket("a-1")).as("another incarnation is not armed").isEqualTo(-1);
        assertThat(gate.owedRaise(true)).as("paid").isNull();
    }

    @Test
    void owedRaise_withHandOffsOffOrInAGroupOfMoreThanOnePeer_owesNothing() {
        assertThat(new HandOffGate(0).owedRaise(true)).isNull();
        HandOffGate three = new HandOffGate(8);

        assertThat(three.owedRaise(false)).isNull();
        assertThat(three.owedRaise(true)).as("nothing was owed after all").isNull();
    }

    @Test
    void raiseEnded_failedOrQueuedInAnIncarnationThatEnded_stillOwesAndArmsNothing() {
        HandOffGate gate = new HandOffGate(8);
        gate.owedRaise(true);

        gate.raiseEnded(false, false, "a-0", "a-1");

        assertThat(gate.ticket("a-1")).isEqualTo(-1);
        assertThat(gate.owedRaise(true)).as("owed still").isEqualTo(new Command.RaiseFloor(8));
        gate.raiseEnded(true, true, "a-1", "a-2");
        assertThat(gate.ticket("a-2")).isEqualTo(-1);
        assertThat(gate.owedRaise(true)).as("applied in an incarnation that ended: owed still").isNotNull();
    }

    @Test
    void raiseEnded_refusedAtFormatLevelFour_paysAndArmsOnceTheLevelIsRaisedWithNoSecondRaise() {
        HandOffGate gate = new HandOffGate(8);
        gate.owedRaise(true);

        gate.raiseEnded(true, false, "a-0", "a-0");

        assertThat(gate.owedRaise(true)).isNull();
        assertThat(gate.ticket("a-0")).isEqualTo(-1);
        gate.levelRaised("a-0");
        assertThat(gate.ticket("a-0")).as("armed").isZero();
        assertThat(gate.owedRaise(true)).as("no second raise").isNull();
    }

    @Test
    void levelRaised_whileTheStartsRaiseIsOwedOrOnItsWay_armsNothing() {
        HandOffGate gate = new HandOffGate(8);
        gate.levelRaised("a-0");
        assertThat(gate.ticket("a-0")).isEqualTo(-1);

        gate.owedRaise(true);
        gate.levelRaised("a-0");

        assertThat(gate.ticket("a-0")).isEqualTo(-1);
    }

    @Test
    void admits_aHazardQueuedSinceTheTicket_refusesTheHandOffAndTheNextTicketUntilItIsDone() {
        HandOffGate gate = armed();
        long ticket = gate.ticket("a-0");
        Command cancel = new Command.CancelWait(2, SECRET, LockName.of("jobs"), "r");

        gate.queued(cancel, false);

        assertThat(gate.admits(ticket, "a-0")).isFalse();
        assertThat(gate.ticket("a-0")).as("while it is outstanding").isEqualTo(-1);
        gate.done(cancel, false);
        long after = gate.ticket("a-0");
        assertThat(after).as("once applied, with a fresh ticket").isEqualTo(ticket + 1);
        assertThat(gate.admits(ticket, "a-0")).as("the old ticket stays void").isFalse();
        assertThat(gate.admits(after, "a-0")).isTrue();
    }

    @Test
    void admits_acquiresAndOtherHandOffsQueuedSinceTheTicket_admitTheHandOff() {
        HandOffGate gate = armed();
        long ticket = gate.ticket("a-0");

        gate.queued(new Command.Acquire(2, SECRET, LockName.of("jobs"), "r", true, LockMode.EXCLUSIVE), false);
        gate.queued(RELEASE, true);

        assertThat(gate.admits(ticket, "a-0")).isTrue();
        assertThat(gate.handOffsOutstanding()).isTrue();
    }

    @Test
    void isHazard_commandsThatMayChangeAQueueHeadAHolderOrTheNextToken_areHazards() {
        LockName jobs = LockName.of("jobs");
        for (Command hazard : List.of(RELEASE, new Command.CancelWait(2, SECRET, jobs, "r"),
                new Command.Revoke(jobs, 3, "ops", false), new Command.ExpireSession(2, false),
                new Command.CloseSession(2, SECRET), new Command.EndLockDelay(jobs), new Command.RaiseFloor(8))) {
            assertThat(HandOffGate.isHazard(hazard)).as("%s", hazard).isTrue();
        }
        assertThat(HandOffGate.isHazard(new Command.Acquire(2, SECRET, jobs, "r", true, LockMode.EXCLUSIVE)))
                .isFalse();
        assertThat(HandOffGate.isHazard(new Command.SetFormatLevel(5))).isFalse();
    }

    @Test
    void newIncarnation_afterAHandOffWasQueued_owesARaiseFloorAndDisarms() {
        HandOffGate gate = armed();
        gate.queued(RELEASE, true);

        gate.newIncarnation("a-1");

        assertThat(gate.ticket("a-1")).isEqualTo(-1);
        assertThat(gate.owedRaise(true)).isEqualTo(new Command.RaiseFloor(8));
    }

    @Test
    void newIncarnation_withoutAHandOff_owesNothingAndStaysArmed() {
        HandOffGate gate = armed();

        gate.newIncarnation("a-1");

        assertThat(gate.owedRaise(true)).isNull();
        assertThat(gate.ticket("a-0")).as("the old incarnation's").isEqualTo(-1);
        assertThat(gate.ticket("a-1")).isZero();
    }

    private static HandOffGate armed() {
        HandOffGate gate = new HandOffGate(8);
        gate.owedRaise(true);
        gate.raiseEnded(true, true, "a-0", "a-0");
        return gate;
    }
}

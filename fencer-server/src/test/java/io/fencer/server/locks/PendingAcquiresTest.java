package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.lock.Applied;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which waiting Acquire calls a grant applied to the state machine completes. */
class PendingAcquiresTest {
    private static final SecretHash HASH = SecretHash.of("the pending acquires tests' secret");

    private final LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);
    private final PendingAcquires pending = new PendingAcquires();

    private Applied apply(Command command) {
        Applied applied = machine.apply(command);
        pending.onApplied(applied.events());
        return applied;
    }

    private long open() {
        return ((Result.SessionOpened) apply(new Command.OpenSession("", 10_000, "tester", HASH)).result())
                .sessionId();
    }

    /**
     * Regression: every grant of a lock named like a permit slot completed the calls waiting under the name before
     * "/permit-", as if a semaphore's permit, so a plain lock granted to the session answered its wait for another
     * plain lock: acquired, with the other lock's token, while that lock stayed held by another session and the wait
     * stayed queued for a grant no call would take.
     */
    @Test
    void onApplied_plainLockNamedLikeASlotGranted_leavesTheSessionsWaitForThePlainLockWaiting() {
        long holder = open();
        long session = open();
        apply(new Command.Acquire(holder, HASH, "x", "hold-x", false));
        PendingAcquires.Waiter waiter = pending.register(session, "x", false);
        apply(new Command.Acquire(session, HASH, "x", "wait-x", true));

        apply(new Command.Acquire(session, HASH, "x/permit-0", "other", false));

        assertThat(waiter.outcome).isNotDone();
        apply(new Command.CloseSession(holder, HASH));
        assertThat(waiter.outcome.join().lock()).isEqualTo("x");
    }

    @Test
    void onApplied_permitGranted_completesTheCallWaitingUnderTheSemaphoresName() {
        long holder = open();
        long session = open();
        apply(new Command.AcquirePermit(holder, HASH, "jobs", 1, "hold", false));
        PendingAcquires.Waiter waiter = pending.register(session, "jobs", true);
        apply(new Command.AcquirePermit(session, HASH, "jobs", 1, "wait", true));

        apply(new Command.CloseSession(holder, HASH));

        assertThat(waiter.outcome.join().lock()).isEqualTo("jobs/permit-0");
        assertThat(pending.size()).isZero();
    }

    /**
     * A plain lock named like a slot past the semaphore's count ({@code x/permit-5} beside semaphore {@code x} of one
     * permit) was granted to a session waiting for a permit of {@code x}, and its grant answered that wait: acquired,
     * with a token of the plain lock as permit 5 of a one-permit semaphore, while the permit wait stayed queued for a
     * grant no call would take. From format level 5 the plain acquire is refused.
     */
    @Test
    void onApplied_plainLockNamedLikeASlotPastTheCount_leavesTheSessionsPermitWaitWaiting() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        long holder = open();
        long session = open();
        apply(new Command.AcquirePermit(holder, HASH, "x", 1, "hold", false));
        PendingAcquires.Waiter waiter = pending.register(session, "x", true);
        apply(new Command.AcquirePermit(session, HASH, "x", 1, "wait", true));

        Result plain = apply(new Command.Acquire(session, HASH, "x/permit-5", "other", false)).result();

        assertThat(plain).isInstanceOf(Result.Rejected.class);
        assertThat(waiter.outcome).isNotDone();
        apply(new Command.CloseSession(holder, HASH));
        assertThat(waiter.outcome.join().lock()).isEqualTo("x/permit-0");
    }

    /**
     * Regression: at format level 4, where the previous release still grants a plain lock named like a slot past the
     * semaphore's count, the grant of {@code x/permit-5} to a session waiting for a permit of {@code x} (1 permit)
     * answered that wait acquired, with the plain lock's token as permit 5, while the permit wait stayed queued for a
     * grant no call would take. The grant now says whether it is a permit, and of which semaphore.
     */
    @Test
    void onApplied_plainLockNamedLikeASlotPastTheCountAtThePreviousLevel_leavesThePermitWaitWaiting() {
        long holder = open();
        long session = open();
        apply(new Command.AcquirePermit(holder, HASH, "x", 1, "hold", false));
        PendingAcquires.Waiter waiter = pending.register(session, "x", true);
        apply(new Command.AcquirePermit(session, HASH, "x", 1, "wait", true));

        Result plain = apply(new Command.Acquire(session, HASH, "x/permit-5", "other", false)).result();

        assertThat(plain).isInstanceOf(Result.Granted.class);
        assertThat(waiter.outcome).isNotDone();
        apply(new Command.CloseSession(holder, HASH));
        assertThat(waiter.outcome.join().lock()).isEqualTo("x/permit-0");
        assertThat(pending.size()).isZero();
    }

    /**
     * At format level 4 a semaphore {@code x/permit-0} may be in use beside {@code x}, whose slot 0 is the lock
     * {@code x/permit-0}: a session waiting for a permit of each has each wait answered by its own semaphore's slot.
     */
    @Test
    void onApplied_semaphoreNamedLikeASlotAtThePreviousLevel_answersEachPermitWaitWithItsOwnSlot() {
        long holder = open();
        long session = open();
        apply(new Command.AcquirePermit(holder, HASH, "x/permit-0", 1, "hold-inner", false));
        apply(new Command.AcquirePermit(holder, HASH, "x", 1, "hold-outer", false));
        PendingAcquires.Waiter outer = pending.register(session, "x", true);
        PendingAcquires.Waiter inner = pending.register(session, "x/permit-0", true);
        apply(new Command.AcquirePermit(session, HASH, "x", 1, "wait-outer", true));
        apply(new Command.AcquirePermit(session, HASH, "x/permit-0", 1, "wait-inner", true));

        apply(new Command.Release(holder, HASH, "x/permit-0", 1));

        assertThat(outer.outcome.join()).isEqualTo(new io.fencer.core.FencingToken("x/permit-0", 2));
        assertThat(inner.outcome).isNotDone();
        apply(new Command.CloseSession(holder, HASH));
        assertThat(inner.outcome.join()).isEqualTo(new io.fencer.core.FencingToken("x/permit-0/permit-0", 2));
        assertThat(pending.size()).isZero();
    }

    /**
     * A grant answered early completes its calls then; when its event applies, a later call of the same session for the
     * same lock (a new attempt: the session may be releasing that grant) keeps waiting for a later grant, while a
     * retry of an answered call (same request id: its answer was lost) is answered with it.
     */
    @Test
    void onApplied_grantAnsweredEarly_answersOnlyRetriesOfTheCallsAnsweredThen() {
        long holder = open();
        long session = open();
        Applied held = apply(new Command.Acquire(holder, HASH, "x", "hold-x", false));
        long token = ((Result.Granted) held.result()).token().value();
        PendingAcquires.Waiter first = pending.register(session, "x", false, true, "wait-x");
        apply(new Command.Acquire(session, HASH, "x", "wait-x", true));

        List<PendingAcquires.Waiter> taken = pending.takeHandOff(session, "x", token + 1);
        PendingAcquires.Waiter retry = pending.register(session, "x", false, true, "wait-x");
        PendingAcquires.Waiter later = pending.register(session, "x", false, true, "wait-x-again");
        apply(new Command.Release(holder, HASH, "x", token));

        assertThat(taken).containsExactly(first);
        assertThat(retry.outcome.join().value()).as("the retry of the call answered early").isEqualTo(token + 1);
        assertThat(later.outcome).as("a later attempt waits for a later grant").isNotDone();
        assertThat(pending.size()).isEqualTo(1);
    }

    @Test
    void takeHandOff_aWaitingCallThatDoesNotTakeEarlyAnswers_takesNothing() {
        long session = open();
        pending.register(session, "x", false, true, "a");
        pending.register(session, "x", false, false, "b");

        assertThat(pending.handOffEligible(session, "x")).isFalse();
        assertThat(pending.takeHandOff(session, "x", 7)).isEmpty();
        assertThat(pending.size()).as("both still wait").isEqualTo(2);
    }
}

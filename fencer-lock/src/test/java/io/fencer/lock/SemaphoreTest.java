package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Semaphores in the state machine: N permit slots, each a lock with its own token counter, granted FIFO. */
class SemaphoreTest {
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");
    private final LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);

    private Applied apply(Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        return applied;
    }

    private long open() {
        return ((Result.SessionOpened) apply(new Command.OpenSession("", 10_000, "tester", HASH)).result())
                .sessionId();
    }

    private Result permit(long session, int permits, String request) {
        return apply(new Command.AcquirePermit(session, HASH, "jobs", permits, request, true)).result();
    }

    private static InvalidArgumentException refusal(Result result) {
        assertThat(result).isInstanceOf(Result.Rejected.class);
        return (InvalidArgumentException) ((Result.Rejected) result).error();
    }

    @Test
    void acquirePermit_twoPermits_grantsTwoSlotsThenQueuesTheThird() {
        Result first = permit(open(), 2, "a");
        Result second = permit(open(), 2, "b");
        Result third = permit(open(), 2, "c");

        assertThat(first).isEqualTo(new Result.Granted(new FencingToken("jobs/permit-0", 1)));
        assertThat(second).as("each slot its own counter").isEqualTo(new Result.Granted(
                new FencingToken("jobs/permit-1", 1)));
        assertThat(third).isEqualTo(new Result.Queued("jobs", 0));
        assertThat(machine.describeSemaphore("jobs").orElseThrow().held()).isEqualTo(2);
    }

    @Test
    void release_ofASlot_grantsItToTheNextWaiterWithAHigherTokenForThatSlot() {
        long holder = open();
        permit(holder, 2, "a");
        permit(open(), 2, "b");
        long waiter = open();
        permit(waiter, 2, "c");

        Applied released = apply(new Command.Release(holder, HASH, "jobs/permit-0", 1));

        FencingToken next = new FencingToken("jobs/permit-0", 2);
        assertThat(released.result()).isEqualTo(new Result.Released(new FencingToken("jobs/permit-0", 1), next));
        assertThat(released.events()).contains(new Event.Granted(waiter, "c", next, "tester", "jobs"));
    }

    @Test
    void expireSession_ofAHolder_freesItsPermitForTheWaiter() {
        long holder = open();
        permit(holder, 1, "a");
        long waiter = open();
        permit(waiter, 1, "b");

        Applied expired = apply(new Command.ExpireSession(holder, false));

        assertThat(expired.events()).contains(
                new Event.Granted(waiter, "b", new FencingToken("jobs/permit-0", 2), "tester", "jobs"));
    }

    @Test
    void acquirePermit_withAnotherCountWhileInUse_isInvalidArgumentNamingBoth() {
        permit(open(), 2, "a");

        InvalidArgumentException refused = refusal(permit(open(), 3, "b"));

        assertThat(refused.field()).isEqualTo("permits");
        assertThat(refused.value()).isEqualTo("3");
        assertThat(refused).hasMessageContaining("in use with 2 permits, asked with 3");
    }

    @Test
    void acquirePermit_zeroOrHugeCounts_areInvalidArgumentNamingTheCountAndTheLimit() {
        long session = open();
        assertThat(refusal(permit(session, 0, "zero"))).hasMessageContaining("0 permits")
                .hasMessageContaining("permitsMax " + Limits.PERMITS_MAX);
        InvalidArgumentException huge = refusal(permit(session, Limits.PERMITS_MAX + 1, "huge"));
        assertThat(huge.value()).isEqualTo(Integer.toString(Limits.PERMITS_MAX + 1));
        assertThat(machine.describeSemaphore("jobs")).isEmpty();
    }

    @Test
    void acquire_ofASlotWhileTheSemaphoreIsInUse_isRefused_andASlotHeldPlainBlocksTheSemaphore() {
        long session = open();
        permit(session, 2, "a");
        InvalidArgumentException slot = refusal(apply(new Command.Acquire(open(), HASH, "jobs/permit-1", "p", false))
                .result());
        assertThat(slot).hasMessageContaining("permit slot 1 of semaphore 'jobs'");

        apply(new Command.Acquire(session, HASH, "other/permit-0", "p", false));
        InvalidArgumentException blocked = refusal(apply(new Command.AcquirePermit(open(), HASH, "other", 2, "s",
                false)).result());
        assertThat(blocked).hasMessageContaining("'other/permit-0': it is in use as a plain lock");
    }

    @Test
    void cancelWait_ofAPermitWait_removesIt() {
        permit(open(), 1, "a");
        long waiter = open();
        permit(waiter, 1, "b");

        assertThat(apply(new Command.CancelWait(waiter, HASH, "jobs", "b")).result())
                .isEqualTo(new Result.WaitCancelled(true));
        assertThat(machine.describeSemaphore("jobs").orElseThrow().waiters()).isEmpty();
    }

    @Test
    void snapshotAndCodec_withSemaphoreHoldersAndWaiters_restoreAnEqualMachine() throws IOException {
        permit(open(), 1, "a");
        permit(open(), 1, "b");
        byte[] bytes = LockMachineFixture.snapshot(machine);

        LockStateMachine restored = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);

        assertThat(restored.describeSemaphore("jobs")).isEqualTo(machine.describeSemaphore("jobs"));
        assertThat(LockMachineFixture.snapshot(restored)).isEqualTo(bytes);
        Command command = new Command.AcquirePermit(1, HASH, "jobs", 5, "r", true);
        assertThat(CommandCodec.decodeCommands(CommandCodec.encodeCommands(List.of(command))))
                .containsExactly(command);
    }

    /**
     * A semaphore and a plain lock of one name: CancelWait names a wait by its name alone, so a lock try's CancelWait
     * found the semaphore's, answered it with the session's permit (a token of another lock, as if the lock were
     * acquired) and left the lock wait queued for a session no call waits for. Names are disjoint from level 5.
     */
    @Test
    void acquirePermit_namedAsALockInUse_refusedSoThatALockWaitIsNeverCancelledAsAPermit() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        apply(new Command.Acquire(open(), HASH, "jobs", "hold", false));
        long session = open();
        Result permit = permit(session, 2, "p");
        apply(new Command.Acquire(session, HASH, "jobs", "wait", true));

        Result cancelled = apply(new Command.CancelWait(session, HASH, "jobs", "wait")).result();

        assertThat(cancelled).isEqualTo(new Result.WaitCancelled(true));
        assertThat(machine.session(session).orElseThrow().waiting()).isEmpty();
        assertThat(refusal(permit).getMessage()).contains("semaphore 'jobs'", "in use as a lock");
    }

    @Test
    void acquire_lockNamedAsASemaphoreInUse_refusedAloneAndInAMultiLock() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        permit(open(), 2, "p");
        long session = open();

        Result plain = apply(new Command.Acquire(session, HASH, "jobs", "lock", true)).result();
        Result all = apply(Command.AcquireAll.of(session, HASH, List.of("other", "jobs"), "all", true)).result();

        assertThat(refusal(plain).getMessage()).contains("lock 'jobs' is the name of semaphore 'jobs'");
        assertThat(refusal(all).getMessage()).contains("lock 'jobs' is the name of semaphore 'jobs'");
        assertThat(machine.describe("jobs")).isEmpty();
    }

    /**
     * A plain lock named like a slot past the semaphore's count is no permit in the state: not counted, blocking no
     * permit, never adopted by the semaphore, and its release grants no permit waiter (at the previous format level,
     * where such a lock is still granted beside the semaphore).
     */
    @Test
    void acquire_slotPastThePermitCountAtThePreviousLevel_isNeitherCountedNorBlockingNorAdopted() {
        long holder = open();
        permit(holder, 1, "a");
        long plain = open();
        FencingToken past = ((Result.Granted) apply(new Command.Acquire(plain, HASH, "jobs/permit-1", "p", false))
                .result()).token();
        long waiter = open();

        Result waiting = permit(waiter, 1, "w");
        Applied released = apply(new Command.Release(plain, HASH, "jobs/permit-1", past.value()));

        assertThat(waiting).isEqualTo(new Result.Queued("jobs", 0));
        assertThat(released.result()).isEqualTo(new Result.Released(past, null));
        assertThat(released.events()).noneMatch(event -> event instanceof Event.Granted);
        SemaphoreView jobs = machine.describeSemaphore("jobs").orElseThrow();
        assertThat(jobs.slots()).hasSize(1);
        assertThat(jobs.held()).isEqualTo(1);
        assertThat(jobs.waiters()).extracting(LockView.WaiterView::sessionId).containsExactly(waiter);
        Applied freed = apply(new Command.CloseSession(holder, HASH));
        assertThat(freed.events()).contains(new Event.Granted(waiter, "w", new FencingToken("jobs/permit-0", 2),
                "tester", "jobs"));
    }

    /**
     * A plain lock named like a slot past the count, granted while the semaphore is in use, carries the name the
     * server answers the session's permit wait by (the semaphore before "/permit-"): from format level 5 the slot
     * namespace of a semaphore in use is the semaphore's alone, whatever the index.
     */
    @Test
    void acquire_slotPastThePermitCountWhileTheSemaphoreIsInUse_isRefusedNamingTheLock() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        permit(open(), 1, "a");
        long session = open();
        permit(session, 1, "w");

        Result plain = apply(new Command.Acquire(session, HASH, "jobs/permit-5", "p", false)).result();
        Result all = apply(Command.AcquireAll.of(session, HASH, List.of("other", "jobs/permit-5"), "all", false))
                .result();

        InvalidArgumentException refused = refusal(plain);
        assertThat(refused.field()).isEqualTo("lock");
        assertThat(refused.value()).isEqualTo("jobs/permit-5");
        assertThat(refused).hasMessageContaining("lock 'jobs/permit-5' is named like a permit slot of semaphore"
                + " 'jobs' (1 permits)");
        assertThat(refusal(all).value()).isEqualTo("jobs/permit-5");
        assertThat(machine.describe("jobs/permit-5")).isEmpty();
        assertThat(machine.describe("other")).isEmpty();
    }

    /** From format level 5 a semaphore is not used while a plain lock holds any name of its slot form. */
    @Test
    void acquirePermit_whileAPlainLockIsNamedLikeASlotPastTheCount_isRefusedNamingTheLock() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        apply(new Command.Acquire(open(), HASH, "jobs/permit-5", "p", false));
        apply(new Command.Acquire(open(), HASH, "jobs/permit-x", "q", false));

        InvalidArgumentException refused = refusal(permit(open(), 2, "s"));

        assertThat(refused.field()).isEqualTo("semaphore");
        assertThat(refused.value()).isEqualTo("jobs");
        assertThat(refused).hasMessageContaining("'jobs/permit-5': it is in use as a plain lock");
        assertThat(machine.describeSemaphore("jobs")).isEmpty();
        apply(new Command.Release(1, HASH, "jobs/permit-5", 1)); // session 1 held it: its name no longer blocks
        assertThat(permit(open(), 2, "t")).isInstanceOf(Result.Granted.class);
    }

    private Result permitOf(long session, String semaphore, int permits, String request) {
        return apply(new Command.AcquirePermit(session, HASH, semaphore, permits, request, true)).result();
    }

    private static FencingToken granted(Result result) {
        assertThat(result).isInstanceOf(Result.Granted.class);
        return ((Result.Granted) result).token();
    }

    /** Semaphore x of 2 permits in use with its slot 0 free again (held once, token 1) and slot 1 held. */
    private void semaphoreXWithSlotZeroFree() {
        long first = open();
        FencingToken slot0 = granted(permitOf(first, "x", 2, "x0"));
        granted(permitOf(open(), "x", 2, "x1"));
        apply(new Command.Release(first, HASH, slot0.lock(), slot0.value()));
    }

    /**
     * Regression: a semaphore named like a slot of a semaphore in use ({@code x/permit-0} while {@code x} was in use
     * with that slot free) was used at format level 5, and x then granted its slot lock {@code x/permit-0}: a lock
     * and a semaphore in use of one name, which level 5 rules out (a quota took the slot's holder for a session
     * taking part in the other semaphore, and a wait is given up by its name alone).
     */
    @Test
    void acquirePermit_namedLikeASlotOfASemaphoreInUse_isRefusedNamingBoth() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        semaphoreXWithSlotZeroFree();

        Result refused = permitOf(open(), "x/permit-0", 1, "s");
        FencingToken slot0 = granted(permitOf(open(), "x", 2, "x0-again"));

        InvalidArgumentException error = refusal(refused);
        assertThat(error.field()).isEqualTo("semaphore");
        assertThat(error.value()).isEqualTo("x/permit-0");
        assertThat(error).hasMessageContaining("semaphore 'x/permit-0' is named like a permit slot of semaphore 'x'"
                + " (2 permits)");
        assertThat(machine.describeSemaphore("x/permit-0")).isEmpty();
        assertThat(slot0).isEqualTo(new FencingToken("x/permit-0", 2));
    }

    /** The other order: from level 5 a semaphore is not used while a semaphore in use is named like its slot. */
    @Test
    void acquirePermit_whileASemaphoreIsNamedLikeOneOfItsSlots_isRefusedNamingTheSlot() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        long inner = open();
        FencingToken innerSlot = granted(permitOf(inner, "x/permit-0", 1, "s"));

        Result refused = permitOf(open(), "x", 2, "x0");

        InvalidArgumentException error = refusal(refused);
        assertThat(error.field()).isEqualTo("semaphore");
        assertThat(error.value()).isEqualTo("x");
        assertThat(error).hasMessageContaining("semaphore 'x' cannot use slot 'x/permit-0': it is the name of a"
                + " semaphore in use");
        assertThat(machine.describe("x/permit-0")).isEmpty();
        apply(new Command.Release(inner, HASH, innerSlot.lock(), innerSlot.value()));
        assertThat(granted(permitOf(open(), "x", 2, "x0-later")).lock()).isEqualTo("x/permit-0");
    }

    /**
     * At the previous format level a semaphore named like a slot of another is used beside it, as that release
     * decided; each grant stays its own semaphore's (its slot, its waiter, its counter) and every token of a slot
     * rises.
     */
    @Test
    void acquirePermit_namedLikeASlotAtThePreviousLevel_keepsEachSemaphoresGrantsAndTokensApart() {
        semaphoreXWithSlotZeroFree();
        long inner = open();
        FencingToken innerSlot = granted(permitOf(inner, "x/permit-0", 1, "s"));
        long outer = open();
        FencingToken outerSlot = granted(permitOf(outer, "x", 2, "x0-again"));
        long innerWaiter = open();
        long outerWaiter = open();
        assertThat(permitOf(innerWaiter, "x/permit-0", 1, "s-wait")).isEqualTo(new Result.Queued("x/permit-0", 0));
        assertThat(permitOf(outerWaiter, "x", 2, "x-wait")).isEqualTo(new Result.Queued("x", 0));

        Applied outerReleased = apply(new Command.Release(outer, HASH, outerSlot.lock(), outerSlot.value()));
        Applied innerReleased = apply(new Command.Release(inner, HASH, innerSlot.lock(), innerSlot.value()));

        assertThat(innerSlot).isEqualTo(new FencingToken("x/permit-0/permit-0", 2));
        assertThat(outerSlot).isEqualTo(new FencingToken("x/permit-0", 2));
        assertThat(outerReleased.events()).containsExactly(
                new Event.GrantEnded(outerSlot, outer, EndCause.RELEASED),
                new Event.Granted(outerWaiter, "x-wait", new FencingToken("x/permit-0", 3), "tester", "x"));
        assertThat(innerReleased.events()).containsExactly(
                new Event.GrantEnded(innerSlot, inner, EndCause.RELEASED),
                new Event.Granted(innerWaiter, "s-wait", new FencingToken("x/permit-0/permit-0", 3), "tester",
                        "x/permit-0"));
        assertThat(machine.describeSemaphore("x").orElseThrow().waiters()).isEmpty();
        assertThat(machine.describeSemaphore("x/permit-0").orElseThrow().waiters()).isEmpty();
    }
}

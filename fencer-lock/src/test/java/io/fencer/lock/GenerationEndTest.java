package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.TokenExhaustedException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The end of a generation reached by waiters: a lock passed on to its queue, a multi-lock granted as a unit and a
 * semaphore's slot passed to its next waiter grant no token past the group's generation, as an acquire does not. A
 * token past it belongs to the next generation, which a restore from a backup taken before it starts counting in, so
 * the restored group would issue that token again.
 */
class GenerationEndTest {
    private static final SecretHash HASH = SecretHash.of("the generation end tests' secret");
    private static final Limits LIMITS = new Limits(10, 10, 10, 10, 1_000, 60_000);
    private static final long LAST = FencingToken.generationLast(0);

    private final List<FencingToken> issued = new ArrayList<>();

    /** A machine of generation 0 at format level 5 whose next token is {@code next}, with {@code sessions} open. */
    private LockStateMachine machine(long next, int sessions) {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, next - 1);
        machine.apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL_GENERATIONS));
        for (int session = 0; session < sessions; session++) {
            machine.apply(new Command.OpenSession("", 10_000, "ann", HASH));
        }
        return machine;
    }

    /** Applies a command, checks the invariants and collects every token it issued. */
    private Applied apply(LockStateMachine machine, Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        for (Event event : applied.events()) {
            if (event instanceof Event.Granted granted) {
                issued.add(granted.token());
            }
        }
        return applied;
    }

    @Test
    void release_waitersQueuedBeforeTheEnd_grantNoTokenPastItAndARestoreIssuesNoneTwice() throws IOException {
        LockStateMachine machine = machine(LAST - 1, 4);
        apply(machine, new Command.Acquire(1, HASH, "a", "r1", true));
        for (long waiter = 2; waiter <= 4; waiter++) {
            apply(machine, new Command.Acquire(waiter, HASH, "a", "r" + waiter, true));
        }
        byte[] backup = LockMachineFixture.snapshot(machine);

        apply(machine, new Command.Release(1, HASH, "a", LAST - 1));
        Applied last = apply(machine, new Command.Release(2, HASH, "a", LAST));
        apply(machine, new Command.Release(3, HASH, "a", LAST + 1)); // would pass the lock to the fourth session
        LockStateMachine restored = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(backup)),
                LIMITS).restoredInGeneration(1);
        restored.apply(new Command.OpenSession("", 10_000, "bob", HASH));
        Applied again = apply(restored, new Command.Acquire(5, HASH, "a", "after-restore", false));

        assertThat(issued).extracting(FencingToken::value).doesNotHaveDuplicates();
        assertThat(machine.highestToken()).isEqualTo(LAST);
        assertThat(last.events()).contains(new Event.WaitDropped(3, "a", "r3"), new Event.WaitDropped(4, "a", "r4"));
        assertThat(((Result.Granted) again.result()).token().value()).isGreaterThan(LAST);
    }

    /**
     * Regression: a snapshot's floor was checked against its generation's end, its locks' tokens were not, so a state
     * holding a token past the end loaded. Made here by a group at level 4, whose tokens end at the maximum value,
     * raised to level 5 after granting past generation 0's end: the only way such a state arises but corruption.
     */
    @Test
    void readSnapshot_lockTokenPastItsGenerationsEnd_refusedNamingTheLockAndTheEnd() {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, LAST - 1);
        machine.apply(new Command.OpenSession("", 10_000, "ann", HASH));
        machine.apply(new Command.Acquire(1, HASH, "a", "r1", false));
        machine.apply(new Command.Release(1, HASH, "a", LAST));
        machine.apply(new Command.Acquire(1, HASH, "a", "r2", false)); // LAST + 1: level 4 ends at the maximum
        machine.apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL_GENERATIONS));
        byte[] corrupt = LockMachineFixture.snapshot(machine);

        assertThatThrownBy(() -> LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(corrupt)),
                LIMITS)).isInstanceOf(IOException.class)
                .hasMessageContaining("lock a lastToken " + (LAST + 1) + " is past the end of token generation 0, "
                        + LAST);
    }

    /** Regression: the refusal at a generation's end named the maximum token value, which no grant had reached. */
    @Test
    void acquire_atTheEndOfItsGeneration_isRefusedNamingTheGenerationsEndNotTheMaximum() {
        LockStateMachine machine = machine(LAST, 2);
        apply(machine, new Command.Acquire(1, HASH, "a", "r1", true));
        apply(machine, new Command.Release(1, HASH, "a", LAST));

        Applied refused = apply(machine, new Command.Acquire(2, HASH, "a", "r2", true));

        assertThat(((Result.Rejected) refused.result()).error()).isInstanceOf(TokenExhaustedException.class)
                .hasMessageContaining("last token " + LAST + " is the last of token generation 0, which ends at "
                        + LAST).hasMessageNotContaining(Long.toString(FencingToken.VALUE_MAX));
        assertThat(new TokenExhaustedException("a", FencingToken.VALUE_MAX))
                .hasMessageContaining("reached the maximum " + FencingToken.VALUE_MAX);
    }

    @Test
    void release_multiLockQueuedBeforeTheEnd_isNotGrantedPastItAndLeavesEveryQueue() {
        LockStateMachine machine = machine(LAST - 1, 3);
        apply(machine, new Command.Acquire(1, HASH, "a", "r1", true));
        apply(machine, new Command.Acquire(2, HASH, "a", "r2", true));
        apply(machine, Command.AcquireAll.of(3, HASH, List.of("a", "b"), "ab", true));

        apply(machine, new Command.Release(1, HASH, "a", LAST - 1));
        Applied last = apply(machine, new Command.Release(2, HASH, "a", LAST));

        assertThat(machine.highestToken()).isEqualTo(LAST);
        assertThat(last.events()).contains(new Event.WaitDropped(3, "a", "ab"), new Event.WaitDropped(3, "b", "ab"));
        assertThat(machine.session(3).orElseThrow().waiting()).isEmpty();
        assertThat(machine.lockCount()).isZero();
    }

    /**
     * Readers let in from the queue up to the end of the generation left the reader behind them queued while readers
     * held: a wait nothing could ever grant, and a state that broke the invariants, so that no snapshot of it loaded.
     */
    @Test
    void release_readersQueuedBeforeTheEnd_grantsUpToItAndDropsTheReaderLeftBehind() throws IOException {
        LockStateMachine machine = machine(LAST - 1, 3);
        apply(machine, new Command.Acquire(1, HASH, "a", "r1", true));
        apply(machine, new Command.Acquire(2, HASH, "a", "r2", true, LockMode.SHARED));
        apply(machine, new Command.Acquire(3, HASH, "a", "r3", true, LockMode.SHARED));

        Applied released = apply(machine, new Command.Release(1, HASH, "a", LAST - 1));

        assertThat(released.events()).contains(new Event.WaitDropped(3, "a", "r3"));
        assertThat(issued).extracting(FencingToken::value).containsExactly(LAST - 1, LAST);
        assertThat(machine.session(3).orElseThrow().waiting()).isEmpty();
        LockStateMachine restored = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(
                LockMachineFixture.snapshot(machine))), LIMITS);
        assertThat(LockMachineFixture.snapshot(restored)).isEqualTo(LockMachineFixture.snapshot(machine));
    }

    /**
     * The same queue reached another way: the floor reached the end while a reader held and a writer waited ahead of
     * a reader; the writer's wait ended, and the reader was left at the head of the queue behind the reader.
     */
    @Test
    void cancelWait_writerAheadOfAReaderAfterTheFloorReachedTheEnd_dropsTheReaderLeftBehind() {
        LockStateMachine machine = machine(LAST - 1, 4);
        apply(machine, new Command.Acquire(1, HASH, "b", "r1", true, LockMode.SHARED));
        apply(machine, new Command.Acquire(2, HASH, "b", "w2", true));
        apply(machine, new Command.Acquire(3, HASH, "b", "r3", true, LockMode.SHARED));
        for (long value = LAST - 1; value <= LAST; value++) { // another lock takes the last tokens, into the floor
            apply(machine, new Command.Acquire(4, HASH, "a", "a" + value, false));
            apply(machine, new Command.Release(4, HASH, "a", value));
        }

        Applied cancelled = apply(machine, new Command.CancelWait(2, HASH, "b", "w2"));

        assertThat(machine.floor()).isEqualTo(LAST);
        assertThat(cancelled.events()).contains(new Event.WaitDropped(3, "b", "r3"));
        assertThat(machine.session(3).orElseThrow().waiting()).isEmpty();
    }

    /**
     * A multi-lock leaving its queues one by one, whose departure from one lock let the end of the generation drop the
     * waits of the next, its own among them: the wait was counted out twice at the locks it had already left.
     */
    @Test
    void cancelWait_multiLockLeavingLocksWhoseWaitsTheEndDrops_countsEveryWaitOutOnce() {
        LockStateMachine machine = twoMultiLocksQueuedAtTheEnd();

        Applied cancelled = apply(machine, new Command.CancelWait(2, HASH, "d", "bcd"));

        assertThat(machine.waiterCount()).isZero();
        assertThat(cancelled.events()).contains(new Event.WaitDropped(3, "d", "dc"),
                new Event.WaitDropped(3, "c", "dc"));
        assertThat(machine.session(2).orElseThrow().waiting()).isEmpty();
        assertThat(machine.session(3).orElseThrow().waiting()).isEmpty();
    }

    /** The same departure when the multi-lock's session ends: its wait on the last lock was gone when it got there. */
    @Test
    void expireSession_multiLockLeavingLocksWhoseWaitsTheEndDrops_endsTheSession() {
        LockStateMachine machine = twoMultiLocksQueuedAtTheEnd();

        Applied expired = apply(machine, new Command.ExpireSession(2, false));

        assertThat(expired.result()).isInstanceOf(Result.SessionEnded.class);
        assertThat(machine.waiterCount()).isZero();
        assertThat(machine.session(3).orElseThrow().waiting()).isEmpty();
    }

    /**
     * Session 2 waits for b, c and d (b is held), session 3 for d and c behind it, and the floor is at the end of the
     * generation: when session 2 leaves c, the end drops session 3's wait, and with it d's queue, session 2's wait too.
     */
    private LockStateMachine twoMultiLocksQueuedAtTheEnd() {
        LockStateMachine machine = machine(LAST - 1, 3);
        apply(machine, new Command.Acquire(1, HASH, "b", "b1", false));
        apply(machine, Command.AcquireAll.of(2, HASH, List.of("b", "c", "d"), "bcd", true));
        apply(machine, Command.AcquireAll.of(3, HASH, List.of("d", "c"), "dc", true));
        for (long value = LAST - 1; value <= LAST; value++) { // another lock takes the last tokens, into the floor
            apply(machine, new Command.Acquire(1, HASH, "x", "x" + value, false));
            apply(machine, new Command.Release(1, HASH, "x", value));
        }
        return machine;
    }

    /**
     * Regression: an ending session's release of an exhausted lock dropped a multi-lock's waits, and another lock that
     * multi-lock left passed to the ending session, which still waited for it: the session ended holding that lock,
     * which nobody could release and no snapshot of the state loaded.
     */
    @Test
    void expireSession_releaseAtTheEndPassesAnotherLockToTheEndingSession_endsThatGrantToo() {
        LockStateMachine machine = machine(LAST - 1, 4);
        apply(machine, new Command.Acquire(1, HASH, "a", "a1", true));
        apply(machine, new Command.Acquire(2, HASH, "a", "a2", true));
        apply(machine, new Command.Acquire(4, HASH, "b", "b4", true));
        apply(machine, Command.AcquireAll.of(3, HASH, List.of("a", "b"), "ab", true));
        apply(machine, new Command.Acquire(2, HASH, "b", "b2", true));
        apply(machine, new Command.Release(1, HASH, "a", LAST - 1)); // session 2 holds a under the last token
        apply(machine, new Command.Release(4, HASH, "b", LAST - 1)); // b waits for the multi-lock, then session 2

        Applied expired = apply(machine, new Command.ExpireSession(2, false));

        assertThat(((Result.SessionEnded) expired.result()).released()).extracting(FencingToken::value)
                .containsExactly(LAST, LAST);
        assertThat(machine.describe("b")).isEmpty();
        assertThat(machine.lockCount()).isZero();
    }

    @Test
    void release_permitWaiterQueuedAtTheEnd_isNotGrantedPastIt() {
        LockStateMachine machine = machine(LAST, 2);
        apply(machine, new Command.AcquirePermit(1, HASH, "jobs", 1, "p1", true));
        apply(machine, new Command.AcquirePermit(2, HASH, "jobs", 1, "p2", true));

        Applied released = apply(machine, new Command.Release(1, HASH, "jobs/permit-0", LAST));

        assertThat(machine.highestToken()).isEqualTo(LAST);
        assertThat(released.events()).contains(new Event.WaitDropped(2, "jobs", "p2"));
        assertThat(machine.describeSemaphore("jobs")).isEmpty();
    }
}

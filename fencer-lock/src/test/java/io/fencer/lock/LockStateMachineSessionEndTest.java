package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lock state machine by example: what a session's end, a lock-delay and a cancelled wait do to a lock. */
class LockStateMachineSessionEndTest extends LockMachineFixture {
    // ---- expiry and lock-delay

    @Test
    void expireSession_withWaiter_grantsNextWaiterHigherToken() {
        long holder = open();
        long waiter = open();
        FencingToken old = acquire(holder, "a");
        queue(waiter, "a", "w");

        Applied applied = apply(new Command.ExpireSession(holder, false));

        FencingToken next = new FencingToken("a", old.value() + 1);
        assertThat(applied.result()).isEqualTo(new Result.SessionEnded(holder, List.of(old)));
        assertThat(applied.events()).containsExactly(
                new Event.GrantEnded(old, holder, EndCause.SESSION_EXPIRED),
                new Event.Granted(waiter, "w", next, IDENTITY),
                new Event.SessionEnded(holder, EndCause.SESSION_EXPIRED));
        assertThat(machine.describe("a").orElseThrow().holder()).isEqualTo(next);
    }

    @Test
    void expireSession_withLockDelay_keepsLockUnavailableUntilEndLockDelay() {
        long holder = open();
        long waiter = open();
        long trier = open();
        FencingToken old = acquire(holder, "a");
        queue(waiter, "a", "w");

        Applied expired = apply(new Command.ExpireSession(holder, true));

        assertThat(expired.events()).containsExactly(
                new Event.GrantEnded(old, holder, EndCause.SESSION_EXPIRED),
                new Event.LockDelayStarted("a"),
                new Event.SessionEnded(holder, EndCause.SESSION_EXPIRED));
        LockView delayedView = machine.describe("a").orElseThrow();
        assertThat(delayedView.delayed()).isTrue();
        assertThat(delayedView.holder()).isNull();
        assertThat(delayedView.waiters()).containsExactly(new LockView.WaiterView(waiter, "w"));
        assertThat(machine.delayedLocks()).containsExactly("a");
        assertThat(apply(new Command.Acquire(trier, HASH, "a", "t", false)).result())
                .isEqualTo(new Result.Busy("a", null));
        assertThat(apply(new Command.Acquire(trier, HASH, "a", "t2", true)).result())
                .isEqualTo(new Result.Queued("a", 1));

        Applied ended = apply(new Command.EndLockDelay("a"));

        FencingToken next = new FencingToken("a", old.value() + 1);
        assertThat(ended.result()).isEqualTo(new Result.DelayEnded("a", true, next));
        assertThat(ended.events()).containsExactly(new Event.Granted(waiter, "w", next, IDENTITY));
        assertThat(machine.delayedLocks()).isEmpty();
        assertThat(machine.describe("a").orElseThrow().delayed()).isFalse();
    }

    @Test
    void expireSession_withLockDelayAndNoWaiter_keepsRecordUntilDelayEnds() {
        long holder = open();
        FencingToken old = acquire(holder, "a");
        apply(new Command.ExpireSession(holder, true));
        assertThat(machine.lockCount()).isEqualTo(1);

        Applied ended = apply(new Command.EndLockDelay("a"));

        assertThat(ended.result()).isEqualTo(new Result.DelayEnded("a", true, null));
        assertThat(ended.events()).isEmpty();
        assertThat(machine.lockCount()).isZero();
        assertThat(machine.floor()).isEqualTo(old.value());
    }

    @Test
    void closeSessionAndRelease_withLockDelayNeverConfigured_grantWaiterAtOnce() {
        long holder = open();
        long waiter = open();
        acquire(holder, "a");
        queue(waiter, "a", "w");

        Applied closed = apply(new Command.CloseSession(holder, HASH));

        assertThat(closed.events()).doesNotHaveAnyElementsOfTypes(Event.LockDelayStarted.class);
        assertThat(machine.describe("a").orElseThrow().holderSessionId()).isEqualTo(waiter);
        assertThat(machine.delayedLocks()).isEmpty();
    }

    @Test
    void endLockDelay_whenNotDelayed_returnsNotEndedAndChangesNothing() {
        long holder = open();
        acquire(holder, "a");
        byte[] before = snapshot(machine);

        Applied held = apply(new Command.EndLockDelay("a"));
        Applied unknown = apply(new Command.EndLockDelay("b"));

        assertThat(held.result()).isEqualTo(new Result.DelayEnded("a", false, null));
        assertThat(unknown.result()).isEqualTo(new Result.DelayEnded("b", false, null));
        assertThat(snapshot(machine)).isEqualTo(before);
    }

    // ---- cancel

    @Test
    void cancelWait_whenWaiting_removesWait() {
        long holder = open();
        long waiter = open();
        acquire(holder, "a");
        queue(waiter, "a", "w");

        Applied applied = apply(new Command.CancelWait(waiter, HASH, "a", "w"));

        assertThat(applied.result()).isEqualTo(new Result.WaitCancelled(true));
        assertThat(applied.events()).containsExactly(new Event.WaitCancelled(waiter, "a"));
        assertThat(machine.describe("a").orElseThrow().waiters()).isEmpty();
        assertThat(machine.session(waiter).orElseThrow().waiting()).isEmpty();
        assertThat(machine.waiterCount()).isZero();
    }

    @Test
    void cancelWait_afterGrantWonRace_returnsGranted() {
        long holder = open();
        long waiter = open();
        FencingToken old = acquire(holder, "a");
        queue(waiter, "a", "w");
        apply(new Command.Release(holder, HASH, "a", old.value()));

        Applied applied = apply(new Command.CancelWait(waiter, HASH, "a", "w"));

        assertThat(applied.result()).isEqualTo(new Result.Granted(new FencingToken("a", 2)));
        assertThat(machine.describe("a").orElseThrow().holderSessionId()).isEqualTo(waiter);
    }

    /**
     * An acquire whose wait ended leaves nothing queued, as the server drives the state machine: the retry without wait
     * of a queued acquire whose reply was lost is answered Queued (the step itself is unchanged, so log entries replay
     * as before), the server then proposes CancelWait, and the holder's release grants nobody.
     */
    @Test
    void acquire_lostReplyRetryWithoutWaitThenCancelWait_leavesNothingQueuedAndReleaseGrantsNobody() {
        long holder = open();
        long waiter = open();
        FencingToken held = acquire(holder, "a");
        queue(waiter, "a", "w");

        Applied retry = apply(new Command.Acquire(waiter, HASH, "a", "w", false));
        Applied cancel = apply(new Command.CancelWait(waiter, HASH, "a", "w"));
        Applied release = apply(new Command.Release(holder, HASH, "a", held.value()));

        assertThat(retry.result()).isEqualTo(new Result.Queued("a", 0));
        assertThat(cancel.result()).isEqualTo(new Result.WaitCancelled(true));
        assertThat(release.result()).isEqualTo(new Result.Released(held, null));
        assertThat(machine.describe("a").map(LockView::holder)).as("nobody holds a").isEmpty();
        assertThat(machine.session(waiter).orElseThrow().waiting()).isEmpty();
    }

    @Test
    void cancelWait_whenNotWaiting_returnsNotRemoved() {
        long holder = open();
        long other = open();
        acquire(holder, "a");
        byte[] before = snapshot(machine);

        assertThat(apply(new Command.CancelWait(other, HASH, "a", "x")).result())
                .isEqualTo(new Result.WaitCancelled(false));
        assertThat(apply(new Command.CancelWait(other, HASH, "b", "x")).result())
                .isEqualTo(new Result.WaitCancelled(false));
        assertThat(apply(new Command.CancelWait(99, HASH, "a", "x")).result())
                .isEqualTo(new Result.WaitCancelled(false));
        assertThat(snapshot(machine)).isEqualTo(before);
    }

    @Test
    void cancelWait_onDelayedLockWithoutHolder_removesWaitNotGranted() {
        long holder = open();
        long waiter = open();
        acquire(holder, "a");
        queue(waiter, "a", "w");
        apply(new Command.ExpireSession(holder, true));

        assertThat(apply(new Command.CancelWait(0, HASH, "a", "x")).result())
                .isEqualTo(new Result.WaitCancelled(false));
        assertThat(apply(new Command.CancelWait(waiter, HASH, "a", "w")).result())
                .isEqualTo(new Result.WaitCancelled(true));
        assertThat(machine.describe("a").orElseThrow().delayed()).isTrue();
    }
}

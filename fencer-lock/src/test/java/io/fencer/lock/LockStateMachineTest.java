package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.internal.LockName;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.TokenExhaustedException;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lock state machine by example: sessions, acquire and release, secrets, limits, queries and snapshots. */
class LockStateMachineTest extends LockMachineFixture {
    // ---- sessions

    @Test
    void openSession_afterClose_assignsNextIdNeverReused() {
        long first = open();
        long second = open();
        apply(new Command.CloseSession(second, HASH));

        long third = open();

        assertThat(List.of(first, second, third)).containsExactly(1L, 2L, 3L);
        assertThat(machine.sessions()).extracting(SessionView::sessionId).containsExactly(1L, 3L);
    }

    @Test
    void openSession_retryWithSameRequestIdWhileLive_returnsSameSessionWithoutEvent() {
        Applied first = apply(new Command.OpenSession("open-1", TTL_MILLIS, IDENTITY, HASH));

        Applied retry = apply(new Command.OpenSession("open-1", 20_000, IDENTITY, HASH));

        assertThat(first.events()).containsExactly(new Event.SessionOpened(1, TTL_MILLIS, HASH, IDENTITY));
        assertThat(retry.result()).isEqualTo(new Result.SessionOpened(1, TTL_MILLIS));
        assertThat(retry.events()).isEmpty();
        assertThat(machine.sessionCount()).isEqualTo(1);
    }

    @Test
    void openSession_withRequestIdOfEndedSession_opensNewSession() {
        apply(new Command.OpenSession("open-1", TTL_MILLIS, IDENTITY, HASH));
        apply(new Command.CloseSession(1, HASH));

        Applied again = apply(new Command.OpenSession("open-1", TTL_MILLIS, IDENTITY, HASH));

        assertThat(again.result()).isEqualTo(new Result.SessionOpened(2, TTL_MILLIS));
    }

    @Test
    void openSession_withEmptyRequestId_alwaysOpensNewSession() {
        apply(new Command.OpenSession("", TTL_MILLIS, IDENTITY, HASH));

        Applied second = apply(new Command.OpenSession("", TTL_MILLIS, IDENTITY, HASH));

        assertThat(second.result()).isEqualTo(new Result.SessionOpened(2, TTL_MILLIS));
    }

    @Test
    void openSession_withTtlOutsideBounds_isRejectedNamingTtlAndChangesNothing() {
        machine = new LockStateMachine(new Limits(10, 10, 10, 10, 1_000, 60_000));
        byte[] before = snapshot(machine);

        for (long ttlMillis : new long[] {999, 60_001, 0, -1}) {
            Applied applied = apply(new Command.OpenSession("", ttlMillis, IDENTITY, HASH));

            InvalidArgumentException error = rejected(applied, InvalidArgumentException.class);
            assertThat(error.field()).isEqualTo("ttl_millis");
            assertThat(error.value()).isEqualTo(Long.toString(ttlMillis));
            assertThat(applied.events()).isEmpty();
        }
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(apply(new Command.OpenSession("", 1_000, IDENTITY, HASH)).result())
                .isInstanceOf(Result.SessionOpened.class);
        assertThat(apply(new Command.OpenSession("", 60_000, IDENTITY, HASH)).result())
                .isInstanceOf(Result.SessionOpened.class);
    }

    @Test
    void openSession_atSessionsMax_isRejectedNamingLimitAndChangesNothing() {
        machine = new LockStateMachine(new Limits(2, 10, 10, 10, 1_000, 60_000));
        open();
        open();
        byte[] before = snapshot(machine);

        Applied applied = apply(new Command.OpenSession("third", TTL_MILLIS, IDENTITY, HASH));

        LimitExceededException error = rejected(applied, LimitExceededException.class);
        assertThat(error.limit()).isEqualTo("sessionsMax");
        assertThat(error.limitValue()).isEqualTo(2);
        assertThat(error.getMessage()).contains("sessionsMax").contains("2");
        assertThat(snapshot(machine)).isEqualTo(before);
    }

    @Test
    void closeSession_unknown_returnsEmptySessionEndedWithoutEvents() {
        Applied applied = apply(new Command.CloseSession(42, HASH));

        assertThat(applied.result()).isEqualTo(new Result.SessionEnded(42, List.of()));
        assertThat(applied.events()).isEmpty();
    }

    @Test
    void closeSession_releasesHeldInAcquisitionOrderGrantsWaitersThenDropsWaits() {
        long closing = open();
        long other = open();
        FencingToken b = acquire(closing, "b");
        FencingToken a = acquire(closing, "a");
        FencingToken c = acquire(other, "c");
        queue(other, "b", "other-b");
        queue(closing, "c", "closing-c");

        Applied applied = apply(new Command.CloseSession(closing, HASH));

        FencingToken nextB = new FencingToken("b", 2);
        assertThat(applied.result()).isEqualTo(new Result.SessionEnded(closing, List.of(b, a)));
        assertThat(applied.events()).containsExactly(
                new Event.GrantEnded(b, closing, EndCause.SESSION_CLOSED),
                new Event.Granted(other, "other-b", nextB, IDENTITY),
                new Event.GrantEnded(a, closing, EndCause.SESSION_CLOSED),
                new Event.WaitDropped(closing, "c", "closing-c"),
                new Event.SessionEnded(closing, EndCause.SESSION_CLOSED));
        assertThat(machine.session(closing)).isEmpty();
        assertThat(machine.describe("a")).isEmpty();
        assertThat(machine.describe("c").orElseThrow().waiters()).isEmpty();
        assertThat(machine.describe("c").orElseThrow().holder()).isEqualTo(c);
        assertThat(machine.waiterCount()).isZero();
    }

    // ---- acquire

    @Test
    void acquire_unknownSession_isRejectedSessionExpired() {
        Applied applied = apply(new Command.Acquire(7, HASH, "a", "r", true));

        assertThat(rejected(applied, SessionExpiredException.class).sessionId()).isEqualTo(7);
        assertThat(machine.lockCount()).isZero();
    }

    @Test
    void acquire_freeLock_grantsFirstTokenAndReportsEvent() {
        long session = open();

        Applied applied = apply(new Command.Acquire(session, HASH, "orders", "r1", false));

        FencingToken token = new FencingToken("orders", 1);
        assertThat(applied.result()).isEqualTo(new Result.Granted(token));
        assertThat(applied.events()).containsExactly(new Event.Granted(session, "r1", token, IDENTITY));
        assertThat(machine.session(session).orElseThrow().held()).containsExactly("orders");
    }

    @Test
    void acquire_ofCheckedName_issuesTokensOfThatNameWithoutCopyingIt() {
        long session = open();
        LockName orders = LockName.of("orders/é");

        Applied granted = apply(new Command.Acquire(session, HASH, orders, "r1", false));
        Applied again = apply(new Command.Acquire(session, HASH, LockName.of("orders/é"), "r2", false));

        // The very string of the command's name: the machine made the tokens from it, not from a checked copy.
        assertThat(((Result.Granted) granted.result()).token().lock()).isSameAs(orders.value());
        assertThat(((Result.Granted) again.result()).token().lock()).isSameAs(orders.value());
        assertThat(again.result()).isEqualTo(new Result.Granted(new FencingToken("orders/é", 1)));
    }

    @Test
    void acquire_byHolderAgain_returnsSameToken() {
        long session = open();
        FencingToken token = acquire(session, "a");

        Applied again = apply(new Command.Acquire(session, HASH, "a", "retry", false));

        assertThat(again.result()).isEqualTo(new Result.Granted(token));
        assertThat(again.events()).isEmpty();
        assertThat(machine.describe("a").orElseThrow().lastToken()).isEqualTo(token.value());
    }

    @Test
    void acquire_tryOnHeldLock_returnsBusyWithHolderToken() {
        long holder = open();
        long other = open();
        FencingToken token = acquire(holder, "a");

        Applied applied = apply(new Command.Acquire(other, HASH, "a", "try", false));

        assertThat(applied.result()).isEqualTo(new Result.Busy("a", token));
        assertThat(applied.events()).isEmpty();
        assertThat(machine.waiterCount()).isZero();
    }

    @Test
    void acquire_waitOnHeldLock_queuesAtTail() {
        long holder = open();
        long first = open();
        long second = open();
        acquire(holder, "a");

        Applied queuedFirst = apply(new Command.Acquire(first, HASH, "a", "r1", true));
        Applied queuedSecond = apply(new Command.Acquire(second, HASH, "a", "r2", true));

        assertThat(queuedFirst.result()).isEqualTo(new Result.Queued("a", 0));
        assertThat(queuedSecond.result()).isEqualTo(new Result.Queued("a", 1));
        assertThat(queuedFirst.events()).containsExactly(new Event.Queued(first, "a", "r1"));
        assertThat(queuedSecond.events()).containsExactly(new Event.Queued(second, "a", "r2"));
        assertThat(machine.describe("a").orElseThrow().waiters()).containsExactly(
                new LockView.WaiterView(first, "r1"), new LockView.WaiterView(second, "r2"));
        assertThat(machine.waiterCount()).isEqualTo(2);
    }

    @Test
    void acquire_retryWhileQueued_keepsPosition() {
        long holder = open();
        long first = open();
        long second = open();
        acquire(holder, "a");
        queue(first, "a", "r1");
        queue(second, "a", "r2");

        Applied retry = apply(new Command.Acquire(second, HASH, "a", "r2-retry", true));
        Applied tryRetry = apply(new Command.Acquire(first, HASH, "a", "r1-try", false));

        assertThat(retry.result()).isEqualTo(new Result.Queued("a", 1));
        assertThat(tryRetry.result()).isEqualTo(new Result.Queued("a", 0));
        assertThat(retry.events()).isEmpty(); // a watcher sees each session queue once
        assertThat(tryRetry.events()).isEmpty();
        assertThat(machine.describe("a").orElseThrow().waiters()).containsExactly(
                new LockView.WaiterView(first, "r1"), new LockView.WaiterView(second, "r2"));
    }

    @Test
    void release_withWaiters_grantsWaitersInFifoOrder() {
        long holder = open();
        long first = open();
        long second = open();
        long third = open();
        FencingToken token = acquire(holder, "a");
        queue(second, "a", "r2");
        queue(first, "a", "r1");
        queue(third, "a", "r3");

        List<Long> grantedSessions = new java.util.ArrayList<>();
        long holding = holder;
        for (int i = 0; i < 3; i++) {
            Applied applied = apply(new Command.Release(holding, HASH, "a", token.value()));
            Event.Granted granted = (Event.Granted) applied.events().get(1);
            grantedSessions.add(granted.sessionId());
            holding = granted.sessionId();
            token = granted.token();
        }

        assertThat(grantedSessions).containsExactly(second, first, third);
        assertThat(token.value()).isEqualTo(4);
    }

    @Test
    void release_thenAcquire_grantsHigherToken() {
        long first = open();
        long second = open();
        FencingToken old = acquire(first, "a");
        Applied released = apply(new Command.Release(first, HASH, "a", old.value()));

        FencingToken next = acquire(second, "a");

        assertThat(released.result()).isEqualTo(new Result.Released(old, null));
        assertThat(released.events()).containsExactly(new Event.GrantEnded(old, first, EndCause.RELEASED));
        assertThat(next.value()).isGreaterThan(old.value());
    }

    @Test
    void release_withWaiter_reportsEndThenGrantWithWaiterRequestId() {
        long holder = open();
        long waiter = open();
        FencingToken token = acquire(holder, "a");
        queue(waiter, "a", "waiting-request");

        Applied applied = apply(new Command.Release(holder, HASH, "a", token.value()));

        FencingToken next = new FencingToken("a", 2);
        assertThat(applied.result()).isEqualTo(new Result.Released(token, next));
        assertThat(applied.events()).containsExactly(
                new Event.GrantEnded(token, holder, EndCause.RELEASED),
                new Event.Granted(waiter, "waiting-request", next, IDENTITY));
        assertThat(machine.session(waiter).orElseThrow().held()).containsExactly("a");
        assertThat(machine.session(waiter).orElseThrow().waiting()).isEmpty();
    }

    @Test
    void release_withStaleToken_isRejectedAndChangesNothing() {
        long first = open();
        long second = open();
        FencingToken old = acquire(first, "a");
        queue(second, "a", "r2");
        apply(new Command.Release(first, HASH, "a", old.value()));
        byte[] before = snapshot(machine);

        Applied stale = apply(new Command.Release(first, HASH, "a", old.value()));

        NotHolderException error = rejected(stale, NotHolderException.class);
        assertThat(error.lock()).isEqualTo("a");
        assertThat(error.presented()).isEqualTo(old.value());
        assertThat(error.current()).isEqualTo(2);
        assertThat(stale.events()).isEmpty();
        assertThat(snapshot(machine)).isEqualTo(before);
    }

    @Test
    void release_unknownLockOrNeverIssuedToken_isRejectedWithCurrentNone() {
        long session = open();
        acquire(session, "a");

        NotHolderException unknown = rejected(apply(new Command.Release(session, HASH, "nothing", 1)),
                NotHolderException.class);
        NotHolderException future = rejected(apply(new Command.Release(session, HASH, "a", 99)),
                NotHolderException.class);

        assertThat(unknown.current()).isEqualTo(FencingToken.NONE);
        assertThat(future.current()).isEqualTo(1);
        assertThat(machine.describe("a").orElseThrow().holderSessionId()).isEqualTo(session);
    }

    @Test
    void acquire_whenLockRecordDroppedAndRecreated_tokenExceedsOld() {
        long session = open();
        FencingToken first = acquire(session, "a");
        apply(new Command.Release(session, HASH, "a", first.value()));
        assertThat(machine.describe("a")).isEmpty();
        assertThat(machine.floor()).isEqualTo(first.value());
        FencingToken other = acquire(session, "b");
        apply(new Command.Release(session, HASH, "b", other.value()));

        FencingToken recreated = acquire(session, "a");

        assertThat(recreated.value()).isGreaterThan(first.value()).isGreaterThan(other.value());
        assertThat(recreated.value()).isEqualTo(3);
        assertThat(machine.describe("a").orElseThrow().lastEnd()).isNull();
    }

    // ---- session secrets

    @Test
    void acquire_withAnotherSessionsOrNoMatchingSecret_isRejectedUnauthenticatedNamingTheSessionAndChangesNothing() {
        long victim = open();
        long attacker = open(IDENTITY, SecretHash.of("the attacker's own secret"));
        acquire(victim, "a");
        byte[] before = snapshot(machine);

        Applied withOwnSecret = apply(new Command.Acquire(victim, SecretHash.of("the attacker's own secret"), "a",
                "steal", false));
        Applied withGuess = apply(new Command.Acquire(victim, SecretHash.of(""), "b", "guess", true));

        for (Applied applied : List.of(withOwnSecret, withGuess)) {
            SessionUnauthenticatedException error = rejected(applied, SessionUnauthenticatedException.class);
            assertThat(error.sessionId()).isEqualTo(victim);
            assertThat(error.getMessage()).contains("session " + victim);
        }
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(machine.session(attacker).orElseThrow().held()).isEmpty();
    }

    @Test
    void release_byAnotherSessionWithItsOwnSecret_isRejectedNotHolderNamingThatSessionAndTheHolderKeepsTheLock() {
        long holder = open();
        SecretHash attackerHash = SecretHash.of("attacker");
        long attacker = open(IDENTITY, attackerHash);
        FencingToken token = acquire(holder, "a");
        byte[] before = snapshot(machine);

        Applied byOther = apply(new Command.Release(attacker, attackerHash, "a", token.value()));
        Applied withWrongSecret = apply(new Command.Release(holder, attackerHash, "a", token.value()));

        NotHolderException notHolder = rejected(byOther, NotHolderException.class);
        assertThat(notHolder.sessionId()).isEqualTo(attacker);
        assertThat(notHolder.presented()).isEqualTo(token.value());
        assertThat(notHolder.current()).isEqualTo(token.value());
        assertThat(notHolder).hasMessageContaining("not held by session " + attacker);
        assertThat(rejected(withWrongSecret, SessionUnauthenticatedException.class).sessionId()).isEqualTo(holder);
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(apply(new Command.Release(holder, HASH, "a", token.value())).result())
                .isEqualTo(new Result.Released(token, null));
    }

    @Test
    void release_bySessionThatEnded_isRejectedSessionExpired() {
        long holder = open();
        FencingToken token = acquire(holder, "a");
        apply(new Command.ExpireSession(holder, false));

        Applied applied = apply(new Command.Release(holder, HASH, "a", token.value()));

        assertThat(rejected(applied, SessionExpiredException.class).sessionId()).isEqualTo(holder);
    }

    @Test
    void closeSessionAndCancelWait_withWrongSecret_areRejectedAndKeepLocksAndWaits() {
        long holder = open();
        long waiter = open();
        acquire(holder, "a");
        queue(waiter, "a", "w");
        byte[] before = snapshot(machine);
        SecretHash wrong = SecretHash.of("wrong");

        Applied close = apply(new Command.CloseSession(holder, wrong));
        Applied cancel = apply(new Command.CancelWait(waiter, wrong, "a", "w"));

        assertThat(rejected(close, SessionUnauthenticatedException.class).sessionId()).isEqualTo(holder);
        assertThat(rejected(cancel, SessionUnauthenticatedException.class).sessionId()).isEqualTo(waiter);
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(machine.describe("a").orElseThrow().waiters()).containsExactly(new LockView.WaiterView(waiter, "w"));
    }

    @Test
    void openSession_retryFromAnotherIdentityOrWithAnotherSecretHash_isRejectedAndLeavesTheSession() {
        Applied opened = apply(new Command.OpenSession("open-1", TTL_MILLIS, "alice", HASH));
        byte[] before = snapshot(machine);

        Applied otherIdentity = apply(new Command.OpenSession("open-1", TTL_MILLIS, "mallory", HASH));
        Applied otherSecret = apply(new Command.OpenSession("open-1", TTL_MILLIS, "alice", SecretHash.of("new")));
        Applied sameAgain = apply(new Command.OpenSession("open-1", TTL_MILLIS, "alice", HASH));

        assertThat(opened.result()).isEqualTo(new Result.SessionOpened(1, TTL_MILLIS));
        assertThat(rejected(otherIdentity, SessionUnauthenticatedException.class))
                .hasMessageContaining("another identity").satisfies(e -> assertThat(e.sessionId()).isEqualTo(1));
        assertThat(rejected(otherSecret, SessionUnauthenticatedException.class))
                .hasMessageContaining("not handed out again").satisfies(e -> assertThat(e.sessionId()).isEqualTo(1));
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(sameAgain.result()).isEqualTo(new Result.SessionOpened(1, TTL_MILLIS));
    }

    @Test
    void describeAndValidate_ofHeldLock_showTheIdentityThatOpenedTheHoldersSession() {
        long alice = open("alice", HASH);
        long bob = open("bob", HASH);
        FencingToken token = acquire(alice, "a");
        queue(bob, "a", "w");

        LockView view = machine.describe("a").orElseThrow();
        Validation validation = machine.validate(token);

        assertThat(view.holderIdentity()).isEqualTo("alice");
        assertThat(validation.holderIdentity()).isEqualTo("alice");
        assertThat(machine.list("", 10)).extracting(LockView::holderIdentity).containsExactly("alice");
        assertThat(machine.session(bob).orElseThrow().identity()).isEqualTo("bob");
        apply(new Command.CloseSession(alice, HASH));
        assertThat(machine.describe("a").orElseThrow().holderIdentity()).isEqualTo("bob");
    }

    @Test
    void writeSnapshot_keepsTheSecretHashNeverTheSecret() throws IOException {
        String secret = "a secret only the leader ever saw";
        long session = open("alice", SecretHash.of(secret));

        byte[] bytes = snapshot(machine);

        assertThat(new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1)).doesNotContain(secret)
                .contains("alice");
        LockStateMachine restored = restore(bytes);
        assertThat(restored.session(session).orElseThrow().secretHash()).isEqualTo(SecretHash.of(secret));
        assertThat(restored.apply(new Command.Acquire(session, SecretHash.of(secret), "a", "r", false)).result())
                .isInstanceOf(Result.Granted.class);
    }

    // ---- limits

    @Test
    void acquire_atLocksMax_isRejectedNamingLimitAndChangesNothing() {
        machine = new LockStateMachine(new Limits(10, 2, 10, 10, 1_000, 60_000));
        long session = open();
        acquire(session, "a");
        acquire(session, "b");
        byte[] before = snapshot(machine);

        Applied applied = apply(new Command.Acquire(session, HASH, "c", "r", true));

        LimitExceededException error = rejected(applied, LimitExceededException.class);
        assertThat(error.limit()).isEqualTo("locksMax");
        assertThat(error.limitValue()).isEqualTo(2);
        assertThat(error.getMessage()).contains("locksMax").contains("2");
        assertThat(snapshot(machine)).isEqualTo(before);
    }

    @Test
    void acquire_atWaitersPerLockMax_isRejectedNamingLimitAndChangesNothing() {
        machine = new LockStateMachine(new Limits(10, 10, 1, 10, 1_000, 60_000));
        long holder = open();
        long first = open();
        long second = open();
        acquire(holder, "a");
        queue(first, "a", "r1");
        byte[] before = snapshot(machine);

        Applied applied = apply(new Command.Acquire(second, HASH, "a", "r2", true));

        LimitExceededException error = rejected(applied, LimitExceededException.class);
        assertThat(error.limit()).isEqualTo("waitersPerLockMax");
        assertThat(error.limitValue()).isEqualTo(1);
        assertThat(error.getMessage()).contains("waitersPerLockMax").contains("1");
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(apply(new Command.Acquire(second, HASH, "a", "r2", false)).result()).isInstanceOf(Result.Busy.class);
    }

    @Test
    void acquire_atLocksPerSessionMax_isRejectedForQueueAndGrantAndChangesNothing() {
        machine = new LockStateMachine(new Limits(10, 10, 10, 2, 1_000, 60_000));
        long holder = open();
        long session = open();
        acquire(holder, "x");
        acquire(session, "a");
        queue(session, "x", "wait-x");
        acquire(holder, "y");
        byte[] before = snapshot(machine);

        Applied queueing = apply(new Command.Acquire(session, HASH, "y", "r", true));
        Applied granting = apply(new Command.Acquire(session, HASH, "b", "r", true));

        for (Applied applied : List.of(queueing, granting)) {
            LimitExceededException error = rejected(applied, LimitExceededException.class);
            assertThat(error.limit()).isEqualTo("locksPerSessionMax");
            assertThat(error.limitValue()).isEqualTo(2);
            assertThat(error.getMessage()).contains("locksPerSessionMax").contains("2");
        }
        assertThat(snapshot(machine)).isEqualTo(before);
        assertThat(apply(new Command.Acquire(session, HASH, "a", "again", true)).result())
                .isEqualTo(new Result.Granted(new FencingToken("a", 1)));
    }

    @Test
    void acquire_atTokenMax_isRejectedTokenExhaustedAndChangesNothing() {
        machine = LockStateMachine.withFloor(Limits.DEFAULT, FencingToken.VALUE_MAX - 1);
        long holder = open();
        long other = open();
        FencingToken last = acquire(holder, "a");
        assertThat(last.value()).isEqualTo(FencingToken.VALUE_MAX);
        byte[] held = snapshot(machine);

        Applied queueing = apply(new Command.Acquire(other, HASH, "a", "w", true));
        assertThat(rejected(queueing, TokenExhaustedException.class).lock()).isEqualTo("a");
        assertThat(snapshot(machine)).isEqualTo(held);

        apply(new Command.Release(holder, HASH, "a", last.value()));
        assertThat(machine.floor()).isEqualTo(FencingToken.VALUE_MAX);
        byte[] free = snapshot(machine);
        Applied recreate = apply(new Command.Acquire(other, HASH, "a", "r", false));
        Applied otherLock = apply(new Command.Acquire(other, HASH, "b", "r", false));

        assertThat(rejected(recreate, TokenExhaustedException.class).getMessage())
                .contains(Long.toString(FencingToken.VALUE_MAX));
        assertThat(rejected(otherLock, TokenExhaustedException.class).lock()).isEqualTo("b");
        assertThat(snapshot(machine)).isEqualTo(free);
    }

    // ---- queries

    @Test
    void validate_reportsCurrentSupersededEndedAndNeverIssued() {
        long first = open();
        long second = open();
        FencingToken old = acquire(first, "a");
        queue(second, "a", "w");
        apply(new Command.Release(first, HASH, "a", old.value()));
        FencingToken current = new FencingToken("a", 2);

        assertThat(machine.validate(current))
                .isEqualTo(new Validation(Validation.Status.CURRENT, 2, second, IDENTITY, null));
        assertThat(machine.validate(old))
                .isEqualTo(new Validation(Validation.Status.SUPERSEDED, 2, 0, null, null));
        assertThat(machine.validate(new FencingToken("a", 3)))
                .isEqualTo(new Validation(Validation.Status.NEVER_ISSUED, 2, 0, null, null));

        apply(new Command.ExpireSession(second, true));
        assertThat(machine.validate(current))
                .isEqualTo(new Validation(Validation.Status.ENDED, 2, 0, null, EndCause.SESSION_EXPIRED));

        apply(new Command.EndLockDelay("a"));
        assertThat(machine.validate(current)).isEqualTo(new Validation(Validation.Status.ENDED, 2, 0, null, null));
        assertThat(machine.validate(new FencingToken("never", 1)))
                .isEqualTo(new Validation(Validation.Status.SUPERSEDED, 2, 0, null, null));
        assertThat(machine.validate(new FencingToken("never", 3)).status())
                .isEqualTo(Validation.Status.NEVER_ISSUED);
    }

    @Test
    void list_withPrefixAndLimit_returnsLocksInNameOrder() {
        long session = open();
        for (String name : List.of("orders/2", "users/1", "orders/10", "orders/1", "ordersX")) {
            acquire(session, name);
        }

        assertThat(machine.list("orders/", 10)).extracting(LockView::lock)
                .containsExactly("orders/1", "orders/10", "orders/2");
        assertThat(machine.list("orders", 2)).extracting(LockView::lock).containsExactly("orders/1", "orders/10");
        assertThat(machine.list("", 100)).hasSize(5);
        assertThat(machine.list("zzz", 100)).isEmpty();
        assertThatThrownBy(() -> machine.list("", -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void list_afterAName_startsPastItWithinThePrefixAndSaysWhetherMoreFollow() {
        long session = open();
        for (String name : List.of("orders", "orders/1", "orders/2", "orders/3", "users/1")) {
            acquire(session, name);
        }
        List<String> seen = new java.util.ArrayList<>();

        boolean more = machine.list("orders/", "orders/1", Integer.MAX_VALUE, view -> seen.add(view.lock()));

        assertThat(seen).containsExactly("orders/2", "orders/3");
        assertThat(more).as("users/1 does not match the prefix").isFalse();
        seen.clear();
        assertThat(machine.list("orders", "orders", Integer.MAX_VALUE, view -> seen.add(view.lock())))
                .as("the visitor took all").isFalse();
        assertThat(seen).as("a name equal to start_after is past").containsExactly("orders/1", "orders/2", "orders/3");
        seen.clear();
        assertThat(machine.list("orders/", "a", Integer.MAX_VALUE, view -> seen.add(view.lock()) && seen.size() < 2))
                .as("orders/3 follows the two taken").isTrue();
        assertThat(seen).as("a start before the prefix starts at it").containsExactly("orders/1", "orders/2");
        assertThat(machine.list("orders/", "orders/3", 1, view -> false)).isFalse();
        assertThatThrownBy(() -> machine.list("", "", 0, view -> true)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void describe_queuesLongerThanShown_showsTheFirstAndCountsAll() {
        long holder = open();
        FencingToken held = acquire(holder, "q");
        for (int i = 0; i < 5; i++) {
            queue(open(), "q", "wait-" + i);
        }
        long firstReader = open();
        FencingToken earliest = apply(new Command.Acquire(firstReader, HASH, "r", "read-0", false,
                io.fencer.core.LockMode.SHARED)).result() instanceof Result.Granted granted ? granted.token() : null;
        for (int i = 1; i < 4; i++) {
            apply(new Command.Acquire(open(), HASH, "r", "read-" + i, false, io.fencer.core.LockMode.SHARED));
        }

        LockView queue = machine.describe("q", 2).orElseThrow();
        LockView readers = machine.describe("r", 2).orElseThrow();

        assertThat(queue.holder()).isEqualTo(held);
        assertThat(queue.waiters()).extracting(LockView.WaiterView::requestId).containsExactly("wait-0", "wait-1");
        assertThat(queue.waitersTotal()).isEqualTo(5);
        assertThat(readers.sharedHolders()).hasSize(2);
        assertThat(readers.sharedHolders().get(0).token()).isEqualTo(earliest);
        assertThat(readers.sharedHoldersTotal()).isEqualTo(4);
        assertThat(machine.describe("q").orElseThrow().waiters()).as("shown whole").hasSize(5);
        assertThatThrownBy(() -> machine.describe("q", 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void queries_reportSessionsDelayedLocksAndCounters() {
        long first = open();
        long second = open();
        acquire(first, "b");
        acquire(first, "a");
        queue(second, "a", "w");
        acquire(second, "c");
        apply(new Command.ExpireSession(first, true));

        assertThat(machine.sessions()).containsExactly(new SessionView(second, TTL_MILLIS, IDENTITY, HASH, List.of("c"),
                List.of("a")));
        assertThat(machine.delayedLocks()).containsExactly("a", "b");
        assertThat(machine.sessionCount()).isEqualTo(1);
        assertThat(machine.lockCount()).isEqualTo(3);
        assertThat(machine.waiterCount()).isEqualTo(1);
        assertThat(machine.limits()).isEqualTo(Limits.DEFAULT);
    }

    // ---- snapshot

    @Test
    void readSnapshot_ofBusyState_restoresMachineThatBehavesIdentically() throws IOException {
        long first = open();
        long second = apply(new Command.OpenSession("req-2", 5_000, IDENTITY, HASH)).result()
                instanceof Result.SessionOpened opened
                ? opened.sessionId() : -1;
        long third = open();
        acquire(first, "b");
        acquire(first, "a");
        queue(second, "a", "w2");
        queue(third, "a", "w3");
        acquire(second, "c");
        queue(first, "c", "w1");
        apply(new Command.ExpireSession(second, true));
        acquire(third, "gone");
        apply(new Command.Release(third, HASH, "gone", machine.describe("gone").orElseThrow().lastToken()));

        LockStateMachine restored = restore(snapshot(machine));

        assertThat(snapshot(restored)).isEqualTo(snapshot(machine));
        assertThat(restored.sessions()).isEqualTo(machine.sessions());
        assertThat(restored.list("", 100)).isEqualTo(machine.list("", 100));
        assertThat(restored.floor()).isEqualTo(machine.floor());
        assertThat(restored.waiterCount()).isEqualTo(machine.waiterCount());
        assertThat(restored.delayedLocks()).isEqualTo(machine.delayedLocks());
        List<Command> next = List.of(new Command.OpenSession("", TTL_MILLIS, IDENTITY, HASH),
                new Command.OpenSession("req-2", 9_000, IDENTITY, HASH),
                new Command.EndLockDelay("c"), new Command.CloseSession(first, HASH),
                new Command.Acquire(third, HASH, "d", "r", true),
                new Command.Acquire(4, HASH, "b", "r", true), new Command.ExpireSession(third, false));
        for (Command command : next) {
            assertThat(restored.apply(command)).isEqualTo(machine.apply(command));
            restored.checkInvariants();
        }
    }

    @Test
    void readSnapshot_ofCorruptBytes_failsWithIoException() {
        long holder = open();
        acquire(holder, "a");
        byte[] bytes = snapshot(machine);

        byte[] badVersion = bytes.clone();
        badVersion[0] = 9;
        byte[] orphanHolder = bytes.clone();
        // The session's id sits after version, last id and floor, and the session count.
        orphanHolder[1 + 8 + 8 + 4 + 7] = 5;

        assertThatThrownBy(() -> restore(badVersion)).isInstanceOf(IOException.class).hasMessageContaining("version");
        assertThatThrownBy(() -> restore(orphanHolder)).isInstanceOf(IOException.class)
                .hasMessageContaining("invariant");
        assertThatThrownBy(() -> restore(java.util.Arrays.copyOf(bytes, bytes.length - 3)))
                .isInstanceOf(IOException.class);
    }

    @Test
    void checkInvariants_onConsistentState_passesAndCounterSurvivesSnapshot() throws IOException {
        open();
        open();
        apply(new Command.CloseSession(2, HASH));

        LockStateMachine restored = restore(snapshot(machine));

        assertThat(restored.apply(new Command.OpenSession("", TTL_MILLIS, IDENTITY, HASH)).result())
                .isEqualTo(new Result.SessionOpened(3, TTL_MILLIS));
    }

    /**
     * The question a peer asks before answering a release early: only a release that must succeed as the state stands
     * and grants nobody says yes, and asking changes nothing.
     */
    @Test
    void releasesAlone_onlyTheHoldersRightTokenWithNobodyWaiting_saysYesAndChangesNothing() {
        long holder = open();
        long other = open();
        FencingToken token = acquire(holder, "orders");
        FencingToken waited = acquire(holder, "invoices");
        queue(other, "invoices", "wait-invoices");
        byte[] before = snapshot(machine);

        assertThat(machine.releasesAlone(new Command.Release(holder, HASH, "orders", token.value()))).isTrue();
        assertThat(machine.releasesAlone(new Command.Release(holder, HASH, "orders", token.value() - 1)))
                .as("another token").isFalse();
        assertThat(machine.releasesAlone(new Command.Release(other, HASH, "orders", token.value())))
                .as("another session").isFalse();
        assertThat(machine.releasesAlone(new Command.Release(holder, SecretHash.of("a wrong secret"), "orders",
                token.value()))).as("a wrong secret").isFalse();
        assertThat(machine.releasesAlone(new Command.Release(holder, SecretHash.NOT_CARRIED, "orders",
                token.value()))).as("a version-1 release, without a secret").isFalse();
        assertThat(machine.releasesAlone(new Command.Release(holder, HASH, "invoices", waited.value())))
                .as("a release that grants a waiter").isFalse();
        assertThat(machine.releasesAlone(new Command.Release(holder, HASH, "unknown", 1))).as("no such lock")
                .isFalse();
        assertThat(machine.releasesAlone(new Command.Release(999, HASH, "orders", token.value())))
                .as("no such session").isFalse();
        assertThat(snapshot(machine)).as("the state").isEqualTo(before);
        assertThat(apply(new Command.Release(holder, HASH, "orders", token.value())).result())
                .as("the release it vouched for").isEqualTo(new Result.Released(token, null));
    }
}

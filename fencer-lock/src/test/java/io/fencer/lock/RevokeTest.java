package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.NotHolderException;
import io.fencer.core.internal.LockName;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** An operator's revoke of a grant: the command, its refusals, its format level, its codecs. */
class RevokeTest {
    private static final SecretHash HASH = SecretHash.of("the revoke tests' secret");
    private static final Limits LIMITS = new Limits(10, 10, 10, 10, 1_000, 60_000);
    private static final String OPERATOR = "ops";

    private LockStateMachine machine;

    @BeforeEach
    void levelFive() {
        machine = new LockStateMachine(LIMITS);
        machine.apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL_REVOKE));
        for (int i = 1; i <= 3; i++) {
            machine.apply(new Command.OpenSession("s-" + i, 10_000, "client-" + i, HASH));
        }
    }

    @Test
    void revoke_heldWithWaiters_grantsTheNextWaiterInFifoOrderAHigherTokenAndKeepsTheHoldersSession() {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", true)));
        machine.apply(new Command.Acquire(2, HASH, "orders", "a2", true));
        machine.apply(new Command.Acquire(3, HASH, "orders", "a3", true));

        Applied revoked = machine.apply(revoke("orders", held.value(), false));

        Result.Revoked result = (Result.Revoked) revoked.result();
        assertThat(result.revoked()).isEqualTo(held);
        assertThat(result.sessionId()).isEqualTo(1);
        assertThat(result.next().value()).isGreaterThan(held.value());
        LockView view = machine.describe("orders").orElseThrow();
        assertThat(view.holderSessionId()).isEqualTo(2);
        assertThat(view.holder()).isEqualTo(result.next());
        assertThat(view.waiters()).extracting(LockView.WaiterView::sessionId).containsExactly(3L);
        assertThat(revoked.events()).containsSubsequence(
                new Event.GrantEnded(held, 1, EndCause.REVOKED),
                new Event.Revoked(held, 1, OPERATOR),
                new Event.Granted(2, "a2", result.next(), "client-2"));
        assertThat(machine.session(1)).isPresent();
        assertThat(machine.validate(held).status()).isEqualTo(Validation.Status.SUPERSEDED);
        machine.checkInvariants();
    }

    @Test
    void revoke_anyTokenWithoutWaiter_freesTheLockAndValidateSaysEndedAndTheNextGrantIsHigher() {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));

        Applied revoked = machine.apply(revoke("orders", FencingToken.NONE, false));
        int records = machine.lockCount();
        Validation validation = machine.validate(held);
        FencingToken again = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a2", false)));

        assertThat(((Result.Revoked) revoked.result()).next()).isNull();
        assertThat(validation.status()).isEqualTo(Validation.Status.ENDED);
        // The idle record is dropped, as after a release, and its end cause with it: ENDED is what is known.
        assertThat(records).isZero();
        assertThat(again.value()).isGreaterThan(held.value());
        machine.checkInvariants();
    }

    @Test
    void revoke_withLockDelay_keepsTheLockFromTheWaiterUntilEndLockDelay() {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));
        machine.apply(new Command.Acquire(2, HASH, "orders", "a2", true));

        Applied revoked = machine.apply(revoke("orders", held.value(), true));
        LockView delayed = machine.describe("orders").orElseThrow();
        Applied ended = machine.apply(new Command.EndLockDelay("orders"));

        assertThat(((Result.Revoked) revoked.result()).next()).isNull();
        assertThat(revoked.events()).contains(new Event.LockDelayStarted("orders"));
        assertThat(delayed.delayed()).isTrue();
        assertThat(delayed.holder()).isNull();
        FencingToken next = ((Result.DelayEnded) ended.result()).next();
        assertThat(next.value()).isGreaterThan(held.value());
        assertThat(machine.describe("orders").orElseThrow().holderSessionId()).isEqualTo(2);
        machine.checkInvariants();
    }

    @Test
    void revoke_freeOrUnknownLock_isRejectedNotHolderNamingTheLockAndChangesNothing() {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));
        machine.apply(new Command.Release(1, HASH, "orders", held.value()));
        long floor = machine.floor();

        Applied released = machine.apply(revoke("orders", FencingToken.NONE, false));
        Applied unknown = machine.apply(revoke("never-used", FencingToken.NONE, false));

        assertThat(((Result.Rejected) released.result()).error()).isInstanceOf(NotHolderException.class)
                .hasMessageContaining("lock 'orders'").hasMessageContaining("the lock is free")
                .hasMessageContaining("nothing to revoke");
        assertThat(((Result.Rejected) unknown.result()).error()).hasMessageContaining("lock 'never-used'");
        assertThat(released.events()).isEmpty();
        assertThat(unknown.events()).isEmpty();
        assertThat(machine.floor()).isEqualTo(floor);
        assertThat(machine.lockCount()).isZero();
    }

    @Test
    void revoke_ofAnotherTokenThanTheHolders_isRejectedNotHolderAndTheHolderKeepsTheLock() {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));

        Applied stale = machine.apply(revoke("orders", held.value() + 1, false));

        NotHolderException error = (NotHolderException) ((Result.Rejected) stale.result()).error();
        assertThat(error.current()).isEqualTo(held.value());
        assertThat(error.presented()).isEqualTo(held.value() + 1);
        assertThat(stale.events()).isEmpty();
        assertThat(machine.describe("orders").orElseThrow().holder()).isEqualTo(held);
    }

    @Test
    void revoke_sharedLock_isRejectedInvalidArgumentAndTheReadersKeepIt() {
        machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false, LockMode.SHARED));
        machine.apply(new Command.Acquire(2, HASH, "orders", "a2", false, LockMode.SHARED));

        Applied shared = machine.apply(revoke("orders", FencingToken.NONE, false));

        assertThat(((Result.Rejected) shared.result()).error()).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("shared mode by 2 sessions");
        assertThat(machine.describe("orders").orElseThrow().sharedHolders()).hasSize(2);
    }

    @Test
    void revoke_permitSlot_passesThePermitToTheSemaphoresNextWaiter() {
        FencingToken permit = granted(machine.apply(new Command.AcquirePermit(1, HASH, "jobs", 1, "p1", false)));
        machine.apply(new Command.AcquirePermit(2, HASH, "jobs", 1, "p2", true));

        Applied revoked = machine.apply(revoke(permit.lock(), permit.value(), false));

        FencingToken next = ((Result.Revoked) revoked.result()).next();
        assertThat(next.lock()).isEqualTo(permit.lock());
        assertThat(next.value()).isGreaterThan(permit.value());
        assertThat(machine.describe(permit.lock()).orElseThrow().holderSessionId()).isEqualTo(2);
        machine.checkInvariants();
    }

    @Test
    void revoke_belowFormatLevelFive_isRejectedNamingTheLevelAndChangesNothing() {
        LockStateMachine previous = new LockStateMachine(LIMITS);
        previous.apply(new Command.OpenSession("s-1", 10_000, "client-1", HASH));
        FencingToken held = granted(previous.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));

        Applied refused = previous.apply(revoke("orders", held.value(), false));

        assertThat(((Result.Rejected) refused.result()).error()).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("format level 4").hasMessageContaining("needs 5");
        assertThat(previous.describe("orders").orElseThrow().holder()).isEqualTo(held);
    }

    @Test
    void encodeCommands_revoke_writesVersionFiveAndDecodesEqual() {
        List<Command> batch = List.of(revoke("orders", 7, true), revoke("b", FencingToken.NONE, false));

        byte[] bytes = CommandCodec.encodeCommands(batch);

        assertThat(bytes[0]).isEqualTo((byte) CommandCodec.VERSION);
        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(batch);
    }

    @Test
    void decodeCommands_revokeInVersionFourBatch_refused() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(revoke("orders", 7, false)));
        bytes[0] = (byte) CommandCodec.VERSION_FOUR;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("command tag 14 is not in version 4");
    }

    @Test
    void encodeResults_revoked_decodesEqual() {
        FencingToken revoked = FencingToken.of(LockName.of("orders"), 7);
        List<Result> results = List.of(new Result.Revoked(revoked, 3, FencingToken.of(LockName.of("orders"), 8)),
                new Result.Revoked(revoked, 4, null));

        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(results))).isEqualTo(results);
    }

    @Test
    void writeSnapshot_afterRevoke_keepsTheEndCauseAndReadsEqual() throws IOException {
        FencingToken held = granted(machine.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));
        machine.apply(new Command.Acquire(2, HASH, "other", "o1", true)); // keeps a record beside
        machine.apply(new Command.Acquire(1, HASH, "kept", "k1", false));
        machine.apply(new Command.Acquire(2, HASH, "kept", "k2", true));
        machine.apply(revoke("kept", FencingToken.NONE, true)); // delayed: its record stays, lastEnd REVOKED

        byte[] bytes = LockMachineFixture.snapshot(machine);
        LockStateMachine read = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(bytes)),
                LIMITS);

        assertThat(read.describe("kept").orElseThrow().lastEnd()).isEqualTo(EndCause.REVOKED);
        assertThat(read.describe("orders").orElseThrow().holder()).isEqualTo(held);
        assertThat(LockMachineFixture.snapshot(read)).isEqualTo(bytes);
    }

    @Test
    void revoke_withNegativeTokenOrBadIdentity_refusedAtConstruction() {
        assertThatThrownBy(() -> new Command.Revoke(LockName.of("a"), -1, OPERATOR, false))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("token -1");
        assertThatThrownBy(() -> new Command.Revoke(LockName.of("a"), 0, "", false))
                .isInstanceOf(InvalidArgumentException.class);
    }

    private static Command.Revoke revoke(String lock, long token, boolean lockDelay) {
        return new Command.Revoke(LockName.of(lock), token, OPERATOR, lockDelay);
    }

    private static FencingToken granted(Applied applied) {
        return ((Result.Granted) applied.result()).token();
    }
}

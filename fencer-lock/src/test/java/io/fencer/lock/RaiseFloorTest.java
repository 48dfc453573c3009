package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.TokenExhaustedException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The leader's lift of the floor: what it raises the floor to, its bound, its format level, its codecs. */
class RaiseFloorTest {
    private static final SecretHash HASH = SecretHash.of("the raise floor tests' secret");
    private static final Limits LIMITS = new Limits(10, 10, 10, 10, 1_000, 60_000);
    private static final long LAST = FencingToken.generationLast(0);

    /** A machine at format level 5 whose next token is {@code floor + 1}, with {@code sessions} open. */
    private static LockStateMachine levelFive(long floor, int sessions) {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, floor);
        apply(machine, new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL_RAISE_FLOOR));
        for (int session = 1; session <= sessions; session++) {
            apply(machine, new Command.OpenSession("s-" + session, 10_000, "client-" + session, HASH));
        }
        return machine;
    }

    private static Applied apply(LockStateMachine machine, Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        return applied;
    }

    private static FencingToken granted(Applied applied) {
        assertThat(applied.result()).isInstanceOf(Result.Granted.class);
        return ((Result.Granted) applied.result()).token();
    }

    @Test
    void raiseFloor_heldLockAtSevenGapEight_floorFifteenAndTheNextGrantOfItAndOfANewLockIsSixteen() {
        LockStateMachine machine = levelFive(6, 2);
        FencingToken held = granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a1", true)));
        apply(machine, new Command.Acquire(2, HASH, "orders", "a2", true));

        Applied raised = apply(machine, new Command.RaiseFloor(8));
        Result.Released released = (Result.Released) apply(machine,
                new Command.Release(1, HASH, "orders", held.value())).result();
        FencingToken fresh = granted(apply(machine, new Command.Acquire(1, HASH, "fresh", "f1", false)));

        assertThat(held.value()).isEqualTo(7);
        assertThat(raised.result()).isEqualTo(new Result.FloorRaised(15));
        assertThat(raised.events()).isEmpty();
        assertThat(machine.floor()).isEqualTo(15);
        assertThat(released.next().value()).isEqualTo(16);
        assertThat(fresh.value()).isEqualTo(16);
    }

    @Test
    void raiseFloor_droppedLocksTokenFoldedIntoTheFloor_countsAsIssued() {
        LockStateMachine machine = levelFive(19, 1);
        FencingToken dropped = granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a1", false)));
        apply(machine, new Command.Release(1, HASH, "orders", dropped.value()));

        Applied raised = apply(machine, new Command.RaiseFloor(3));
        FencingToken again = granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a2", false)));

        assertThat(dropped.value()).isEqualTo(20);
        assertThat(machine.lockCount()).isEqualTo(1); // the record was dropped before the raise, recreated after
        assertThat(raised.result()).isEqualTo(new Result.FloorRaised(23));
        assertThat(again.value()).isEqualTo(24);
    }

    /**
     * A raise counts the floor as issued (it holds the tokens of dropped records), so a second raise by a positive gap
     * lifts it again; one whose result is below the floor, by a gap below 1 as a decoded entry may carry, keeps it.
     */
    @Test
    void raiseFloor_resultBelowTheFloor_keepsTheFloor() {
        LockStateMachine machine = levelFive(6, 1);
        granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a1", false)));
        apply(machine, new Command.RaiseFloor(1_024));

        Applied smaller = apply(machine, new Command.RaiseFloor(-1_000));
        Applied none = apply(machine, new Command.RaiseFloor(0));
        Applied again = apply(machine, new Command.RaiseFloor(1));

        assertThat(smaller.result()).isEqualTo(new Result.FloorRaised(1_031));
        assertThat(none.result()).isEqualTo(new Result.FloorRaised(1_031));
        assertThat(again.result()).isEqualTo(new Result.FloorRaised(1_032));
    }

    /** Only a corrupt state has a floor past the ceiling: reached by a level-4 group raised to level 5 past its end. */
    @Test
    void raiseFloor_floorPastTheCeiling_keepsTheFloor() {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, LAST + 5);
        machine.apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL_RAISE_FLOOR));

        Applied raised = machine.apply(new Command.RaiseFloor(8));

        assertThat(raised.result()).isEqualTo(new Result.FloorRaised(LAST + 5));
    }

    @Test
    void raiseFloor_nearTheGenerationsEnd_clampedAtItAndLocksRefuseGrantsAsAtExhaustion() {
        LockStateMachine machine = levelFive(LAST - 10, 3);
        FencingToken held = granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a1", true)));
        apply(machine, new Command.Acquire(2, HASH, "orders", "a2", true));

        Applied raised = apply(machine, new Command.RaiseFloor(Command.RaiseFloor.GAP_MAX));
        Applied queued = apply(machine, new Command.Acquire(3, HASH, "orders", "a3", true));
        Applied released = apply(machine, new Command.Release(1, HASH, "orders", held.value()));
        Applied fresh = apply(machine, new Command.Acquire(3, HASH, "fresh", "f1", false));

        assertThat(raised.result()).isEqualTo(new Result.FloorRaised(LAST));
        assertThat(machine.floor()).isEqualTo(LAST);
        assertThat(((Result.Rejected) queued.result()).error()).isInstanceOf(TokenExhaustedException.class);
        assertThat(((Result.Released) released.result()).next()).isNull();
        assertThat(released.events()).contains(new Event.WaitDropped(2, "orders", "a2"));
        assertThat(((Result.Rejected) fresh.result()).error()).isInstanceOf(TokenExhaustedException.class)
                .hasMessageContaining("last token " + LAST + " is the last of token generation 0");
        assertThat(machine.highestToken()).isEqualTo(LAST);
    }

    @Test
    void raiseFloor_belowFormatLevelFive_isRejectedNamingTheLevelAndChangesNothing() {
        LockStateMachine previous = LockStateMachine.withFloor(LIMITS, 6);
        previous.apply(new Command.OpenSession("s-1", 10_000, "client-1", HASH));
        granted(previous.apply(new Command.Acquire(1, HASH, "orders", "a1", false)));
        byte[] before = LockMachineFixture.snapshot(previous);

        Applied refused = previous.apply(new Command.RaiseFloor(8));

        assertThat(refused.events()).isEmpty();
        assertThat(((Result.Rejected) refused.result()).error()).isInstanceOfSatisfying(InvalidArgumentException.class,
                error -> {
                    assertThat(error.field()).isEqualTo("format_level");
                    assertThat(error.value()).isEqualTo("4");
                    assertThat(error).hasMessageContaining("format level 4").hasMessageContaining("needs 5");
                });
        assertThat(previous.floor()).isEqualTo(6);
        assertThat(LockMachineFixture.snapshot(previous)).isEqualTo(before);
    }

    @Test
    void encodeCommands_raiseFloor_writesVersionFiveAndDecodesEqual() {
        List<Command> batch = List.of(new Command.RaiseFloor(8), new Command.RaiseFloor(Command.RaiseFloor.GAP_MAX),
                new Command.EndLockDelay("orders"));

        byte[] bytes = CommandCodec.encodeCommands(batch);

        assertThat(bytes[0]).isEqualTo((byte) CommandCodec.VERSION);
        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(batch);
    }

    @Test
    void decodeCommands_raiseFloorInVersionFourBatch_refused() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(new Command.RaiseFloor(8)));
        bytes[0] = (byte) CommandCodec.VERSION_FOUR;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("command tag 16 is not in version 4");
    }

    @Test
    void encodeResults_floorRaised_decodesEqual() {
        List<Result> results = List.of(new Result.FloorRaised(15), new Result.FloorRaised(
                FencingToken.generationLast(FencingToken.GENERATION_MAX)));

        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(results))).isEqualTo(results);
    }

    @Test
    void encodedBytesMax_raiseFloor_isItsEncodingExactly() {
        for (int gap : new int[] {1, Command.RaiseFloor.GAP_MAX, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            Command raise = new Command.RaiseFloor(gap);
            long encoded = CommandCodec.encodeCommands(List.of(raise)).length - CommandSizes.BATCH_HEADER_BYTES;

            assertThat(CommandSizes.encodedBytesMax(raise)).isEqualTo(encoded);
        }
    }

    @Test
    void checkProposal_gapOutOfRange_refusedNamingTheValue() {
        for (int gap : new int[] {0, Command.RaiseFloor.GAP_MAX + 1}) {
            assertThatThrownBy(() -> CommandChecks.checkProposal(new Command.RaiseFloor(gap), LIMITS))
                    .isInstanceOfSatisfying(InvalidArgumentException.class, error -> {
                        assertThat(error.field()).isEqualTo("gap");
                        assertThat(error.value()).isEqualTo(Integer.toString(gap));
                        assertThat(error).hasMessageContaining("gap " + gap).hasMessageContaining("[1, 1024]");
                    });
        }
        assertThatCode(() -> CommandChecks.checkProposal(new Command.RaiseFloor(1), LIMITS))
                .doesNotThrowAnyException();
        assertThatCode(() -> CommandChecks.checkProposal(new Command.RaiseFloor(Command.RaiseFloor.GAP_MAX), LIMITS))
                .doesNotThrowAnyException();
    }

    @Test
    void readSnapshot_afterARaise_restoresTheFloorAndTheNextGrantIsAboveIt() throws IOException {
        LockStateMachine machine = levelFive(6, 1);
        granted(apply(machine, new Command.Acquire(1, HASH, "orders", "a1", false)));
        apply(machine, new Command.RaiseFloor(8));

        byte[] bytes = LockMachineFixture.snapshot(machine);
        LockStateMachine read = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(bytes)),
                LIMITS);
        byte[] again = LockMachineFixture.snapshot(read);
        FencingToken next = granted(apply(read, new Command.Acquire(1, HASH, "fresh", "f1", false)));

        assertThat(again).isEqualTo(bytes);
        assertThat(read.floor()).isEqualTo(15);
        assertThat(next.value()).isEqualTo(16);
    }
}

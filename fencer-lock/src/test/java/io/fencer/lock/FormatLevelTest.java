package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.TokenExhaustedException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The group's format level (raised through the log, gating what is written) and the token generation. */
class FormatLevelTest {
    private static final SecretHash HASH = SecretHash.of("the format level tests' secret");
    private static final Limits LIMITS = new Limits(10, 10, 10, 10, 1_000, 60_000);

    @Test
    void encodeCommands_withoutLevelFiveCommand_writesVersionFourThatThePreviousReleaseReads() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(new Command.OpenSession("r-1", 10_000, "ann", HASH)));

        assertThat(bytes[0]).isEqualTo((byte) CommandCodec.VERSION_FOUR);
    }

    @Test
    void encodeCommands_setFormatLevel_writesVersionFiveAndDecodesEqual() {
        List<Command> batch = List.of(new Command.SetFormatLevel(5), new Command.EndLockDelay(
                io.fencer.core.internal.LockName.of("a")));

        byte[] bytes = CommandCodec.encodeCommands(batch);

        assertThat(bytes[0]).isEqualTo((byte) 5);
        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(batch);
    }

    @Test
    void decodeCommands_setFormatLevelInVersionFourBatch_refused() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(new Command.SetFormatLevel(5)));
        bytes[0] = (byte) CommandCodec.VERSION_FOUR;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("command tag 13 is not in version 4");
    }

    @Test
    void setFormatLevel_ofUnknownLevel_refusedNamingIt() {
        assertThatThrownBy(() -> new Command.SetFormatLevel(6)).hasMessageContaining("format level 6");
    }

    @Test
    void apply_setFormatLevel_raisesOnceAndNeverLowers() {
        LockStateMachine machine = new LockStateMachine(LIMITS);
        assertThat(machine.formatLevel()).isEqualTo(LockStateMachine.FORMAT_LEVEL_PREVIOUS);

        Applied raised = machine.apply(new Command.SetFormatLevel(5));
        Applied again = machine.apply(new Command.SetFormatLevel(5));

        assertThat(raised.result()).isEqualTo(new Result.FormatLevelSet(5));
        assertThat(again.result()).isEqualTo(new Result.FormatLevelSet(5));
        assertThat(machine.formatLevel()).isEqualTo(5);
    }

    @Test
    void writeSnapshot_atLevelFour_writesVersionFour() throws IOException {
        LockStateMachine machine = busy(new LockStateMachine(LIMITS));

        byte[] bytes = LockMachineFixture.snapshot(machine);

        assertThat(bytes[0]).isEqualTo((byte) SnapshotCodec.VERSION_FOUR);
        assertThat(read(bytes).formatLevel()).isEqualTo(4);
    }

    @Test
    void writeSnapshot_atLevelFive_keepsLevelAndGeneration() throws IOException {
        LockStateMachine machine = busy(new LockStateMachine(LIMITS).restoredInGeneration(3));

        LockStateMachine read = read(LockMachineFixture.snapshot(machine));

        assertThat(LockMachineFixture.snapshot(machine)[0]).isEqualTo((byte) SnapshotCodec.VERSION);
        assertThat(read.formatLevel()).isEqualTo(5);
        assertThat(read.generation()).isEqualTo(3);
        assertThat(LockMachineFixture.snapshot(read)).isEqualTo(LockMachineFixture.snapshot(machine));
    }

    @Test
    void restoredInGeneration_everyGrantExceedsEveryTokenOfTheBackedUpGroup() {
        LockStateMachine original = busy(new LockStateMachine(LIMITS));
        long highest = original.highestToken();

        LockStateMachine restored = original.restoredInGeneration(1);
        restored.apply(new Command.OpenSession("n-1", 10_000, "bob", HASH));
        Applied granted = restored.apply(new Command.Acquire(3, HASH, "orders", "g", false));

        long token = ((Result.Granted) granted.result()).token().value();
        assertThat(highest).isPositive();
        assertThat(token).isGreaterThan(FencingToken.generationLast(0)).isGreaterThan(highest);
        assertThat(FencingToken.generationOf(token)).isEqualTo(1);
        assertThat(FencingToken.counterOf(token)).isEqualTo(1);
        assertThat(restored.sessions()).hasSize(1);
    }

    @Test
    void restoredInGeneration_notAboveTheBackup_refused() {
        LockStateMachine restored = new LockStateMachine(LIMITS).restoredInGeneration(2);

        assertThatThrownBy(() -> restored.restoredInGeneration(2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("generation 2 must be above the backup's generation 2");
    }

    @Test
    void acquire_atTheEndOfItsGeneration_refusedTokenExhausted() {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, FencingToken.generationLast(0) - 1);
        machine.apply(new Command.SetFormatLevel(5));
        machine.apply(new Command.OpenSession("s-1", 10_000, "ann", HASH));

        Applied last = machine.apply(new Command.Acquire(1, HASH, "a", "r1", false));
        machine.apply(new Command.Release(1, HASH, "a", FencingToken.generationLast(0)));
        Applied beyond = machine.apply(new Command.Acquire(1, HASH, "a", "r2", false));

        assertThat(((Result.Granted) last.result()).token().value()).isEqualTo(FencingToken.generationLast(0));
        assertThat(((Result.Rejected) beyond.result()).error()).isInstanceOf(TokenExhaustedException.class);
    }

    @Test
    void acquire_atLevelFour_grantsPastTheGenerationAsThePreviousReleaseDid() {
        LockStateMachine machine = LockStateMachine.withFloor(LIMITS, FencingToken.generationLast(0));
        machine.apply(new Command.OpenSession("s-1", 10_000, "ann", HASH));

        Applied granted = machine.apply(new Command.Acquire(1, HASH, "a", "r1", false));

        assertThat(((Result.Granted) granted.result()).token().value()).isEqualTo(FencingToken.generationLast(0) + 1);
    }

    /** Two sessions, one lock held and one released: tokens issued. */
    private static LockStateMachine busy(LockStateMachine machine) {
        machine.apply(new Command.OpenSession("b-1", 10_000, "ann", HASH));
        machine.apply(new Command.OpenSession("b-2", 10_000, "ann", HASH));
        long first = machine.sessions().stream().mapToLong(SessionView::sessionId).min().orElseThrow();
        machine.apply(new Command.Acquire(first, HASH, "x", "a1", false));
        machine.apply(new Command.Acquire(first + 1, HASH, "y", "a2", false));
        machine.apply(new Command.Release(first + 1, HASH, "y", machine.describe("y").orElseThrow().holder().value()));
        return machine;
    }

    private static LockStateMachine read(byte[] bytes) throws IOException {
        return LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(bytes)), LIMITS);
    }
}

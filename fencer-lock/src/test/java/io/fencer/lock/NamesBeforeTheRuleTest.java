package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.internal.LockName;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rule against invisible and text-reordering characters applies to names being created, at the server's edge:
 * names the replicated state already holds (in log entries and snapshots) still decode, load and are released.
 */
class NamesBeforeTheRuleTest {
    private static final SecretHash HASH = SecretHash.of("the names tests' secret");
    /** "ab" with a right-to-left override between: a name a lock may have got before the rule. */
    private static final String OLD_NAME = "a\u202Eb";

    @Test
    void logEntriesAndSnapshotsHoldingAnOldName_decodeLoadAndRelease() throws IOException {
        assertThatThrownBy(() -> LockName.ofNew("lock", OLD_NAME)).isInstanceOf(InvalidArgumentException.class);
        LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);
        machine.apply(new Command.OpenSession("", 10_000, "alice", HASH));
        byte[] entry = CommandCodec.encodeCommands(List.of(new Command.Acquire(1, HASH, OLD_NAME, "r", false)));

        Applied granted = machine.apply(CommandCodec.decodeCommands(entry).get(0));
        LockStateMachine restored = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(
                LockMachineFixture.snapshot(machine))), Limits.DEFAULT);
        boolean heldAfterRestore = restored.describe(OLD_NAME).isPresent();
        Applied released = restored.apply(new Command.Release(1, HASH, OLD_NAME, 1));

        assertThat(granted.result()).isEqualTo(new Result.Granted(FencingToken.of(LockName.of(OLD_NAME), 1)));
        assertThat(heldAfterRestore).isTrue();
        assertThat(released.result()).isInstanceOf(Result.Released.class);
    }
}

package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.NotHolderException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Data written by the release before read-write locks (version 2) loads: its batches decode to the same commands,
 * its snapshots to exclusive holders and waiters, and applying the batch reaches the state that release reached.
 * The bytes in {@code src/test/resources/v2} were made by that release's own code (see the README there).
 */
class VersionTwoCompatibilityTest {
    private static final SecretHash HASH = SecretHash.of("the version-2 sessions' secret");

    @Test
    void readSnapshot_ofVersionTwoSnapshot_restoresExclusiveHoldersWaitersDelayAndFloor() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        assertThat(machine.floor()).isEqualTo(3);
        assertThat(machine.list("", 10)).containsExactly(
                new LockView("jobs/delayed", null, 0, null, List.of(new LockView.WaiterView(3, "req-3-delayed")),
                        4, true, EndCause.SESSION_EXPIRED),
                new LockView("jobs/held", new FencingToken("jobs/held", 4), 1, "alice",
                        List.of(new LockView.WaiterView(3, "req-3-held", LockMode.EXCLUSIVE)), 4, false, null));
        assertThat(machine.session(3).orElseThrow().identity()).isEqualTo("carol");
    }

    @Test
    void apply_ofVersionTwoBatchOnVersionTwoSnapshot_reachesTheStateThatReleaseReached() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");
        byte[] batch = resource("batch.bin");
        assertThat(batch[0]).isEqualTo((byte) 2);
        List<Result> results = new ArrayList<>();

        for (Command command : CommandCodec.decodeCommands(batch)) {
            results.add(machine.apply(command).result());
            machine.checkInvariants();
        }

        assertThat(LockMachineFixture.snapshot(machine))
                .isEqualTo(LockMachineFixture.snapshot(restore("snapshot-after.bin")));
        assertThat(results.subList(0, 4)).containsExactly(new Result.SessionOpened(4, 15_000),
                new Result.Granted(new FencingToken("jobs/new", 4)), new Result.Queued("jobs/held", 1),
                new Result.WaitCancelled(true));
        assertThat(((Result.Rejected) results.get(4)).error()).isInstanceOf(NotHolderException.class);
        assertThat(results.subList(5, 9)).containsExactly(
                new Result.Released(new FencingToken("jobs/held", 4), new FencingToken("jobs/held", 5)),
                new Result.DelayEnded("jobs/delayed", true, new FencingToken("jobs/delayed", 5)),
                new Result.SessionEnded(1, List.of()),
                new Result.SessionEnded(4, List.of(new FencingToken("jobs/new", 4))));
    }

    @Test
    void writeSnapshot_ofVersionTwoState_writesTheCurrentVersionWithTheSameLocks() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        byte[] rewritten = LockMachineFixture.snapshot(machine);
        LockStateMachine again = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(rewritten)), Limits.DEFAULT);

        assertThat(rewritten[0]).isEqualTo((byte) 4);
        assertThat(again.list("", 10)).isEqualTo(machine.list("", 10));
        assertThat(again.sessions()).isEqualTo(machine.sessions());
        // A reader may now share a lock restored from version 2.
        Applied shared = again.apply(new Command.Acquire(3, HASH, "jobs/other", "r", false, LockMode.SHARED));
        assertThat(shared.result()).isEqualTo(new Result.Granted(new FencingToken("jobs/other", 4,
                LockMode.SHARED)));
    }

    private static LockStateMachine restore(String name) throws IOException {
        byte[] bytes = resource(name);
        assertThat(bytes[0]).as("snapshot version of " + name).isEqualTo((byte) 2);
        LockStateMachine machine = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);
        machine.checkInvariants();
        return machine;
    }

    private static byte[] resource(String name) {
        try (InputStream in = VersionTwoCompatibilityTest.class.getResourceAsStream("/v2/" + name)) {
            assertThat(in).as("test resource v2/" + name).isNotNull();
            return in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}

package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.ErrorReason;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Data written by the previous release (version 1, before session secrets) loads under the new rules. The bytes
 * in {@code src/test/resources/v1} were made by that release's own code (see the README there), not by hand.
 */
class VersionOneCompatibilityTest {
    private static final SecretHash NOT_CARRIED = SecretHash.NOT_CARRIED;
    private static final String ANONYMOUS = CommandCodec.VERSION_ONE_IDENTITY;
    /** Every token the old state issued, by lock: its lock's last token (floor/raiser was dropped at 3). */
    private static final Map<String, Long> OLD_LAST_TOKENS = Map.of("floor/raiser", 3L, "jobs/held", 5L,
            "jobs/third", 4L, "jobs/delayed", 4L);

    @Test
    void decodeCommands_ofVersionOneBatchOfEveryKind_returnsTheCommandsWithoutSecretHashes() {
        byte[] batch = resource("batch.bin");
        List<Command> decoded = CommandCodec.decodeCommands(batch);

        assertThat(batch[0]).isEqualTo((byte) 1);
        assertThat(decoded).containsExactly(
                new Command.OpenSession("open-5", 15_000, ANONYMOUS, SecretHash.NONE),
                new Command.Acquire(5, NOT_CARRIED, "jobs/\u00e9t\u00e9", "req-5-ete", false),
                new Command.Acquire(5, NOT_CARRIED, "jobs/held", "req-5-held", true),
                new Command.CancelWait(5, NOT_CARRIED, "jobs/held", "req-5-held"),
                new Command.CancelWait(2, NOT_CARRIED, "jobs/none", null),
                new Command.Release(0, NOT_CARRIED, "jobs/\u00e9t\u00e9", 99),
                new Command.Release(0, NOT_CARRIED, "jobs/held", 5),
                new Command.CloseSession(3, NOT_CARRIED),
                new Command.ExpireSession(2, false),
                new Command.EndLockDelay("jobs/delayed"),
                new Command.OpenSession("open-1", 10_000, ANONYMOUS, SecretHash.NONE));
    }

    @Test
    void encodeCommands_ofDecodedVersionOneCommand_isRefusedAndNothingIsWrittenAsVersionOne() {
        List<Command> decoded = CommandCodec.decodeCommands(resource("batch.bin"));

        assertThatThrownBy(() -> CommandCodec.encodeCommands(List.of(decoded.get(1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("version-1");
        // A version-1 OpenSession carries the NONE hash, which is written as version 2 (it matches nothing).
        byte[] reencoded = CommandCodec.encodeCommands(List.of(decoded.get(0)));
        assertThat(reencoded[0]).isEqualTo((byte) CommandCodec.VERSION_FOUR);
        assertThat(CommandCodec.decodeCommands(reencoded)).containsExactly(decoded.get(0));
    }

    @Test
    void readSnapshot_ofVersionOneSnapshot_restoresTokensHoldersWaitersDelayAndFloor() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        assertThat(machine.floor()).isEqualTo(3);
        assertThat(machine.sessions()).containsExactly(
                new SessionView(1, 10_000, ANONYMOUS, SecretHash.NONE, List.of("jobs/held"), List.of()),
                new SessionView(2, 5_000, ANONYMOUS, SecretHash.NONE, List.of(), List.of("jobs/held")),
                new SessionView(3, 20_000, ANONYMOUS, SecretHash.NONE, List.of("jobs/third"),
                        List.of("jobs/held", "jobs/delayed")));
        assertThat(machine.list("", 100)).containsExactly(
                new LockView("jobs/delayed", null, 0, null, List.of(new LockView.WaiterView(3, "req-3-delayed")),
                        4, true, EndCause.SESSION_EXPIRED),
                new LockView("jobs/held", new FencingToken("jobs/held", 5), 1, ANONYMOUS,
                        List.of(new LockView.WaiterView(2, "req-2-held"), new LockView.WaiterView(3, "req-3-held")),
                        5, false, EndCause.RELEASED),
                new LockView("jobs/third", new FencingToken("jobs/third", 4), 3, ANONYMOUS, List.of(), 4, false,
                        null));
        assertThat(machine.delayedLocks()).containsExactly("jobs/delayed");
        assertThat(machine.waiterCount()).isEqualTo(3);
        // Session ids go on after the last one the old release handed out (4, which expired).
        assertThat(machine.apply(new Command.OpenSession("", 10_000, "alice", SecretHash.of("s"))).result())
                .isEqualTo(new Result.SessionOpened(5, 10_000));
    }

    @Test
    void apply_ofVersionOneBatchOnVersionOneSnapshot_reachesTheStateThePreviousReleaseReached() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");
        List<Result> results = new ArrayList<>();

        for (Command command : CommandCodec.decodeCommands(resource("batch.bin"))) {
            results.add(machine.apply(command).result());
            machine.checkInvariants();
        }

        // The state is what the previous release wrote after applying the same batch, byte for byte once both are
        // written as version 2.
        assertThat(LockMachineFixture.snapshot(machine))
                .isEqualTo(LockMachineFixture.snapshot(restore("snapshot-after.bin")));
        // The results the previous release gave (results-by-the-previous-release.txt), but the last: a retried open
        // of a session without a secret is refused now (its secret cannot be handed out), changing nothing.
        assertThat(results.subList(0, 4)).containsExactly(new Result.SessionOpened(5, 15_000),
                new Result.Granted(new FencingToken("jobs/\u00e9t\u00e9", 4)), new Result.Queued("jobs/held", 2),
                new Result.WaitCancelled(true));
        assertThat(results.get(4)).isEqualTo(new Result.WaitCancelled(false));
        assertThat(((Result.Rejected) results.get(5)).error()).isInstanceOf(NotHolderException.class)
                .hasMessageContaining("jobs/\u00e9t\u00e9#99");
        assertThat(results.subList(6, 10)).containsExactly(
                new Result.Released(new FencingToken("jobs/held", 5), new FencingToken("jobs/held", 6)),
                new Result.SessionEnded(3, List.of(new FencingToken("jobs/third", 4))),
                new Result.SessionEnded(2, List.of(new FencingToken("jobs/held", 6))),
                new Result.DelayEnded("jobs/delayed", true, null));
        assertThat(((Result.Rejected) results.get(10)).error().reason())
                .isEqualTo(ErrorReason.SESSION_UNAUTHENTICATED);
    }

    @Test
    void apply_afterVersionOneRestore_grantsEveryLockAboveEveryTokenTheOldStateIssued() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");
        SecretHash hash = SecretHash.of("a new session's secret");

        // The old sessions expire (nobody can keep them alive): session 1's lock passes to waiting session 2.
        Applied expired = machine.apply(new Command.ExpireSession(1, false));
        assertThat(expired.events()).contains(
                new Event.Granted(2, "req-2-held", new FencingToken("jobs/held", 6), ANONYMOUS));
        machine.apply(new Command.ExpireSession(2, false));
        machine.apply(new Command.ExpireSession(3, false));
        machine.apply(new Command.EndLockDelay("jobs/delayed"));
        machine.checkInvariants();
        assertThat(machine.sessionCount()).isZero();
        assertThat(machine.lockCount()).isZero();
        long session = ((Result.SessionOpened) machine.apply(new Command.OpenSession("", 10_000, "alice", hash))
                .result()).sessionId();

        long highestOld = 6; // jobs/held#6, granted to session 2 above
        for (String lock : List.of("floor/raiser", "jobs/held", "jobs/third", "jobs/delayed", "never/used")) {
            Result granted = machine.apply(new Command.Acquire(session, hash, lock, "new-" + lock, false)).result();
            long value = ((Result.Granted) granted).token().value();
            assertThat(value).as(lock).isGreaterThan(highestOld)
                    .isGreaterThan(OLD_LAST_TOKENS.getOrDefault(lock, 0L));
        }
    }

    @Test
    void apply_forVersionOneSession_refusesEverySecretAndTheSessionExpiresNormally() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");
        byte[] before = LockMachineFixture.snapshot(machine);
        List<SecretHash> presented = List.of(SecretHash.of(""), SecretHash.of("guess"), SecretHash.NONE,
                SecretHash.fromBytes(new byte[SecretHash.BYTES]));

        for (SecretHash hash : presented) {
            assertRefused(machine.apply(new Command.Acquire(1, hash, "jobs/new", "r", false)));
            assertRefused(machine.apply(new Command.Acquire(2, hash, "jobs/held", "req-2-held", true)));
            assertRefused(machine.apply(new Command.Release(1, hash, "jobs/held", 5)));
            assertRefused(machine.apply(new Command.CancelWait(3, hash, "jobs/held", "req-3-held")));
            assertRefused(machine.apply(new Command.CloseSession(1, hash)));
            assertRefused(machine.apply(new Command.OpenSession("open-1", 10_000, ANONYMOUS, hash)));
        }
        assertThat(LockMachineFixture.snapshot(machine)).as("refused commands change nothing").isEqualTo(before);

        Applied expired = machine.apply(new Command.ExpireSession(1, true));
        assertThat(expired.result()).isEqualTo(new Result.SessionEnded(1, List.of(new FencingToken("jobs/held", 5))));
        assertThat(expired.events()).contains(new Event.LockDelayStarted("jobs/held"),
                new Event.SessionEnded(1, EndCause.SESSION_EXPIRED));
        Applied delayEnded = machine.apply(new Command.EndLockDelay("jobs/held"));
        assertThat(delayEnded.result())
                .isEqualTo(new Result.DelayEnded("jobs/held", true, new FencingToken("jobs/held", 6)));
        machine.checkInvariants();
    }

    @Test
    void writeSnapshot_ofVersionOneState_writesTheCurrentVersionThatKeepsSessionsUnusable() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        byte[] rewritten = LockMachineFixture.snapshot(machine);
        LockStateMachine again = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(rewritten)), Limits.DEFAULT);

        assertThat(rewritten[0]).isEqualTo((byte) 4);
        assertThat(again.sessions()).isEqualTo(machine.sessions());
        assertThat(again.list("", 100)).isEqualTo(machine.list("", 100));
        assertThat(again.floor()).isEqualTo(3);
        assertThat(again.session(1).orElseThrow().secretHash().matches(SecretHash.NONE)).isFalse();
        assertRefused(again.apply(new Command.Acquire(1, SecretHash.NONE, "jobs/new", "r", false)));
    }

    private static void assertRefused(Applied applied) {
        assertThat(applied.result()).isInstanceOf(Result.Rejected.class);
        assertThat(((Result.Rejected) applied.result()).error().reason())
                .isEqualTo(ErrorReason.SESSION_UNAUTHENTICATED);
        assertThat(applied.events()).isEmpty();
    }

    private static LockStateMachine restore(String name) throws IOException {
        byte[] bytes = resource(name);
        assertThat(bytes[0]).as("snapshot version of " + name).isEqualTo((byte) 1);
        LockStateMachine machine = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);
        machine.checkInvariants();
        return machine;
    }

    private static byte[] resource(String name) {
        try (InputStream in = VersionOneCompatibilityTest.class.getResourceAsStream("/v1/" + name)) {
            assertThat(in).as("test resource v1/" + name).isNotNull();
            return in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}

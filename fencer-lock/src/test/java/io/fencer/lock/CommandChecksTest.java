package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rules of {@link CommandChecks}: which commands the leader refuses to propose, which the state machine applies
 * as no-ops, and the reason the rules on apply may be only these: applying such a command the way every earlier
 * release did changes no state.
 */
class CommandChecksTest {
    private static final long TTL_MILLIS = 10_000;
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");
    private static final Limits LIMITS = Limits.DEFAULT;

    /** Commands that decode, but that no leader proposes and no replica applies (one per rule, and kind). */
    static List<Command> malformed() {
        return List.of(
                new Command.CloseSession(0, HASH),
                new Command.ExpireSession(-1, false),
                new Command.Acquire(0, HASH, "orders", "request-1", true),
                new Command.CancelWait(-7, HASH, "orders", "request-1"),
                new Command.Release(0, HASH, "orders", 1),
                new Command.AcquirePermit(0, HASH, "pool", 2, "request-1", false),
                Command.AcquireAll.of(0, HASH, List.of("a", "b"), "request-1", false),
                new Command.Acquire(1, SecretHash.NONE, "orders", "request-1", true),
                new Command.CloseSession(1, SecretHash.NONE),
                new Command.Release(1, SecretHash.NONE, "orders", 1),
                new Command.OpenSession("open-1", 0, "tester", HASH),
                new Command.OpenSession("open-1", LIMITS.ttlMillisMax() + 1, "tester", HASH),
                new Command.AcquirePermit(1, HASH, "pool", 0, "request-1", false),
                new Command.AcquirePermit(1, HASH, "pool", Limits.PERMITS_MAX + 1, "request-1", false),
                new Command.Release(1, HASH, "orders", 0),
                new Command.Release(1, HASH, "orders", Long.MAX_VALUE),
                new Command.Release(0, SecretHash.NOT_CARRIED, "orders", -1));
    }

    @Test
    void checkApplied_eachMalformedCommand_isRefusedNamingAField() {
        for (Command command : malformed()) {
            assertThatThrownBy(() -> CommandChecks.checkApplied(command, LIMITS)).as("%s", command)
                    .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                        assertThat(e.field()).isIn("session_id", "secret_hash", "ttl_millis", "permits", "token");
                        assertThat(e.getMessage()).isNotBlank();
                    });
        }
    }

    @Test
    void checkProposal_eachMalformedCommand_isRefusedToo() {
        for (Command command : malformed()) {
            assertThatThrownBy(() -> CommandChecks.checkProposal(command, LIMITS)).as("%s", command)
                    .isInstanceOf(InvalidArgumentException.class);
        }
    }

    @Test
    void checkApplied_wellFormedAndVersionOneCommands_pass() {
        List<Command> commands = List.of(
                new Command.OpenSession("open-1", TTL_MILLIS, "tester", HASH),
                // Opened by the previous release (no secret), and its commands (none carried, Release by token):
                new Command.OpenSession("open-2", TTL_MILLIS, CommandCodec.VERSION_ONE_IDENTITY, SecretHash.NONE),
                new Command.Acquire(1, SecretHash.NOT_CARRIED, "orders", "request-1", true),
                new Command.Release(0, SecretHash.NOT_CARRIED, "orders", 3),
                new Command.CloseSession(1, HASH),
                new Command.ExpireSession(1, true),
                new Command.Acquire(1, HASH, "orders", "request-1", false, LockMode.SHARED),
                new Command.CancelWait(1, HASH, "orders", null),
                new Command.Release(1, HASH, "orders", 1),
                new Command.EndLockDelay("orders"),
                new Command.AcquirePermit(1, HASH, "pool", Limits.PERMITS_MAX, "request-1", true),
                Command.AcquireAll.of(1, HASH, List.of("a", "b"), "request-1", true));

        for (Command command : commands) {
            assertThatCode(() -> CommandChecks.checkApplied(command, LIMITS)).as("%s", command)
                    .doesNotThrowAnyException();
        }
    }

    @Test
    void checkProposal_openSessionWithoutASecretOrAVersionOneCommand_isRefusedThoughItApplies() {
        List<Command> appliedOnly = List.of(
                new Command.OpenSession("open-2", TTL_MILLIS, "tester", SecretHash.NONE),
                new Command.Acquire(1, SecretHash.NOT_CARRIED, "orders", "request-1", true),
                new Command.Release(0, SecretHash.NOT_CARRIED, "orders", 3));

        for (Command command : appliedOnly) {
            assertThatCode(() -> CommandChecks.checkApplied(command, LIMITS)).doesNotThrowAnyException();
            assertThatThrownBy(() -> CommandChecks.checkProposal(command, LIMITS)).as("%s", command)
                    .isInstanceOfSatisfying(InvalidArgumentException.class,
                            e -> assertThat(e.field()).isEqualTo("secret_hash"));
        }
    }

    /**
     * Why refusing on apply is safe across releases: applied as every earlier release applied it (the state machine
     * alone, no check), each malformed command leaves a busy state exactly as it was: same snapshot bytes.
     */
    @Test
    void apply_eachMalformedCommandTheWayEarlierReleasesDid_changesNoState() {
        for (Command command : malformed()) {
            LockStateMachine machine = busyMachine();
            byte[] before = snapshot(machine);

            Applied applied = machine.apply(command);

            assertThat(snapshot(machine)).as("the state after %s", command).isEqualTo(before);
            assertThat(applied.events()).as("the events of %s", command).isEmpty();
        }
    }

    /** Session 1 holds "orders" and a permit of "pool" (2 permits), session 2 waits for "orders", both own a secret. */
    private static LockStateMachine busyMachine() {
        LockStateMachine machine = new LockStateMachine(LIMITS);
        machine.apply(new Command.OpenSession("open-1", TTL_MILLIS, "tester", HASH));
        machine.apply(new Command.OpenSession("open-2", TTL_MILLIS, "tester", HASH));
        assertThat(machine.apply(new Command.Acquire(1, HASH, "orders", "request-1", false)).result())
                .isInstanceOf(Result.Granted.class);
        assertThat(machine.apply(new Command.Acquire(2, HASH, "orders", "request-2", true)).result())
                .isInstanceOf(Result.Queued.class);
        assertThat(machine.apply(new Command.AcquirePermit(1, HASH, "pool", 2, "request-3", false)).result())
                .isInstanceOf(Result.Granted.class);
        return machine;
    }

    private static byte[] snapshot(LockStateMachine machine) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            machine.writeSnapshot(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}

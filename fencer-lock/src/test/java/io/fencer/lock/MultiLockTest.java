package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Multi-locks in the state machine: all or none in one step, queued as a unit, no deadlock in either order. */
class MultiLockTest {
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");
    private final LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);

    private Applied apply(Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        return applied;
    }

    private long open() {
        return ((Result.SessionOpened) apply(new Command.OpenSession("", 10_000, "tester", HASH)).result())
                .sessionId();
    }

    private Applied all(long session, String request, String... locks) {
        return apply(Command.AcquireAll.of(session, HASH, List.of(locks), request, true));
    }

    @Test
    void acquireAll_freeLocks_grantsEachItsOwnTokenInOneStep() {
        apply(new Command.Acquire(open(), HASH, "b", "raise-b", false));

        Applied granted = all(open(), "ab", "a", "c");

        assertThat(granted.result()).isEqualTo(new Result.GrantedAll(List.of(new FencingToken("a", 1),
                new FencingToken("c", 1))));
    }

    @Test
    void acquireAll_oneLockHeld_takesNoneAndWaits_thenGetsAllWhenItFrees() {
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "b", "hold-b", false));
        long group = open();

        Applied queued = all(group, "ab", "a", "b");
        assertThat(queued.result()).isEqualTo(new Result.Queued("a", 0));
        assertThat(machine.describe("a").orElseThrow().holder()).as("nothing taken while waiting").isNull();
        long single = open();
        assertThat(apply(new Command.Acquire(single, HASH, "a", "a-alone", true)).result())
                .as("FIFO: behind the multi-lock").isEqualTo(new Result.Queued("a", 1));

        Applied released = apply(new Command.Release(holder, HASH, "b", 1));

        assertThat(released.events()).contains(new Event.Granted(group, "ab", new FencingToken("a", 1), "tester"),
                new Event.Granted(group, "ab", new FencingToken("b", 2), "tester"));
    }

    @Test
    void acquireAll_twoSessionsNamingTheLocksInOppositeOrders_neitherDeadlocks() {
        long first = open();
        long second = open();
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "x", "hold-x", false));
        all(first, "xy", "x", "y");
        all(second, "yx", "y", "x");

        apply(new Command.CloseSession(holder, HASH));
        assertThat(machine.describe("y").orElseThrow().holderSessionId()).isEqualTo(first);
        apply(new Command.CloseSession(first, HASH));

        assertThat(machine.describe("x").orElseThrow().holderSessionId()).isEqualTo(second);
        assertThat(machine.describe("y").orElseThrow().holderSessionId()).isEqualTo(second);
    }

    @Test
    void cancelWait_ofOneLockOfAMultiLock_leavesEveryQueue() {
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "b", "hold-b", false));
        long group = open();
        all(group, "ab", "a", "b");

        assertThat(apply(new Command.CancelWait(group, HASH, "b", "ab")).result())
                .isEqualTo(new Result.WaitCancelled(true));

        assertThat(machine.describe("a")).isEmpty();
        assertThat(machine.describe("b").orElseThrow().waiters()).isEmpty();
    }

    /**
     * Regression: a plain acquire of a lock that the session's own multi-lock waited for answered that wait's place,
     * so a try of the multi-lock's second lock was answered with a CancelWait of it (the service gives up an orphaned
     * place so), which took the whole multi-lock out of every queue, and a waiting acquire shared the multi-lock's
     * grant as a plain one. From format level 5 it is refused, as a multi-lock overlapping another wait is.
     */
    @Test
    void acquire_ofALockItsSessionsMultiLockWaitsFor_isRefusedAndTheMultiLockKeepsItsWait() {
        apply(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL));
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "b", "hold-b", false));
        long group = open();
        all(group, "ab", "a", "b");

        for (boolean waitQueued : new boolean[] {false, true}) {
            Result refused = apply(new Command.Acquire(group, HASH, "b", "b-alone", waitQueued)).result();
            assertThat(refused).isInstanceOf(Result.Rejected.class);
            assertThat(((Result.Rejected) refused).error()).isInstanceOf(InvalidArgumentException.class)
                    .hasMessageContaining("waits for lock 'b' through multi-lock [a, b]");
        }
        Applied released = apply(new Command.Release(holder, HASH, "b", 1));

        assertThat(released.events()).contains(new Event.Granted(group, "ab", new FencingToken("a", 1), "tester"),
                new Event.Granted(group, "ab", new FencingToken("b", 2), "tester"));
    }

    /** A group still at level 4 may run the previous release, so it applies such an acquire as that release did. */
    @Test
    void acquire_ofALockItsSessionsMultiLockWaitsForBelowLevel5_answersThePlaceAsBefore() {
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "b", "hold-b", false));
        long group = open();
        all(group, "ab", "a", "b");

        assertThat(apply(new Command.Acquire(group, HASH, "b", "b-alone", false)).result())
                .isEqualTo(new Result.Queued("b", 0));
    }

    @Test
    void acquireAll_namingALockTwice_isInvalidArgumentNamingIt() {
        assertThatThrownBy(() -> Command.AcquireAll.of(1, HASH, List.of("a", "b", "a"), "r", true))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("locks");
                    assertThat(e.value()).isEqualTo("a");
                }).hasMessageContaining("names lock 'a' twice");
    }

    @Test
    void acquireAll_tooManyOrNoLocks_isInvalidArgumentNamingTheLimit() {
        List<String> many = new java.util.ArrayList<>();
        for (int i = 0; i <= Command.AcquireAll.LOCKS_MAX; i++) {
            many.add("lock-" + i);
        }
        assertThatThrownBy(() -> Command.AcquireAll.of(1, HASH, many, "r", true))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("locksPerAcquireMax 64")
                .hasMessageContaining("65 locks");
        assertThatThrownBy(() -> Command.AcquireAll.of(1, HASH, Collections.emptyList(), "r", true))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("names 0 locks");
    }

    @Test
    void codec_multiLockAndItsResult_roundTrip() {
        Command command = Command.AcquireAll.of(4, HASH, List.of("b", "a"), "r", true);
        assertThat(CommandCodec.decodeCommands(CommandCodec.encodeCommands(List.of(command))))
                .containsExactly(command);
        Result result = new Result.GrantedAll(List.of(new FencingToken("b", 3), new FencingToken("a", 9)));
        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(List.of(result)))).containsExactly(result);
    }

    /**
     * A snapshot whose multi-lock wait names a lock twice, as no AcquireAll may: it passed the invariants when read, and
     * granting the wait later issued that lock twice in one step (an assertion failure, halting the peer).
     */
    @Test
    void readSnapshot_multiLockWaitNamingALockTwice_refusedNamingIt() throws IOException {
        long holder = open();
        apply(new Command.Acquire(holder, HASH, "a", "hold-a", false));
        apply(new Command.Acquire(open(), HASH, "a", "wait-a", true));
        byte[] bytes = LockMachineFixture.snapshot(machine);

        byte[] corrupt = withGroup(bytes, "wait-a", "a", "a");

        assertThat(read(bytes).describe("a")).isEqualTo(machine.describe("a"));
        assertThatThrownBy(() -> read(corrupt)).isInstanceOf(IOException.class)
                .hasMessageContaining("multi-lock wait [a, a] of session 2 names lock a twice");
    }

    /** Returns a snapshot whose plain wait of request {@code requestId} is made a multi-lock wait on {@code group}. */
    private static byte[] withGroup(byte[] snapshot, String requestId, String... group) throws IOException {
        byte[] marker = requestId.getBytes(StandardCharsets.UTF_8);
        int at = 0;
        while (!Arrays.equals(snapshot, at, at + marker.length, marker, 0, marker.length)) {
            at++;
        }
        int count = at + marker.length + 1; // after the request id and the mode: the group's count, 0
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        DataOutputStream data = new DataOutputStream(out);
        data.write(snapshot, 0, count);
        data.writeInt(group.length);
        for (String name : group) {
            data.writeUTF(name);
        }
        data.write(snapshot, count + 4, snapshot.length - count - 4);
        return out.toByteArray();
    }

    private static LockStateMachine read(byte[] snapshot) throws IOException {
        return LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(snapshot)), Limits.DEFAULT);
    }
}

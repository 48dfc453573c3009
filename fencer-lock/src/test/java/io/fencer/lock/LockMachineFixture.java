package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The machine the state machine's example tests drive, and their helpers: every command applied through
 * {@link #apply} is followed by a check of the machine's invariants.
 */
abstract class LockMachineFixture {
    static final long TTL_MILLIS = 10_000;
    static final String IDENTITY = "tester";
    /** The secret hash of every session the tests open, unless a test is about secrets. */
    static final SecretHash HASH = SecretHash.of("the tests' session secret");

    LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);

    Applied apply(Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        return applied;
    }

    long open() {
        return open(IDENTITY, HASH);
    }

    long open(String identity, SecretHash hash) {
        return ((Result.SessionOpened) apply(new Command.OpenSession("", TTL_MILLIS, identity, hash)).result())
                .sessionId();
    }

    FencingToken acquire(long sessionId, String lock) {
        Result result = apply(new Command.Acquire(sessionId, HASH, lock, "acquire-" + lock, false)).result();
        assertThat(result).isInstanceOf(Result.Granted.class);
        return ((Result.Granted) result).token();
    }

    void queue(long sessionId, String lock, String requestId) {
        Result result = apply(new Command.Acquire(sessionId, HASH, lock, requestId, true)).result();
        assertThat(result).isInstanceOf(Result.Queued.class);
    }

    static <E extends FencerException> E rejected(Applied applied, Class<E> type) {
        assertThat(applied.result()).isInstanceOf(Result.Rejected.class);
        assertThat(applied.events()).isEmpty();
        FencerException error = ((Result.Rejected) applied.result()).error();
        assertThat(error).isInstanceOf(type);
        return type.cast(error);
    }

    static byte[] snapshot(LockStateMachine machine) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            machine.writeSnapshot(out);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return bytes.toByteArray();
    }

    LockStateMachine restore(byte[] bytes) throws IOException {
        return LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(bytes)),
                machine.limits());
    }
}

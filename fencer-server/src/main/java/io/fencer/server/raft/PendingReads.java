package io.fencer.server.raft;

import io.fencer.lock.LockStateMachine;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * The linearizable reads of {@link RaftLockStateMachine} waiting for their turn: the proposer registers a read under
 * an id and sends the id as the message of a Ratis read request; once the read index is applied, Ratis asks the state
 * machine's {@code query} with that message, which takes the read from here and runs it under the state machine's
 * lock. Bounded by the proposer, which registers a read per call and cancels those whose request failed.
 */
final class PendingReads {
    private final ConcurrentHashMap<Long, Task<?>> reads = new ConcurrentHashMap<>();

    /** Registers a read for the message {@link #message(long)} of {@code id}; returns its answer's future. */
    <T> CompletableFuture<T> register(long id, Function<LockStateMachine, T> reader) {
        Task<T> task = new Task<>(reader);
        Task<?> previous = reads.putIfAbsent(id, task);
        if (previous != null) {
            throw new IllegalStateException("read id " + id + " registered twice");
        }
        return task.result;
    }

    /** Forgets a registered read whose request failed; returns true when it had not run yet. */
    boolean cancel(long id) {
        return reads.remove(id) != null;
    }

    /** Returns the message of a read request for the read registered under {@code id}. */
    static Message message(long id) {
        ByteBuffer bytes = ByteBuffer.allocate(Long.BYTES).putLong(0, id);
        return Message.valueOf(ByteString.copyFrom(bytes));
    }

    /**
     * Takes the read a query's message names, or null when none waits under its id (cancelled, or taken before).
     *
     * @throws IllegalArgumentException naming the size when the message is no read id
     */
    Task<?> take(ByteString message) {
        if (message.size() != Long.BYTES) {
            throw new IllegalArgumentException("query of " + message.size() + " bytes, expected a read id of "
                    + Long.BYTES);
        }
        return reads.remove(message.asReadOnlyByteBuffer().getLong());
    }

    /** A read waiting for its turn; completes its future with the reader's answer or its failure. */
    static final class Task<T> {
        private final Function<LockStateMachine, T> reader;
        private final CompletableFuture<T> result = new CompletableFuture<>();

        Task(Function<LockStateMachine, T> reader) {
            this.reader = Objects.requireNonNull(reader, "reader");
        }

        void run(LockStateMachine machine) {
            try {
                result.complete(reader.apply(machine));
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        }

        void fail(RuntimeException error) {
            result.completeExceptionally(error);
        }
    }
}

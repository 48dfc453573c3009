package io.fencer.store;

import io.fencer.core.FencingToken;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A write queued for a commit, and then its outcome. The committer takes it into a batch, decides its outcome in
 * arrival order among the writes to its scope, and completes it after the batch is durable (or failed).
 *
 * <p>The outcome is decided on the committer's thread and published by {@link #complete()} through the future,
 * whose callbacks run on that thread: they must be short (hand an answer to the transport, wake a thread).
 */
final class PendingWrite {
    final String scope;
    final FencingToken token;
    final List<Op> ops;
    /** Null for a write without an idempotency key. */
    final String idempotencyKey;
    /** The {@link OpsDigest} of the request when it has an idempotency key, else null. */
    final byte[] opsDigest;
    /** The bytes of keys and values of {@link #ops}, counted against the batch's and the queue's byte bounds. */
    final long bytes;
    private final CompletableFuture<WriteResult> outcome = new CompletableFuture<>();
    private WriteResult result;
    private RuntimeException failure;

    PendingWrite(String scope, FencingToken token, List<Op> ops, String idempotencyKey, byte[] opsDigest,
            long bytes) {
        assert (idempotencyKey == null) == (opsDigest == null) : "idempotency key " + idempotencyKey
                + " with ops digest " + opsDigest;
        this.scope = scope;
        this.token = token;
        this.ops = ops;
        this.idempotencyKey = idempotencyKey;
        this.opsDigest = opsDigest;
        this.bytes = bytes;
    }

    /** Decides that the write is answered with {@code decided}; call before completing. */
    void decide(WriteResult decided) {
        assert !outcome.isDone() : "write of token " + token + " decided after it completed";
        result = decided;
        failure = null;
    }

    /** Decides that the write is refused, or failed, with {@code decided}; call before completing. */
    void decide(RuntimeException decided) {
        assert !outcome.isDone() : "write of token " + token + " decided after it completed: " + decided;
        result = null;
        failure = decided;
    }

    /** Returns true when the decided outcome applies this write now (not a refusal, not a replay). */
    boolean isAppliedNow() {
        return result != null && !result.replayed();
    }

    boolean isDecided() {
        return result != null || failure != null;
    }

    /** Publishes the decided outcome: completes the future, running its callbacks on this thread. */
    void complete() {
        assert isDecided() : "write of token " + token + " completed without an outcome";
        assert !outcome.isDone() : "write of token " + token + " completed twice";
        if (failure != null) {
            outcome.completeExceptionally(failure);
        } else {
            outcome.complete(result);
        }
    }

    /** Returns the outcome: the result, or the refusal or failure it completes with exceptionally. */
    CompletableFuture<WriteResult> outcome() {
        return outcome;
    }

    @Override
    public String toString() {
        return "PendingWrite[" + scope + ", " + token + ", " + ops.size() + " ops, " + bytes + " bytes, done="
                + outcome.isDone() + "]";
    }
}

package io.fencer.store;

/**
 * The outcome of an admitted write or unit commit, durable when returned.
 *
 * @param scope the scope written
 * @param token the value of the token that wrote (the scope's bound lock is the token's lock)
 * @param accepted the scope's accepted token value after the write: {@code max(previous, token)}
 * @param revision the scope's revision after the write: the count of writes and commits applied to it, so
 *     a replayed result shows the same revision as the first
 * @param opsApplied the number of ops the write applied
 * @param replayed true when an idempotency key matched an earlier write with the same token and ops: this is
 *     that write's result and nothing was applied again
 */
public record WriteResult(String scope, long token, long accepted, long revision, int opsApplied,
        boolean replayed) {

    WriteResult asReplay() {
        return new WriteResult(scope, token, accepted, revision, opsApplied, true);
    }
}

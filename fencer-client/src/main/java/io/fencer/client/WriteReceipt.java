package io.fencer.client;

/**
 * The store's acknowledgement of an applied write or unit commit: durable (fsync'd) when received.
 *
 * @param scope the scope written
 * @param token the value of the token the write was admitted with
 * @param accepted the scope's accepted token value after the write
 * @param revision the scope's count of applied writes and commits, this one included
 * @param opsApplied the number of ops applied
 * @param replayed true when an idempotent retry was answered with the first write's result: nothing was applied
 *     again
 */
public record WriteReceipt(String scope, long token, long accepted, long revision, int opsApplied,
        boolean replayed) {}

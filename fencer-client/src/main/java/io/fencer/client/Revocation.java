package io.fencer.client;

import io.fencer.core.FencingToken;

/**
 * What {@link FencerClient#revoke} did: the grant it ended and what became of the lock.
 *
 * <p>A revoke whose answer was lost (a deadline, a connection cut after the command committed) is retried by the
 * client. When the retry finds the grant it meant to revoke already ended, with the lock free or held under a later
 * token, the first attempt most likely revoked it (or its holder released it meanwhile: a free lock keeps no record
 * of how its last grant ended): the answer is then a revocation with {@link #alreadyEnded()} true, whose
 * {@link #next()} is the lock's holder at the time of the retry (not necessarily the grant the revoke made) and
 * whose {@link #delayed()} is false (unknown). The lock's Watch tells exactly what happened
 * ({@code fencer lock watch NAME}: a RELEASED event with end cause REVOKED, and who revoked).
 *
 * @param revoked the grant revoked (its sequencer unsigned); its holder's session stays open but no longer holds it
 * @param next the waiter granted in its place under a higher token (unsigned), or null: nobody waited, or the lock
 *     waits out its lock-delay first; when {@code alreadyEnded}, the lock's holder when the retry was answered
 * @param delayed true when the lock waits out the server's lock-delay before its next grant (the revoked holder may
 *     still be writing to resources that check no token)
 * @param alreadyEnded true when this is not the service's answer to the revoke but a retry's finding that the grant
 *     had already ended (perhaps by the revoke's first attempt, whose answer was lost)
 */
public record Revocation(FencingToken revoked, FencingToken next, boolean delayed, boolean alreadyEnded) {
    /** The service's own answer to a revoke: {@link #alreadyEnded()} false. */
    public Revocation(FencingToken revoked, FencingToken next, boolean delayed) {
        this(revoked, next, delayed, false);
    }
}

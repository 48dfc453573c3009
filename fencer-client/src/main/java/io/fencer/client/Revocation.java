package io.fencer.client;

import io.fencer.core.FencingToken;

/**
 * What {@link FencerClient#revoke} did: the grant it ended and what became of the lock.
 *
 * @param revoked the grant revoked (its sequencer unsigned); its holder's session stays open but no longer holds it
 * @param next the waiter granted in its place under a higher token (unsigned), or null: nobody waited, or the lock
 *     waits out its lock-delay first
 * @param delayed true when the lock waits out the server's lock-delay before its next grant (the revoked holder may
 *     still be writing to resources that check no token)
 */
public record Revocation(FencingToken revoked, FencingToken next, boolean delayed) {}

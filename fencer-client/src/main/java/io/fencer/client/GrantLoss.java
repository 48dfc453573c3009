package io.fencer.client;

import io.fencer.core.FencingToken;

/**
 * Why a grant ended without its holder releasing it.
 *
 * @param token the grant's token
 * @param cause the kind of end
 * @param revokedBy {@link Cause#REVOKED}: the identity that revoked the grant (its client certificate's common name,
 *     or "anonymous" without an ACL); otherwise null
 * @param detail a sentence for logs
 */
public record GrantLoss(FencingToken token, Cause cause, String revokedBy, String detail) {
    /** The kinds of grant loss. */
    public enum Cause {
        /**
         * An operator revoked the grant ({@link FencerClient#revoke}): the session stays open, its other grants are
         * untouched, and the lock passes to its next waiter under a higher token.
         */
        REVOKED,
        /** The grant's session was lost ({@link Session#lost()} says why): the service released its every lock. */
        SESSION_LOST,
        /**
         * The service answered the grant before it was durable and restarted, or failed a log entry, first: the grant
         * may never have taken effect, and a later grant of the lock carries a higher token. The session stays open;
         * the client releases the token and gives the lock's place up, so that the session holds nothing it does not
         * know of. Only a service that serves as a group of one answers a waiting acquire of a plain lock this early.
         */
        NOT_DURABLE
    }
}

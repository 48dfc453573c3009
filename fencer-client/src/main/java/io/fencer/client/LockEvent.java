package io.fencer.client;

import io.fencer.core.FencingToken;

/**
 * One event of a lock, as a {@link FencerClient#watch watch} delivers it, at its position in the lock service's log.
 *
 * @param position where the event is in the log: resume after it with {@link WatchPosition#next()}
 * @param kind what happened
 * @param lock the lock's name
 * @param token GRANTED, RELEASED, EXPIRED: the grant's token (its sequencer unsigned); otherwise null
 * @param sessionId the session that queued, was granted, or whose grant or wait ended
 * @param endCause RELEASED, EXPIRED: how the grant ended (RELEASED, SESSION_CLOSED, SESSION_EXPIRED, or REVOKED: an
 *     operator revoked it, see {@link FencerClient#revoke}); otherwise null
 * @param revokedBy REVOKED: the identity that revoked the grant; otherwise null
 * @param holderIdentity GRANTED: the identity that opened the holder's session (its client certificate's common name,
 *     or "anonymous"), the one the server's grant log names; otherwise null (and null from a server of an earlier
 *     release)
 */
public record LockEvent(WatchPosition position, Kind kind, String lock, FencingToken token, long sessionId,
        String endCause, String revokedBy, String holderIdentity) {

    /** An event without a holder's identity: an end, a wait, or a grant reported by a server of an earlier release. */
    public LockEvent(WatchPosition position, Kind kind, String lock, FencingToken token, long sessionId,
            String endCause, String revokedBy) {
        this(position, kind, lock, token, sessionId, endCause, revokedBy, null);
    }

    /** An event of a grant that was not revoked. */
    public LockEvent(WatchPosition position, Kind kind, String lock, FencingToken token, long sessionId,
            String endCause) {
        this(position, kind, lock, token, sessionId, endCause, null, null);
    }

    /** What happened to the lock. */
    public enum Kind {
        /** A session joined the lock's queue. */
        QUEUED,
        /** The lock was granted under {@link #token()}. */
        GRANTED,
        /** The grant {@link #token()} was released, its session closed, or it was revoked ({@link #endCause()}). */
        RELEASED,
        /** The grant {@link #token()} ended because its session expired. */
        EXPIRED,
        /** A session's wait ended without a grant: cancelled, or its session ended. */
        WAIT_ENDED
    }
}

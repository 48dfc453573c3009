package io.fencer.lock;

/**
 * The answer to "is this token still the holder's?" (Chubby's CheckSequencer).
 *
 * @param status what the token is now
 * @param lastToken the latest token issued for the lock
 * @param holderSessionId when {@link Status#CURRENT}: the holder's session, for the leader to look up its lease;
 *     never shown to clients
 * @param holderIdentity when {@link Status#CURRENT}: the identity that opened the holder's session; otherwise null
 * @param ended when the grant ended and the lock remembers how: why; otherwise null
 */
public record Validation(Status status, long lastToken, long holderSessionId, String holderIdentity,
        EndCause ended) {
    /** What a presented token is now. */
    public enum Status {
        /** It is the current holder's. */
        CURRENT,
        /** A later grant exists; {@code lastToken} superseded it. */
        SUPERSEDED,
        /** No later grant, but its holder no longer holds the lock. */
        ENDED,
        /** It was never issued: its value exceeds every token issued for the lock. */
        NEVER_ISSUED
    }
}

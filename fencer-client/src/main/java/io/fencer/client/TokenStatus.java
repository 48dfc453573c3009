package io.fencer.client;

import java.time.Duration;

/**
 * What the lock service says of one token (Chubby's CheckSequencer).
 *
 * @param status CURRENT, SUPERSEDED, ENDED or NEVER_ISSUED
 * @param lastToken the latest token issued for the lock
 * @param supersededBy when SUPERSEDED: the token that superseded it; otherwise 0
 * @param holderIdentity when CURRENT: the identity that opened the holder's session; otherwise null
 * @param leaseRemaining when CURRENT: how long the holder's lease still runs, as seen by the leader
 * @param ended when the grant ended and the service remembers how (RELEASED, SESSION_CLOSED,
 *     SESSION_EXPIRED), or null
 */
public record TokenStatus(Status status, long lastToken, long supersededBy, String holderIdentity,
        Duration leaseRemaining, String ended) {
    /** What a token is now. */
    public enum Status { CURRENT, SUPERSEDED, ENDED, NEVER_ISSUED }
}

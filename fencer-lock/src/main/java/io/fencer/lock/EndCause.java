package io.fencer.lock;

/** Why a grant ended. */
public enum EndCause {
    RELEASED,
    SESSION_CLOSED,
    SESSION_EXPIRED,
    /** An operator revoked the grant ({@link Command.Revoke}); only at format level 5 and above. */
    REVOKED
}

package io.fencer.lock;

/** Why a grant ended. */
public enum EndCause {
    RELEASED,
    SESSION_CLOSED,
    SESSION_EXPIRED
}

package io.fencer.client;

import io.fencer.core.FencingToken;
import java.util.Objects;

/**
 * What the lock service says about a token a store refused as stale: the question a client asks after a refusal, to
 * tell "I was paused and superseded" from "the lock service is broken". Made by {@link StaleWriteException#diagnose()}.
 *
 * @param kind the verdict
 * @param presented the refused token
 * @param scope the scope that refused it
 * @param accepted the scope's accepted token value at the refusal
 * @param supersededBy when {@link Kind#SUPERSEDED}: the latest token the lock service issued for the lock; else 0
 * @param endCause how the presented token's grant ended, when the lock service remembers (RELEASED,
 *     SESSION_CLOSED, SESSION_EXPIRED); else null
 * @param detail one sentence for logs and people
 */
public record StaleDiagnosis(Kind kind, FencingToken presented, String scope, long accepted, long supersededBy,
        String endCause, String detail) {

    /** The verdicts. */
    public enum Kind {
        /** The expected case: a later grant of the lock exists ({@link #supersededBy()}); the holder was paused. */
        SUPERSEDED,
        /**
         * No later grant exists, but the presented token's grant has ended (released, session closed or expired)
         * and the scope has already accepted it (a STRICT scope admits one write per grant).
         */
        ENDED,
        /**
         * The presented token still holds the lock, and the scope has already accepted it: a STRICT scope admits
         * one write per grant.
         */
        ALREADY_USED,
        /**
         * The lock service and the store disagree: the service says the presented token is current (or never
         * issued anything as high as the scope's accepted token) while the store has accepted a higher one. A token
         * was issued twice (the lock service lost state) or the store was fed a forged token. Logged as WARNING.
         */
        FENCING_INCONSISTENCY,
        /** The lock service could not be asked (unreachable, or no lock service client was configured). */
        UNKNOWN
    }

    public StaleDiagnosis {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(presented, "presented");
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(detail, "detail");
    }

    /** Returns {@code kind: detail}. */
    @Override
    public String toString() {
        return kind + ": " + detail;
    }
}

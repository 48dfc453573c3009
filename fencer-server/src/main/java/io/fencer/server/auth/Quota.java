package io.fencer.server.auth;

import java.util.Locale;
import java.util.Optional;

/**
 * A per-identity quota an ACL file may set ({@code IDENTITY quota KIND NUMBER}), as the word the file uses and the
 * name of the quota it sets: what the sessions one identity opened may hold at once on the lock server, the Watch
 * streams it may have open on one peer, and the store units it may have open at once.
 */
public enum Quota {
    /** Sessions open: {@code sessionsPerIdentityMax}. */
    SESSIONS("sessionsPerIdentityMax"),
    /** Lock records held or waited for: {@code locksPerIdentityMax}. */
    LOCKS("locksPerIdentityMax"),
    /** Waits queued: {@code waitersPerIdentityMax}. */
    WAITERS("waitersPerIdentityMax"),
    /** Watch streams open on one peer: {@code watchersPerIdentityMax}. */
    WATCHERS("watchersPerIdentityMax"),
    /** Store units open on one store (its leader's, for the replicated store): {@code unitsPerIdentityMax}. */
    UNITS("unitsPerIdentityMax");

    private final String limit;

    Quota(String limit) {
        this.limit = limit;
    }

    /**
     * Returns the word of this quota in ACL files: {@code sessions}, {@code locks}, {@code waiters},
     * {@code watchers} or {@code units}.
     */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Returns the name of the quota it sets, as errors and server options name it. */
    public String limit() {
        return limit;
    }

    /** Returns the quota spelt {@code word} (exactly, lower case), if any. */
    static Optional<Quota> ofWord(String word) {
        for (Quota quota : values()) {
            if (quota.word().equals(word)) {
                return Optional.of(quota);
            }
        }
        return Optional.empty();
    }
}

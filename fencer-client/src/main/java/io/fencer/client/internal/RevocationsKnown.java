package io.fencer.client.internal;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The revocations the service has named for one session, most recent last: every keepalive answer repeats them (at
 * most 8), so the known ones are skipped; and a grant tracked after its revocation was named learns it here.
 * Thread-safe.
 */
final class RevocationsKnown {
    /** Revocations remembered: twice what the service repeats per session. */
    static final int REVOCATIONS_KNOWN_MAX = 16;

    /** A grant by its lock and token value. */
    private record Key(String lock, long value) {}

    private final Map<Key, String> known = new LinkedHashMap<>() { // guarded by this
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, String> eldest) {
            return size() > REVOCATIONS_KNOWN_MAX;
        }
    };

    /** Notes that {@code revokedBy} revoked the grant {@code value} of {@code lock}; false when known already. */
    synchronized boolean learn(String lock, long value, String revokedBy) {
        return known.putIfAbsent(new Key(lock, value), revokedBy) == null;
    }

    /** Returns who revoked the grant {@code value} of {@code lock}, or null when no revocation of it is known. */
    synchronized String revokedBy(String lock, long value) {
        return known.get(new Key(lock, value));
    }
}

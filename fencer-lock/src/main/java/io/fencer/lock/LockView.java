package io.fencer.lock;

import io.fencer.core.FencingToken;
import java.util.List;

/**
 * A read-only picture of one lock.
 *
 * @param holder the holder's token, or null when free
 * @param holderSessionId the holder's session, or 0; for the server's own bookkeeping, never shown to clients
 * @param holderIdentity the identity that opened the holder's session, or null when free
 * @param waiters the queue, first in line first
 * @param lastToken the latest token ever issued for the lock (at least the global floor)
 * @param delayed true while in lock-delay after its holder's session expired
 * @param lastEnd how the last grant ended, or null
 */
public record LockView(String lock, FencingToken holder, long holderSessionId, String holderIdentity,
        List<WaiterView> waiters,
        long lastToken, boolean delayed, EndCause lastEnd) {
    public LockView {
        waiters = List.copyOf(waiters);
    }

    /** One queued wait. */
    public record WaiterView(long sessionId, String requestId) {}
}

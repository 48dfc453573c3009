package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import java.util.List;

/**
 * A read-only picture of one lock.
 *
 * @param holder the holder's token, or null when free
 * @param holderSessionId the holder's session, or 0; for the server's own bookkeeping, never shown to clients
 * @param holderIdentity the identity that opened the holder's session, or null when free
 * @param waiters the queue, first in line first: all of it, or its first places when shown in part
 * @param lastToken the latest token ever issued for the lock (at least the global floor)
 * @param delayed true while in lock-delay after its holder's session expired
 * @param lastEnd how the last grant ended, or null
 * @param sharedHolders the shared (reader) holders in grant order, all or the first ones as {@code waiters}; empty
 *     while {@code holder} is set
 * @param waitersTotal how many sessions wait, at least as many as {@code waiters} shows
 * @param sharedHoldersTotal how many shared holders hold the lock, at least as many as {@code sharedHolders} shows
 */
public record LockView(String lock, FencingToken holder, long holderSessionId, String holderIdentity,
        List<WaiterView> waiters, long lastToken, boolean delayed, EndCause lastEnd,
        List<SharedHolderView> sharedHolders, int waitersTotal, int sharedHoldersTotal) {
    public LockView {
        waiters = List.copyOf(waiters);
        sharedHolders = List.copyOf(sharedHolders);
        if (waitersTotal < waiters.size() || sharedHoldersTotal < sharedHolders.size()) {
            throw new IllegalArgumentException("lock " + lock + " counts " + waitersTotal + " waiters and "
                    + sharedHoldersTotal + " shared holders, fewer than it shows: " + waiters.size() + " and "
                    + sharedHolders.size());
        }
    }

    /** As the canonical constructor for a lock shown whole. */
    public LockView(String lock, FencingToken holder, long holderSessionId, String holderIdentity,
            List<WaiterView> waiters, long lastToken, boolean delayed, EndCause lastEnd,
            List<SharedHolderView> sharedHolders) {
        this(lock, holder, holderSessionId, holderIdentity, waiters, lastToken, delayed, lastEnd, sharedHolders,
                waiters.size(), sharedHolders.size());
    }

    /** As the canonical constructor for a lock shown whole, without shared holders. */
    public LockView(String lock, FencingToken holder, long holderSessionId, String holderIdentity,
            List<WaiterView> waiters, long lastToken, boolean delayed, EndCause lastEnd) {
        this(lock, holder, holderSessionId, holderIdentity, waiters, lastToken, delayed, lastEnd, List.of());
    }

    /**
     * Returns a token that holds the lock now: the exclusive holder's, else the latest reader's shown (the latest of
     * all when shown whole), else null.
     */
    public FencingToken anyHolder() {
        return holder != null ? holder : sharedHolders.isEmpty() ? null
                : sharedHolders.get(sharedHolders.size() - 1).token();
    }

    /** One queued wait, in the mode it asked for. */
    public record WaiterView(long sessionId, String requestId, LockMode mode) {
        /** An exclusive wait. */
        public WaiterView(long sessionId, String requestId) {
            this(sessionId, requestId, LockMode.EXCLUSIVE);
        }
    }

    /** One shared holder: its token (mode shared), its session and the identity that opened it. */
    public record SharedHolderView(FencingToken token, long sessionId, String identity) {}
}

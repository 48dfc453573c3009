package io.fencer.client;

import io.fencer.core.FencingToken;
import java.util.List;

/**
 * What the lock service says of one lock.
 *
 * @param lock the name
 * @param holder the holder's token, or null when free
 * @param holderIdentity the identity that opened the holder's session (its client certificate's common name under
 *     TLS with client certificates, else "anonymous"), or null when free; the service does not show session ids
 * @param waiterSessionIds waiting sessions, first in line first: the first 1,000 when more wait ({@code waitersTotal})
 * @param lastToken the latest token ever issued for the lock
 * @param delayed true while in lock-delay after its holder's session expired
 * @param lastEnd how the last grant ended (RELEASED, SESSION_CLOSED, SESSION_EXPIRED), or null
 * @param sharedHolders the tokens of the shared (reader) holders, in grant order (the first 1,000 when more hold it:
 *     {@code sharedHoldersTotal}); empty while {@code holder} is set
 * @param waitersTotal how many sessions wait, at least as many as {@code waiterSessionIds} lists
 * @param sharedHoldersTotal how many shared holders hold the lock, at least as many as {@code sharedHolders} lists
 */
public record LockStatus(String lock, FencingToken holder, String holderIdentity, List<Long> waiterSessionIds,
        long lastToken, boolean delayed, String lastEnd, List<FencingToken> sharedHolders, int waitersTotal,
        int sharedHoldersTotal) {
    public LockStatus {
        waiterSessionIds = List.copyOf(waiterSessionIds);
        sharedHolders = List.copyOf(sharedHolders);
        if (waitersTotal < waiterSessionIds.size() || sharedHoldersTotal < sharedHolders.size()) {
            throw new IllegalArgumentException("lock " + lock + " counts " + waitersTotal + " waiters and "
                    + sharedHoldersTotal + " shared holders, fewer than it lists: " + waiterSessionIds.size()
                    + " and " + sharedHolders.size());
        }
    }

    /** A lock whose waiters and shared holders are listed whole. */
    public LockStatus(String lock, FencingToken holder, String holderIdentity, List<Long> waiterSessionIds,
            long lastToken, boolean delayed, String lastEnd, List<FencingToken> sharedHolders) {
        this(lock, holder, holderIdentity, waiterSessionIds, lastToken, delayed, lastEnd, sharedHolders,
                waiterSessionIds.size(), sharedHolders.size());
    }

    /** A lock without shared holders, its waiters listed whole. */
    public LockStatus(String lock, FencingToken holder, String holderIdentity, List<Long> waiterSessionIds,
            long lastToken, boolean delayed, String lastEnd) {
        this(lock, holder, holderIdentity, waiterSessionIds, lastToken, delayed, lastEnd, List.of());
    }
}

package io.fencer.client.internal;

import io.fencer.core.FencingToken;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The highest token one session has released, or begun to release, of each lock (a semaphore's permit counts as its
 * slot's lock), for the locks it released most recently.
 *
 * <p>Why a session keeps them past the release's answer: an Acquire of a lock the session is still releasing finds
 * its old grant held and answers with it ({@code acquireAgain} in the state machine). While the release is unsettled
 * the session knows it is releasing that grant; but the release can take effect, and its answer reach the client,
 * between the service's answer to the Acquire and the client reading it: a failover re-sends the release on another
 * call than the Acquire, and the two answers race. The session then holds nothing while the Acquire says it holds the
 * old token, and a waiter is granted the lock under the next one. A lock's tokens only grow (a dropped lock's last
 * token is folded into the floor), so a token at or below one this session released of that lock is never a new
 * grant: remembering the highest is enough, whatever the order of the answers.
 *
 * <p>At most {@link #LOCKS_MAX} locks are remembered, the least recently released forgotten first: the window this
 * closes is one Acquire's round trip, and a session that released that many other locks meanwhile is not in it.
 * Thread-safe.
 */
final class ReleasedTokens {
    /** The most locks remembered per session. */
    static final int LOCKS_MAX = 4_096;

    private final LinkedHashMap<String, Long> highest = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > LOCKS_MAX;
        }
    };

    /** Notes that {@code token} is being released: it, and every earlier token of its lock, is no new grant. */
    synchronized void releasing(FencingToken token) {
        Long known = highest.remove(token.lock()); // re-inserted: the most recently released is forgotten last
        highest.put(token.lock(), known == null ? token.value() : Math.max(known, token.value()));
    }

    /** True when this session released, or is releasing, {@code token} or a later token of its lock. */
    synchronized boolean covers(FencingToken token) {
        Long known = highest.get(token.lock());
        return known != null && known >= token.value();
    }

    /** How many locks are remembered. */
    synchronized int size() {
        return highest.size();
    }
}

package io.fencer.lock;

import java.util.List;

/**
 * What a peer needs to answer a grant before the release that makes it is durable (the server's early hand-off):
 * who holds a plain lock exclusively now, the token its next grant takes, and the sessions first in its queue whose
 * waits are plain and exclusive, in order, up to the first that is not (shared, or part of a multi-lock).
 *
 * @param holderSessionId the exclusive holder's session
 * @param holderToken the exclusive holder's token value
 * @param nextToken the token the lock's next grant takes, {@code max(lastToken, floor) + 1}
 * @param plainWaiters the sessions first in the queue, each waiting plainly and exclusively, first in line first
 */
public record HandOffView(long holderSessionId, long holderToken, long nextToken, List<Long> plainWaiters) {
    public HandOffView {
        plainWaiters = List.copyOf(plainWaiters);
        if (holderSessionId == 0 || holderToken <= 0 || nextToken <= holderToken) {
            throw new IllegalArgumentException("a hand-off needs a holder below the next token: session "
                    + holderSessionId + ", token " + holderToken + ", next " + nextToken);
        }
    }
}

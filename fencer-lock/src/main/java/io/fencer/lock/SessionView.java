package io.fencer.lock;

import java.util.List;

/**
 * A read-only picture of one open session: its lease, who opened it, the hash of its secret (which the leader
 * checks keepalives against), the locks it holds and the locks it waits for.
 */
public record SessionView(long sessionId, long ttlMillis, String identity, SecretHash secretHash, List<String> held,
        List<String> waiting) {
    public SessionView {
        held = List.copyOf(held);
        waiting = List.copyOf(waiting);
    }
}

package io.fencer.lock;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.TreeSet;

/**
 * The mutable state of one open session: its lease, who opened it and the hash of its secret, the locks it holds
 * and the locks it waits for.
 */
final class SessionRecord {
    final long id;
    final long ttlMillis;
    /** The request id that opened it, or empty; a retried open with the same id returns this session. */
    final String requestId;
    /** The client identity that opened it, shown as the holder of its locks. */
    final String identity;
    /** The hash of the secret it was opened with: a command acts for this session only with the same hash. */
    final SecretHash secretHash;
    /** Locks held, in the order acquired: the order in which closing the session releases them. */
    final LinkedHashSet<String> held = new LinkedHashSet<>();
    /** Locks waited for, in the order queued: the order in which closing the session drops the waits. */
    final LinkedHashSet<String> waiting = new LinkedHashSet<>();
    /**
     * Semaphores waited for, in name order (sorted, so that a restored machine, which rebuilds this set from the
     * semaphores' queues, drops them in the same order as the machine it was written from).
     */
    final TreeSet<String> waitingPermits = new TreeSet<>();

    SessionRecord(long id, long ttlMillis, String requestId, String identity, SecretHash secretHash) {
        this.id = id;
        this.ttlMillis = ttlMillis;
        this.requestId = requestId;
        this.identity = identity;
        this.secretHash = secretHash;
    }

    /** The locks this session holds or waits for, which {@link Limits#locksPerSessionMax()} bounds. */
    int lockCount() {
        return held.size() + waiting.size() + waitingPermits.size();
    }

    SessionView view() {
        return new SessionView(id, ttlMillis, identity, secretHash, List.copyOf(held), List.copyOf(waiting));
    }
}

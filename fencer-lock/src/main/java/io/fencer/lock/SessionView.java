package io.fencer.lock;

import java.util.List;
import java.util.Objects;

/**
 * A read-only picture of one open session: its lease, who opened it, the hash of its secret (which the leader
 * checks keepalives against), the locks it holds and the locks it waits for, the identity its quotas count, and the
 * bound on its lease the leader last recorded.
 *
 * @param quotaIdentity the identity whose per-identity quotas the session counts against
 * @param leaseBoundMillis the most of its lease the session may have left, as last recorded by a leader
 *     ({@link Command.CheckpointLeases}), or -1 when none is recorded (a new leader gives it its whole ttl)
 */
public record SessionView(long sessionId, long ttlMillis, String identity, SecretHash secretHash, List<String> held,
        List<String> waiting, String quotaIdentity, long leaseBoundMillis) {
    public SessionView {
        held = List.copyOf(held);
        waiting = List.copyOf(waiting);
        Objects.requireNonNull(quotaIdentity, "quotaIdentity");
    }

    /** A session whose quotas count its opener's identity and whose lease has no recorded bound. */
    public SessionView(long sessionId, long ttlMillis, String identity, SecretHash secretHash, List<String> held,
            List<String> waiting) {
        this(sessionId, ttlMillis, identity, secretHash, held, waiting, identity, SessionRecord.NO_LEASE_BOUND);
    }

    /**
     * Returns how much lease a new leader gives this session, before the takeover bound: its ttl, or the recorded
     * bound when there is one (it is never more than the ttl).
     */
    public long takeoverLeaseMillis() {
        return leaseBoundMillis < 0 ? ttlMillis : Math.min(ttlMillis, leaseBoundMillis);
    }
}

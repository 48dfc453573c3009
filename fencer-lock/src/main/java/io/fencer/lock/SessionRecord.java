package io.fencer.lock;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The mutable state of one open session: its lease, who opened it and the hash of its secret, the locks it holds
 * and the locks it waits for.
 *
 * <p>The sets of held and waited-for locks change only through the methods here, which keep the usage of the
 * session's quota identity ({@link UsageCounter}) equal to what its sessions hold.
 */
final class SessionRecord {
    /** {@link #leaseBoundMillis} when no bound is recorded: a new leader gives the session its whole ttl. */
    static final long NO_LEASE_BOUND = -1;

    final long id;
    final long ttlMillis;
    /** The request id that opened it, or empty; a retried open with the same id returns this session. */
    final String requestId;
    /** The client identity that opened it, shown as the holder of its locks. */
    final String identity;
    /** The hash of the secret it was opened with: a command acts for this session only with the same hash. */
    final SecretHash secretHash;
    /** The identity whose quotas the session counts against (see {@link Command.OpenSession#quotaIdentity()}). */
    final String quotaIdentity;
    /** The count of {@link #quotaIdentity}, shared with its other sessions. */
    private final UsageCounter usage;
    /**
     * The most of its lease the session may have left, as the leader recorded with {@link Command.CheckpointLeases},
     * in milliseconds, or {@link #NO_LEASE_BOUND}: a new leader gives the session this much (not its whole ttl).
     */
    long leaseBoundMillis = NO_LEASE_BOUND;
    /** Locks held, in the order acquired: the order in which closing the session releases them. */
    private final LinkedHashSet<String> held = new LinkedHashSet<>();
    /** Locks waited for, in the order queued: the order in which closing the session drops the waits. */
    private final LinkedHashSet<String> waiting = new LinkedHashSet<>();
    /**
     * Semaphores waited for, in name order (sorted, so that a restored machine, which rebuilds this set from the
     * semaphores' queues, drops them in the same order as the machine it was written from).
     */
    private final TreeSet<String> waitingPermits = new TreeSet<>();

    SessionRecord(long id, long ttlMillis, String requestId, String identity, SecretHash secretHash,
            String quotaIdentity, UsageCounter usage) {
        assert usage.identity.equals(quotaIdentity) : "counter of " + usage.identity + " for " + quotaIdentity;
        this.id = id;
        this.ttlMillis = ttlMillis;
        this.requestId = requestId;
        this.identity = identity;
        this.secretHash = secretHash;
        this.quotaIdentity = quotaIdentity;
        this.usage = usage;
        usage.add(1, 0, 0);
    }

    /** Locks held, in the order acquired (read-only). */
    Set<String> held() {
        return Collections.unmodifiableSet(held);
    }

    /** Locks waited for, in the order queued (read-only). */
    Set<String> waiting() {
        return Collections.unmodifiableSet(waiting);
    }

    /** Semaphores waited for, in name order (read-only). */
    Set<String> waitingPermits() {
        return Collections.unmodifiableSet(waitingPermits);
    }

    /** Records a grant of {@code lock}; returns false (changing nothing) when it was held already. */
    boolean addHeld(String lock) {
        return count(held.add(lock), 1, 0);
    }

    /** Records the end of the grant of {@code lock}; returns false (changing nothing) when it was not held. */
    boolean removeHeld(String lock) {
        return count(held.remove(lock), -1, 0);
    }

    /** Records a wait queued on {@code lock}; returns false (changing nothing) when it waited already. */
    boolean addWaiting(String lock) {
        return count(waiting.add(lock), 1, 1);
    }

    /** Records that the wait on {@code lock} left its queue; returns false when there was none. */
    boolean removeWaiting(String lock) {
        return count(waiting.remove(lock), -1, -1);
    }

    /** Records a wait queued on semaphore {@code semaphore}; returns false when it waited already. */
    boolean addPermitWait(String semaphore) {
        return count(waitingPermits.add(semaphore), 1, 1);
    }

    /** Records that the wait on semaphore {@code semaphore} left its queue; returns false when there was none. */
    boolean removePermitWait(String semaphore) {
        return count(waitingPermits.remove(semaphore), -1, -1);
    }

    /** Takes the session's own count off its identity's usage, once it has ended holding and waiting for nothing. */
    void ended() {
        assert lockCount() == 0 : "session " + id + " ended with " + lockCount() + " locks";
        usage.add(-1, 0, 0);
    }

    private boolean count(boolean changed, int locks, int waiters) {
        if (changed) {
            usage.add(0, locks, waiters);
        }
        return changed;
    }

    /** The locks this session holds or waits for, which {@link Limits#locksPerSessionMax()} bounds. */
    int lockCount() {
        return held.size() + waiting.size() + waitingPermits.size();
    }

    /** The waits this session has queued, on locks and semaphores. */
    int waitCount() {
        return waiting.size() + waitingPermits.size();
    }

    SessionView view() {
        return new SessionView(id, ttlMillis, identity, secretHash, List.copyOf(held), List.copyOf(waiting),
                quotaIdentity, leaseBoundMillis);
    }
}

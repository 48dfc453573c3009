package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The mutable state of one lock that has a record: its token counter, its holders, its FIFO queue and its
 * lock-delay. A record exists only while the lock is held, waited for or delayed; the state machine drops an
 * idle record at once and folds its counter into the global floor.
 *
 * <p>Holders: either one exclusive holder ({@link #holderSessionId}) or any number of shared holders
 * ({@link #sharedHolders}), never both. Every grant, in either mode, takes the next value of the one counter.
 */
final class LockRecord {
    /** The checked name, for the tokens of this lock: they are made without checking it again. */
    final LockName lockName;
    /** {@code lockName.value()}: the key of the state machine's maps, which are keyed by string. */
    final String name;
    /** The latest token issued for this lock, at least the floor at the time the record was created. */
    long lastToken;
    /** The exclusive holder's session, or 0 when the lock has no exclusive holder. */
    long holderSessionId;
    /** The exclusive holder's token value, or {@link FencingToken#NONE} when the lock has no exclusive holder. */
    long holderTokenValue;
    /** Shared holders in grant order: session id to its token value. Empty while an exclusive holder holds. */
    final LinkedHashMap<Long, Long> sharedHolders = new LinkedHashMap<>();
    /** True while the lock waits out its lock-delay after its holder's session expired. */
    boolean delayed;
    /** The semaphore this lock is a permit slot of, or null for a plain lock; slots never have waiters. */
    SemaphoreRecord semaphore;
    /** How the last grant of this record ended, or null when none ended yet. */
    EndCause lastEnd;
    /**
     * The queue, first in line first: waiting session id to its wait. A LinkedHashMap gives FIFO order, O(1)
     * removal of any waiter (cancel, session end) and a deterministic iteration order.
     */
    final LinkedHashMap<Long, Waiter> waiters = new LinkedHashMap<>();

    /**
     * One queued acquire: the request id to answer, the mode asked for, and for a multi-lock the names of all its
     * locks (it waits in each of their queues, and is granted all of them in one step), else null.
     */
    record Waiter(String requestId, LockMode mode, List<String> group) {
        Waiter(String requestId, LockMode mode) {
            this(requestId, mode, null);
        }
    }

    LockRecord(LockName lockName, long lastToken) {
        this.lockName = lockName;
        this.name = lockName.value();
        this.lastToken = lastToken;
    }

    /** True when an exclusive holder holds the lock. */
    boolean held() {
        return holderSessionId != 0;
    }

    /** True when anybody holds the lock, exclusively or shared. */
    boolean hasHolder() {
        return holderSessionId != 0 || !sharedHolders.isEmpty();
    }

    /** True when nothing keeps this record: no holder, no waiter, no delay. */
    boolean idle() {
        return !hasHolder() && !delayed && waiters.isEmpty();
    }

    /** Returns the exclusive holder's token, or null when the lock has no exclusive holder. */
    FencingToken holderToken() {
        return held() ? FencingToken.of(lockName, holderTokenValue) : null;
    }

    /** Returns the shared token of {@code sessionId}, or null when it holds no shared grant. */
    FencingToken sharedToken(long sessionId) {
        Long value = sharedHolders.get(sessionId);
        return value == null ? null : FencingToken.of(lockName, value, LockMode.SHARED);
    }

    /** Returns the grant {@code sessionId} holds, in either mode, or null. */
    FencingToken tokenOf(long sessionId) {
        return holderSessionId == sessionId && sessionId != 0 ? holderToken() : sharedToken(sessionId);
    }

    /**
     * Returns a token that holds the lock now, for a refused try to name: the exclusive holder's, else the latest
     * shared grant's, else null (the lock is delayed).
     */
    FencingToken anyHolderToken() {
        if (held()) {
            return holderToken();
        }
        FencingToken latest = null;
        for (Map.Entry<Long, Long> holder : sharedHolders.entrySet()) {
            latest = FencingToken.of(lockName, holder.getValue(), LockMode.SHARED);
        }
        return latest;
    }

    /** True when an acquire in {@code mode} could be granted now, ahead of nobody: the FIFO rule. */
    boolean grantableNow(LockMode mode) {
        if (delayed || held() || !waiters.isEmpty()) {
            return false;
        }
        return mode == LockMode.SHARED || sharedHolders.isEmpty();
    }

    /**
     * Returns the queue position of a waiting session (0 = next in line), or -1. Linear in the queue, which
     * {@link Limits#waitersPerLockMax()} bounds; only a retried acquire of a queued session asks.
     */
    int positionOf(long sessionId) {
        int position = 0;
        for (Long waiter : waiters.keySet()) {
            if (waiter == sessionId) {
                return position;
            }
            position++;
        }
        return -1;
    }

    /**
     * Returns the picture of this lock with at most its first {@code shownMax} waiters; {@code holderIdentity} is its
     * exclusive holder session's, or null, and {@code shared} its first shared holders.
     */
    LockView view(String holderIdentity, List<LockView.SharedHolderView> shared, int shownMax) {
        List<LockView.WaiterView> queue = new ArrayList<>(Math.min(shownMax, waiters.size()));
        for (Map.Entry<Long, Waiter> waiter : waiters.entrySet()) {
            if (queue.size() == shownMax) {
                break;
            }
            queue.add(new LockView.WaiterView(waiter.getKey(), waiter.getValue().requestId(),
                    waiter.getValue().mode()));
        }
        return new LockView(name, holderToken(), holderSessionId, holderIdentity, queue, lastToken, delayed,
                lastEnd, shared, waiters.size(), sharedHolders.size());
    }
}

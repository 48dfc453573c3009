package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockName;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The mutable state of one lock that has a record: its token counter, its holder, its FIFO queue and its
 * lock-delay. A record exists only while the lock is held, waited for or delayed; the state machine drops an
 * idle record at once and folds its counter into the global floor.
 */
final class LockRecord {
    /** The checked name, for the tokens of this lock: they are made without checking it again. */
    final LockName lockName;
    /** {@code lockName.value()}: the key of the state machine's maps, which are keyed by string. */
    final String name;
    /** The latest token issued for this lock, at least the floor at the time the record was created. */
    long lastToken;
    /** The holder's session, or 0 when the lock has no holder. */
    long holderSessionId;
    /** The holder's token value, or {@link FencingToken#NONE} when the lock has no holder. */
    long holderTokenValue;
    /** True while the lock waits out its lock-delay after its holder's session expired. */
    boolean delayed;
    /** How the last grant of this record ended, or null when none ended yet. */
    EndCause lastEnd;
    /**
     * The queue, first in line first: waiting session id to the request id of its acquire. A LinkedHashMap gives
     * FIFO order, O(1) removal of any waiter (cancel, session end) and a deterministic iteration order.
     */
    final LinkedHashMap<Long, String> waiters = new LinkedHashMap<>();

    LockRecord(LockName lockName, long lastToken) {
        this.lockName = lockName;
        this.name = lockName.value();
        this.lastToken = lastToken;
    }

    boolean held() {
        return holderSessionId != 0;
    }

    /** True when nothing keeps this record: no holder, no waiter, no delay. */
    boolean idle() {
        return !held() && !delayed && waiters.isEmpty();
    }

    /** Returns the holder's token, or null when the lock has no holder. */
    FencingToken holderToken() {
        return held() ? FencingToken.of(lockName, holderTokenValue) : null;
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

    /** Returns the picture of this lock; {@code holderIdentity} is its holder session's, or null when free. */
    LockView view(String holderIdentity) {
        List<LockView.WaiterView> queue = new ArrayList<>(waiters.size());
        for (Map.Entry<Long, String> waiter : waiters.entrySet()) {
            queue.add(new LockView.WaiterView(waiter.getKey(), waiter.getValue()));
        }
        return new LockView(name, holderToken(), holderSessionId, holderIdentity, queue, lastToken, delayed,
                lastEnd);
    }
}

package io.fencer.lock;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.internal.LockName;
import io.fencer.core.internal.PermitSlots;
import java.util.LinkedHashMap;

/**
 * The mutable state of one semaphore in use: its permit count and its FIFO queue. Its permits are the slot locks
 * {@code <name>/permit-0} to {@code <name>/permit-<permits-1>}, ordinary lock records (each with its own token
 * counter) that the state machine grants to the semaphore's waiters. A record exists only while a slot is held or
 * delayed or a session waits; the state machine drops an idle one, and the permit count is then forgotten.
 */
final class SemaphoreRecord {

    final LockName lockName;
    final String name;
    /** The number of permits, fixed while the record exists. */
    final int permits;
    /** The queue, first in line first: waiting session id to the request id of its acquire. */
    final LinkedHashMap<Long, String> waiters = new LinkedHashMap<>();

    SemaphoreRecord(LockName lockName, int permits) {
        this.lockName = lockName;
        this.name = lockName.value();
        this.permits = permits;
    }

    /** Returns the lock name of slot {@code permit}. */
    String slot(int permit) {
        return slotName(name, permit);
    }

    /** Returns the lock name of slot {@code permit} of semaphore {@code semaphore}. */
    static String slotName(String semaphore, int permit) {
        return PermitSlots.slotName(semaphore, permit);
    }

    /**
     * Returns the checked lock name of the last slot of a semaphore of {@code permits} permits, which is the longest.
     *
     * @throws InvalidArgumentException when the slot names would pass the lock-name bound
     */
    static LockName lastSlot(String semaphore, int permits) {
        return LockName.of("semaphore", slotName(semaphore, permits - 1));
    }

    /** Returns the semaphore a lock name is a slot of, with its permit index, or null; see {@link PermitSlots}. */
    static Slot parseSlot(String lock) {
        PermitSlots.Slot slot = PermitSlots.parse(lock);
        return slot == null ? null : new Slot(slot.semaphore(), slot.permit());
    }

    /** A slot lock's semaphore and permit index. */
    record Slot(String semaphore, int permit) {}

    /**
     * Returns the queue position of a waiting session (0 = next in line), or -1; linear in the queue, which
     * {@link Limits#waitersPerLockMax()} bounds.
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
}

package io.fencer.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What the lock service says of one semaphore.
 *
 * @param semaphore the name
 * @param permits the permit count while in use, 0 when not in use
 * @param slots slot {@code i} ({@code <semaphore>/permit-i}) as a lock: its holder is null while the permit is free
 * @param waiterSessionIds waiting sessions, first in line first
 */
public record SemaphoreStatus(String semaphore, int permits, List<LockStatus> slots, List<Long> waiterSessionIds) {
    public SemaphoreStatus {
        slots = Collections.unmodifiableList(new ArrayList<>(slots));
        waiterSessionIds = List.copyOf(waiterSessionIds);
    }

    /** Returns how many permits are held now. */
    public int held() {
        return (int) slots.stream().filter(slot -> slot.holder() != null).count();
    }
}

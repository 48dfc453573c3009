package io.fencer.lock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A read-only picture of one semaphore in use.
 *
 * @param semaphore the semaphore's name
 * @param permits its permit count
 * @param slots slot {@code i} ({@code <semaphore>/permit-i}) as a lock, or null when that permit is free
 * @param waiters the queue, first in line first
 */
public record SemaphoreView(String semaphore, int permits, List<LockView> slots, List<LockView.WaiterView> waiters) {
    public SemaphoreView {
        slots = Collections.unmodifiableList(new ArrayList<>(slots)); // holds nulls: List.copyOf would refuse them
        waiters = List.copyOf(waiters);
    }

    /** Returns how many permits are held now. */
    public int held() {
        int held = 0;
        for (LockView slot : slots) {
            held += slot != null && slot.holder() != null ? 1 : 0;
        }
        return held;
    }
}

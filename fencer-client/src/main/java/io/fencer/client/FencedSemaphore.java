package io.fencer.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A semaphore of a fixed number of permits, acquired through a session: at most that many grants at once, granted
 * in arrival order. Permit slot {@code i} of semaphore {@code jobs} is the lock {@code jobs/permit-i} with its own
 * token counter, so a grant's {@link Grant#token()} is a slot's token ({@code token().lock()} is the slot's name)
 * and a resource partitioned by slot fences each partition as it would for a lock; {@link PermitGrant#permit()} is
 * the slot's index. The permit count is fixed while the semaphore is in use; asking with another count fails with
 * {@link io.fencer.core.InvalidArgumentException} naming both.
 */
public interface FencedSemaphore {

    /** Returns the semaphore's name. */
    String name();

    /** Returns the permit count this semaphore is used with. */
    int permits();

    /**
     * Acquires a permit, waiting in line for at most {@code wait}. A session holding a permit gets it back.
     *
     * @throws LockTimeoutException when {@code wait} passed first; the wait was cancelled
     * @throws io.fencer.core.SessionExpiredException when the session ended meanwhile
     * @throws io.fencer.core.UnavailableException when no peer answered in time, or the calling thread was
     *     interrupted (the interrupt is kept): before the call, nothing is sent; during it, what the service granted
     *     meanwhile is given back in the background
     */
    PermitGrant acquire(Duration wait);

    /** Acquires a permit if one is free now and nobody waits; otherwise returns empty without waiting. */
    Optional<PermitGrant> tryAcquire();

    /**
     * A permit's grant: a grant of its slot lock, and the slot's index. Its {@link #close()} waits for the service,
     * as {@link #release()} does: AcquirePermit does not travel behind a release on the client's pipeline.
     */
    interface PermitGrant extends Grant {
        /** Returns the slot's index, from 0 to {@link #permits()} - 1. */
        int permit();
    }
}

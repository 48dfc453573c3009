package io.fencer.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A named lock acquired through a session. Waiters are granted in arrival order; every grant carries a
 * fencing token greater than every token granted before for this lock.
 *
 * <p>Read-write: {@link #acquireShared} takes the lock as one of any number of readers, beside other shared holders
 * and never beside an exclusive one ({@link #acquire}). The queue is FIFO over both modes, so a reader asking
 * behind a waiting writer waits for it (writers are not starved). A shared grant's token has mode
 * {@link io.fencer.core.LockMode#SHARED}: resources accept fenced reads under it and refuse writes
 * ({@link io.fencer.core.ModeMismatchException}). A session holds a lock in one mode at a time.
 *
 * <p>Holding the lock does not stop a paused holder from writing after its session expired and the lock
 * went to someone else:
 *
 * <pre>
 *   A: acquire -> orders#33 ....[ GC pause longer than the ttl ]............ write(orders#33) REFUSED
 *   B:                   session of A expires -> acquire -> orders#34, write(orders#34)
 * </pre>
 *
 * Pass {@link Grant#token()} with every write, and let the resource refuse stale tokens.
 */
public interface FencedLock {

    /** Returns the lock's name. */
    String name();

    /**
     * Acquires the lock, waiting in line for at most {@code wait}. The holder acquiring again gets its grant back.
     *
     * @throws LockTimeoutException when {@code wait} passed first; the wait was cancelled
     * @throws io.fencer.core.SessionExpiredException when the session ended meanwhile
     * @throws io.fencer.core.UnavailableException when no peer answered in time, or the calling thread was
     *     interrupted (the interrupt is kept): before the call, nothing is sent; during it, what the service granted
     *     meanwhile is given back in the background
     */
    Grant acquire(Duration wait);

    /** Acquires the lock if it is free now; otherwise returns empty without waiting. */
    Optional<Grant> tryAcquire();

    /**
     * Acquires the lock in shared mode (a reader), waiting in line for at most {@code wait}: granted beside other
     * shared holders once no exclusive holder holds and nobody waits ahead. Every shared grant takes a fresh token.
     *
     * @throws LockTimeoutException when {@code wait} passed first; the wait was cancelled
     * @throws io.fencer.core.InvalidArgumentException when the session holds or waits for the lock exclusively
     * @throws io.fencer.core.SessionExpiredException when the session ended meanwhile
     * @throws io.fencer.core.UnavailableException when no peer answered in time, or the calling thread was
     *     interrupted (the interrupt is kept): before the call, nothing is sent; during it, what the service granted
     *     meanwhile is given back in the background
     */
    Grant acquireShared(Duration wait);

    /** Acquires the lock in shared mode if that is possible now; otherwise returns empty without waiting. */
    Optional<Grant> tryAcquireShared();
}

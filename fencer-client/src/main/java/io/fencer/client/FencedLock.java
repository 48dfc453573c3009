package io.fencer.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A named lock acquired through a session. Waiters are granted in arrival order; every grant carries a
 * fencing token greater than every token granted before for this lock.
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
     */
    Grant acquire(Duration wait);

    /** Acquires the lock if it is free now; otherwise returns empty without waiting. */
    Optional<Grant> tryAcquire();
}

package io.fencer.client;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Several locks acquired together through a session, all or none, in one step of the lock service: each lock keeps
 * its own token, and no caller ever holds some of them while waiting for the others, so there is no deadlock
 * whatever order callers name them in. While it waits, the multi-lock waits in every lock's FIFO queue at once and is
 * granted when first in line at all of them.
 */
public interface FencedMultiLock {

    /** Returns the locks' names, in the order given. */
    List<String> names();

    /**
     * Acquires every lock, waiting in line for at most {@code wait}.
     *
     * @throws LockTimeoutException when {@code wait} passed first; the waits were cancelled and nothing is held
     * @throws io.fencer.core.SessionExpiredException when the session ended meanwhile
     * @throws io.fencer.core.UnavailableException when no peer answered in time, or the calling thread was
     *     interrupted (the interrupt is kept): before the call, nothing is sent; during it, what the service granted
     *     meanwhile is given back in the background
     */
    MultiGrant acquire(Duration wait);

    /** Acquires every lock if all are free now; otherwise returns empty without waiting, holding none. */
    Optional<MultiGrant> tryAcquire();

    /** The grants of a multi-lock: one per lock, in the order named; {@link #close()} releases them all. */
    interface MultiGrant extends AutoCloseable {
        /** Returns each lock's grant, in the order the locks were named. */
        List<Grant> grants();

        /**
         * Releases every lock still held by these grants, each as {@link Grant#close()} does: without waiting for
         * the service's answer when pipelining is on. Every grant is tried; the first failure is thrown after.
         */
        @Override
        void close();

        /**
         * Releases every lock still held by these grants, each as {@link Grant#release()} does, and returns once the
         * service has released them all: a call that any client makes after this returns finds them released. Every
         * grant is tried; the first failure is thrown after, and a later {@code release} or {@code close} tries the
         * grants not yet released again.
         *
         * @throws io.fencer.core.UnavailableException when the service could not be reached
         */
        void release();
    }
}

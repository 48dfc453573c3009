package io.fencer.client.internal;

import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The releases this client sent without waiting for their answers ({@link DefaultGrant#close()}), counted for two
 * reasons. They are bounded: at most {@link #IN_FLIGHT_MAX} go unanswered, and beyond that a close waits for its
 * answer as a blocking call does. And a read of the client (Describe, List, Validate) first waits, at most a call
 * timeout, for the answers of those sent before it, so that it finds them applied, as it would after a close that
 * waited. Thread-safe.
 */
final class ReleasesInFlight {
    /**
     * The most releases unanswered at once: far above one per thread, which is what a thread that closes a grant
     * and goes on to its next call keeps in flight; a bound on what a client that closes grants in a loop against
     * a stalled server can queue.
     */
    static final int IN_FLIGHT_MAX = 1024;

    private final Semaphore room = new Semaphore(IN_FLIGHT_MAX);
    private final ConcurrentSkipListSet<Long> unanswered = new ConcurrentSkipListSet<>();
    private final AtomicLong lastTicket = new AtomicLong();
    /** Readers waiting in {@link #awaitAnsweredBefore}: only then does an answer take the monitor to wake them. */
    private final AtomicInteger readersWaiting = new AtomicInteger();

    /** Returns the ticket of one release about to be sent, or 0 when {@link #IN_FLIGHT_MAX} are unanswered. */
    long begin() {
        if (!room.tryAcquire()) {
            return 0;
        }
        long ticket = lastTicket.incrementAndGet();
        unanswered.add(ticket);
        return ticket;
    }

    /** The release of {@code ticket} was answered, failed, or was never sent. Once per ticket. */
    void answered(long ticket) {
        if (!unanswered.remove(ticket)) {
            throw new IllegalStateException("release ticket " + ticket + " answered twice or never begun");
        }
        room.release();
        if (readersWaiting.get() > 0) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /**
     * Waits until every release begun before this call is answered, at most {@code timeoutNanos}; returns false when
     * the time ran out first (the read then goes ahead: a release the service has not answered yet may or may not
     * be seen).
     */
    boolean awaitAnsweredBefore(long timeoutNanos) throws InterruptedException {
        long upTo = lastTicket.get();
        if (answeredUpTo(upTo)) {
            return true;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        readersWaiting.incrementAndGet();
        try {
            synchronized (this) {
                while (!answeredUpTo(upTo)) {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, remaining);
                }
                return true;
            }
        } finally {
            readersWaiting.decrementAndGet();
        }
    }

    private boolean answeredUpTo(long upTo) {
        Long oldest = unanswered.ceiling(Long.MIN_VALUE);
        return oldest == null || oldest > upTo;
    }

    int unansweredCount() {
        return IN_FLIGHT_MAX - room.availablePermits();
    }
}

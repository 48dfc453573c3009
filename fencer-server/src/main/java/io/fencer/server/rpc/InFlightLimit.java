package io.fencer.server.rpc;

import io.fencer.core.LimitExceededException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed bound on calls of one kind in flight on one server, for calls that each hold a large resource (a whole
 * backup file, a store snapshot) until their stream ends: a call over the bound is refused rather than queued, so
 * clients that open such calls and never read them cannot exhaust the server.
 */
public final class InFlightLimit {
    private final String limit;
    private final int max;
    private final String call;
    private final AtomicInteger inFlight = new AtomicInteger();

    /**
     * @param limit the limit's name, as the error and the documentation give it (e.g. {@code backupsInFlightMax})
     * @param call what one call is, for the error's sentence (e.g. {@code "backup"})
     */
    public InFlightLimit(String limit, int max, String call) {
        if (max < 1) {
            throw new IllegalArgumentException(limit + " must be positive: " + max);
        }
        this.limit = limit;
        this.max = max;
        this.call = call;
    }

    /**
     * Takes a slot for one call; the returned release frees it, once however often it runs.
     *
     * @throws LimitExceededException naming the limit and its value when {@code max} calls are in flight
     */
    public Runnable take() {
        int now;
        do {
            now = inFlight.get();
            if (now >= max) {
                throw new LimitExceededException(limit, max, "cannot start a " + call + ": " + now
                        + " are in flight on this server, " + limit + " is " + max + "; retry once one has ended");
            }
        } while (!inFlight.compareAndSet(now, now + 1));
        AtomicBoolean released = new AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                inFlight.decrementAndGet();
            }
        };
    }

    /** Returns how many calls hold a slot now. */
    public int inFlight() {
        return inFlight.get();
    }
}

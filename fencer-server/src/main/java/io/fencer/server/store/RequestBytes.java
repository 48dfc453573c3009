package io.fencer.server.store;

import io.fencer.core.LimitExceededException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of the requests the store's workers hold, waiting for one or being served, over all callers, against
 * {@code requestBytesQueuedMax} ({@link io.fencer.store.StoreOptions#requestBytesQueuedMax}). The count of calls
 * waiting for a worker is bounded too ({@link StoreRole#WORK_QUEUE_MAX}), but 4,096 UnitWrite or ImportScopes
 * requests of 5 MiB are 20 GiB in this server's heap: the count alone bounds nothing a heap can take.
 *
 * <p>A request is counted by its encoded size from the moment it is handed to the workers until its call has run.
 * A request alone is always taken, whatever the bound, so that a bound set below the largest request refuses none.
 */
final class RequestBytes {
    private final long max;
    private final AtomicLong held = new AtomicLong();

    /** Bounds the bytes held at {@code max}. */
    RequestBytes(long max) {
        this.max = max;
    }

    /**
     * Takes {@code bytes} for one request; give them back once its call has run.
     *
     * @throws LimitExceededException ({@code requestBytesQueuedMax}) naming the bound, the bytes held and asked for
     */
    void take(long bytes) {
        while (true) {
            long current = held.get();
            if (current != 0 && current + bytes > max) {
                throw new LimitExceededException("requestBytesQueuedMax", max, "the store's workers hold " + current
                        + " bytes of requests, waiting for a worker or being served; this request's " + bytes
                        + " more would pass the server's requestBytesQueuedMax of " + max
                        + " (--request-bytes-queued-max). Nothing of it was done: retry later");
            }
            if (held.compareAndSet(current, current + bytes)) {
                return;
            }
        }
    }

    /** Gives back {@code bytes} taken before. */
    void give(long bytes) {
        held.addAndGet(-bytes);
    }

    /** Returns the bytes held now. */
    long held() {
        return held.get();
    }
}

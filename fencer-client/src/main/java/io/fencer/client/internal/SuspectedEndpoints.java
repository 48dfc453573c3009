package io.fencer.client.internal;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Endpoints that lately let an attempt run out of time: a paused or partitioned peer keeps its connection and stays
 * silent, and during the election after it the other peers may still name it as the leader. For one attempt timeout
 * after its attempt timed out, a client ignores such a redirect to it and skips it when it moves on, so that a call
 * made while a leader is paused does not spend its budget on it twice. Shared by the lock client's {@link Router} and
 * the store client's {@link StoreConnection}. Thread-safe.
 */
final class SuspectedEndpoints {
    private final Map<String, Long> untilNanos = new ConcurrentHashMap<>();
    private final long suspectNanos;

    /** Suspects an endpoint for {@code suspectNanos} after its attempt timed out: one attempt timeout. */
    SuspectedEndpoints(long suspectNanos) {
        this.suspectNanos = suspectNanos;
    }

    /** Marks {@code endpoint} as not answering, from now for the suspect time. */
    void suspect(String endpoint) {
        untilNanos.put(endpoint, System.nanoTime() + suspectNanos);
    }

    boolean isSuspected(String endpoint) {
        Long until = untilNanos.get(endpoint);
        if (until == null) {
            return false;
        }
        if (System.nanoTime() - until >= 0) {
            untilNanos.remove(endpoint, until);
            return false;
        }
        return true;
    }

    /**
     * Returns the first endpoint of {@code endpoints} after {@code failed}, going round, that is not suspected, or
     * simply the next one when all are; {@code failed} not among them counts as standing before the first.
     */
    String after(List<String> endpoints, String failed) {
        int index = endpoints.indexOf(failed);
        int size = endpoints.size();
        for (int step = 1; step <= size; step++) {
            String candidate = endpoints.get(Math.floorMod(index + step, size));
            if (!isSuspected(candidate)) {
                return candidate;
            }
        }
        return endpoints.get(Math.floorMod(index + 1, size));
    }
}

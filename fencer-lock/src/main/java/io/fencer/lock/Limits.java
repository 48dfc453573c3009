package io.fencer.lock;

import io.fencer.core.InvalidArgumentException;
import java.nio.charset.StandardCharsets;

/**
 * The bounds of the lock state machine. Every one is enforced with a typed error that names it and the
 * offending value.
 *
 * @param sessionsMax most open sessions
 * @param locksMax most lock records (locks held, waited for, or delayed)
 * @param waitersPerLockMax most sessions queued on one lock
 * @param locksPerSessionMax most locks one session holds or waits for
 * @param ttlMillisMin shortest session lease
 * @param ttlMillisMax longest session lease
 */
public record Limits(int sessionsMax, int locksMax, int waitersPerLockMax, int locksPerSessionMax,
        long ttlMillisMin, long ttlMillisMax) {
    /** The longest request id, in UTF-8 bytes. */
    public static final int REQUEST_ID_BYTES_MAX = 128;
    /** The longest identity of a session's opener (a certificate's common name), in UTF-8 bytes. */
    public static final int IDENTITY_BYTES_MAX = 256;
    /** The most permits one semaphore may have ({@code permitsMax}). */
    public static final int PERMITS_MAX = 1_000;

    public static final Limits DEFAULT = new Limits(100_000, 1_000_000, 10_000, 10_000, 1_000, 3_600_000);

    public Limits {
        if (sessionsMax < 1 || locksMax < 1 || waitersPerLockMax < 1 || locksPerSessionMax < 1) {
            throw new IllegalArgumentException("limits must be positive: " + sessionsMax + ", " + locksMax + ", "
                    + waitersPerLockMax + ", " + locksPerSessionMax);
        }
        if (ttlMillisMin < 1 || ttlMillisMax < ttlMillisMin) {
            throw new IllegalArgumentException("ttl bounds out of order: [" + ttlMillisMin + ", " + ttlMillisMax + "]");
        }
    }

    /**
     * Checks a semaphore's permit count against [1, {@link #PERMITS_MAX}].
     *
     * @throws InvalidArgumentException naming the semaphore, the count and the limit
     */
    public static void checkPermits(String semaphore, long permits) {
        if (permits < 1 || permits > PERMITS_MAX) {
            throw new InvalidArgumentException("permits", Long.toString(permits), "semaphore '"
                    + InvalidArgumentException.printable(semaphore) + "' asked with " + permits + " permits: a"
                    + " semaphore has 1 to permitsMax " + PERMITS_MAX + " permits");
        }
    }

    /** Checks a session lease against [{@link #ttlMillisMin}, {@link #ttlMillisMax}]. */
    public void checkTtlMillis(long ttlMillis) {
        if (ttlMillis < ttlMillisMin || ttlMillis > ttlMillisMax) {
            throw new InvalidArgumentException("ttl_millis", Long.toString(ttlMillis), "session ttl " + ttlMillis
                    + " ms is outside [" + ttlMillisMin + " ms, " + ttlMillisMax + " ms]");
        }
    }

    /** Checks the identity of a session's opener: 1 to {@link #IDENTITY_BYTES_MAX} bytes of UTF-8. */
    public static void checkIdentity(String identity) {
        if (identity == null || identity.isEmpty()) {
            throw new InvalidArgumentException("identity", "", "a session's identity must not be empty");
        }
        int bytes = identity.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > IDENTITY_BYTES_MAX) {
            throw new InvalidArgumentException("identity", identity, "identity is " + bytes
                    + " bytes of UTF-8, more than identityBytesMax " + IDENTITY_BYTES_MAX);
        }
    }

    static void checkRequestId(String requestId, boolean emptyAllowed) {
        if (requestId == null || (!emptyAllowed && requestId.isEmpty())) {
            throw new InvalidArgumentException("request_id", "", "request id must not be empty");
        }
        int bytes = requestId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > REQUEST_ID_BYTES_MAX) {
            throw new InvalidArgumentException("request_id", requestId, "request id is " + bytes
                    + " bytes, more than the " + REQUEST_ID_BYTES_MAX + " allowed");
        }
    }
}

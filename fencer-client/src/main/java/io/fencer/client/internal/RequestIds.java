package io.fencer.client.internal;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The source of a client's request ids: a random prefix drawn once per client (128 bits from
 * {@link SecureRandom}, as many as a random UUID carries) followed by a counter, {@code <prefix>-<n>} with
 * {@code n} in base 36.
 *
 * <p>Why not {@code UUID.randomUUID()} per call: it draws from one shared {@link SecureRandom}, whose lock every
 * calling thread contends for, and it cost a measurable share of the client's CPU per lock cycle. Ids stay unique
 * across clients (the service keys OpenSession by request id across all sessions) because two clients share a
 * prefix only with probability 2^-128 per pair, and unique within a client because the counter never repeats.
 * Thread-safe.
 */
final class RequestIds {
    private static final int PREFIX_BYTES = 16;
    /** The random bytes of an OpenSession's retry key: 256 bits, twice the service's least. */
    static final int RETRY_KEY_BYTES = 32;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String prefix;
    private final AtomicLong counter = new AtomicLong();

    RequestIds() {
        byte[] random = new byte[PREFIX_BYTES];
        RANDOM.nextBytes(random);
        this.prefix = Base64.getUrlEncoder().withoutPadding().encodeToString(random) + "-";
    }

    /**
     * Returns an id of 128 random bits alone (22 ASCII characters), unrelated to any other id: for calls whose retry
     * returns a credential, so that knowing other ids of the client does not help to guess it.
     */
    static String random() {
        byte[] random = new byte[PREFIX_BYTES];
        RANDOM.nextBytes(random);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(random);
    }

    /**
     * Returns a fresh retry key for one OpenSession: {@value #RETRY_KEY_BYTES} random bytes, sent with the open and
     * with each of its retries, and never with another open. Without TLS every caller is anonymous to the service,
     * and the key is what lets it hand a retry the session's secret, and nobody else who learnt the request id.
     */
    static byte[] retryKey() {
        byte[] key = new byte[RETRY_KEY_BYTES];
        RANDOM.nextBytes(key);
        return key;
    }

    /** Returns an id no other call of any client has: 22 + 1 + at most 13 ASCII characters. */
    String next() {
        return prefix + Long.toString(counter.incrementAndGet(), Character.MAX_RADIX);
    }
}

package io.fencer.server.locks;

import io.fencer.core.Ticker;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * This leader's part of session secrets: it draws each new session's secret, and remembers the secret it handed
 * to a recent open, by identity and request id, so that a retry of an open whose answer was lost gets the same
 * session and the same secret. Nothing else could answer such a retry: the replicated state keeps only hashes.
 *
 * <p>Bounded on both axes: at most {@link #ENTRIES_MAX} opens, each for at most {@link #AGE_MAX} on the server's
 * ticker; the oldest are forgotten first. Memory only, so a new leader (or a restarted one) remembers nothing: a
 * retry it cannot answer gets another secret here, which the state machine refuses for the session opened before
 * (see {@code OpenSessionRequest.request_id}). Thread-safe.
 */
public final class SessionSecrets {
    /** The most opens remembered for retries. */
    static final int ENTRIES_MAX = 10_000;
    /** How long an open is remembered for retries. */
    static final Duration AGE_MAX = Duration.ofMinutes(1);
    /** The random bytes of a secret: 256 bits, twice the 128 the design asks for. */
    static final int SECRET_BYTES = 32;

    private static final SecureRandom RANDOM = new SecureRandom();

    private final Ticker ticker;
    private final long ageNanosMax;
    private final int entriesMax;
    /** Remembered opens, oldest first (insertion order), so that eviction looks at the head only. */
    private final LinkedHashMap<Key, Remembered> recent = new LinkedHashMap<>(); // guarded by this

    /** One open: who asked and with which request id. */
    private record Key(String identity, String requestId) {}

    /** A secret handed out at {@code createdNanos}; its {@code toString} shows no secret. */
    private record Remembered(String secret, long createdNanos) {
        @Override
        public String toString() {
            return "Remembered[secret not shown, created at " + createdNanos + " ns]";
        }
    }

    public SessionSecrets(Ticker ticker) {
        this(ticker, ENTRIES_MAX, AGE_MAX);
    }

    SessionSecrets(Ticker ticker, int entriesMax, Duration ageMax) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        if (entriesMax < 1 || ageMax.isNegative() || ageMax.isZero()) {
            throw new IllegalArgumentException("entriesMax and ageMax must be positive: " + entriesMax + ", " + ageMax);
        }
        this.entriesMax = entriesMax;
        this.ageNanosMax = ageMax.toNanos();
    }

    /** Returns a new secret: {@link #SECRET_BYTES} bytes from {@link SecureRandom}, base64url without padding. */
    static String generate() {
        byte[] random = new byte[SECRET_BYTES];
        RANDOM.nextBytes(random);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(random);
    }

    /**
     * Returns the secret to open a session with for {@code identity}'s open with {@code requestId}: the secret of an
     * earlier attempt of the same open while it is remembered, else a new one, remembered from now on. Without a
     * request id an open cannot be retried: always a new secret, not remembered.
     */
    public String forOpen(String identity, String requestId) {
        if (requestId.isEmpty()) {
            return generate();
        }
        Key key = new Key(identity, requestId);
        long now = ticker.nanoTime();
        synchronized (this) {
            forgetOld(now);
            Remembered remembered = recent.get(key);
            if (remembered != null) {
                return remembered.secret();
            }
            String secret = generate();
            recent.put(key, new Remembered(secret, now));
            while (recent.size() > entriesMax) {
                Iterator<Map.Entry<Key, Remembered>> oldest = recent.entrySet().iterator();
                oldest.next();
                oldest.remove();
            }
            return secret;
        }
    }

    /** Returns how many opens are remembered now. */
    synchronized int size() {
        forgetOld(ticker.nanoTime());
        return recent.size();
    }

    private void forgetOld(long now) {
        Iterator<Remembered> oldestFirst = recent.values().iterator();
        while (oldestFirst.hasNext() && now - oldestFirst.next().createdNanos() >= ageNanosMax) {
            oldestFirst.remove();
        }
    }

    /** Shows the bounds and the count, never a secret. */
    @Override
    public synchronized String toString() {
        return "SessionSecrets[" + recent.size() + " opens remembered, at most " + entriesMax + " for "
                + Duration.ofNanos(ageNanosMax) + "]";
    }
}

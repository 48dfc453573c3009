package io.fencer.server.locks;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.Ticker;
import io.fencer.server.rpc.Identities;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
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
 * <p>Who gets a remembered secret. A request id is not a secret (it travels in the clear, and a client may show
 * it), so it alone must not fetch a session's secret: a retry gets the secret only from the same identity, and only
 * with the open's {@code retry_key} when the open carried one (the key's SHA-256 is kept beside the secret, never the
 * key, and compared in constant time). Every anonymous caller has the same identity, so for them the key is what
 * tells the opener from anyone else: an anonymous open is remembered for retries only with a key, and an anonymous
 * retry without the right key gets no secret but an error saying to open a new session (the orphan expires by its
 * ttl). What this cannot protect: anyone who can read an anonymous caller's traffic reads its secret in the open's
 * answer, and its key in the request; only TLS protects against that.
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

    /**
     * A secret handed out at {@code createdNanos} (null: an anonymous open without a key, whose secret no retry may
     * have), with the SHA-256 of the open's retry key (null: none); its {@code toString} shows neither.
     */
    private record Remembered(String secret, byte[] retryKeyHash, long createdNanos) {
        @Override
        public String toString() {
            return "Remembered[secret and key not shown, created at " + createdNanos + " ns]";
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

    /** As {@link #forOpen(String, String, byte[])} for an open without a retry key. */
    public String forOpen(String identity, String requestId) {
        return forOpen(identity, requestId, null);
    }

    /**
     * Returns the secret to open a session with for {@code identity}'s open with {@code requestId} and
     * {@code retryKey} (null: none): the secret of an earlier attempt of the same open while it is remembered and the
     * retry may have it (see the class doc), else a new one, remembered from now on. Without a request id an open
     * cannot be retried: always a new secret, not remembered.
     *
     * @throws SessionUnauthenticatedException when an earlier attempt of this open is remembered but this retry may
     *     not have its secret: it lacks the attempt's retry key, or it is anonymous and the attempt had none. The
     *     session 0 it names stands for the unknown one that attempt may have opened.
     */
    public String forOpen(String identity, String requestId, byte[] retryKey) {
        if (requestId.isEmpty()) {
            return generate();
        }
        Key key = new Key(identity, requestId);
        byte[] retryKeyHash = retryKey == null ? null : sha256(retryKey);
        boolean anonymous = identity.equals(Identities.ANONYMOUS);
        long now = ticker.nanoTime();
        synchronized (this) {
            forgetOld(now);
            Remembered remembered = recent.get(key);
            if (remembered != null) {
                return rememberedFor(remembered, retryKeyHash, anonymous, requestId);
            }
            String secret = generate();
            // An anonymous open without a key is remembered without its secret: its retry is told why it gets none.
            recent.put(key, new Remembered(anonymous && retryKeyHash == null ? null : secret, retryKeyHash, now));
            while (recent.size() > entriesMax) {
                Iterator<Map.Entry<Key, Remembered>> oldest = recent.entrySet().iterator();
                oldest.next();
                oldest.remove();
            }
            return secret;
        }
    }

    /** Returns the remembered secret when the retry may have it (see the class doc); refuses it otherwise. */
    private static String rememberedFor(Remembered remembered, byte[] retryKeyHash, boolean anonymous,
            String requestId) {
        if (remembered.retryKeyHash() != null) {
            if (retryKeyHash == null || !MessageDigest.isEqual(remembered.retryKeyHash(), retryKeyHash)) {
                throw refusedRetry(requestId, "this retry does not present the retry_key that open carried");
            }
            return remembered.secret();
        }
        if (anonymous || remembered.secret() == null) {
            throw refusedRetry(requestId, "that open was anonymous and carried no retry_key, so nothing tells its"
                    + " caller from any other anonymous caller who learnt the request id");
        }
        return remembered.secret();
    }

    private static SessionUnauthenticatedException refusedRetry(String requestId, String why) {
        return new SessionUnauthenticatedException(0, "OpenSession with request_id '"
                + InvalidArgumentException.printable(requestId) + "' repeats an earlier open whose secret this retry"
                + " may not have: " + why + ". No secret is handed out; open a new session with a new request_id"
                + " (and a new retry_key); a session the earlier open made expires by its ttl");
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
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

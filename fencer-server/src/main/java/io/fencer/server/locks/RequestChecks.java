package io.fencer.server.locks;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import io.fencer.core.LockNames;
import io.fencer.core.Sequencer;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.lock.Limits;
import io.fencer.lock.SecretHash;
import java.nio.charset.StandardCharsets;

/**
 * Validation of request fields before anything is proposed: every refusal is an
 * {@link InvalidArgumentException} naming the field and the offending value. Unsigned wire integers that do not
 * fit a positive Java {@code long} are shown unsigned. A lock name is checked here, once, and carried inward as a
 * {@link LockName}: the commands, the state machine and the tokens do not check it again.
 */
final class RequestChecks {
    /** The longest wait of an Acquire. */
    static final long WAIT_MILLIS_MAX = 3_600_000;
    /** The most locks a List answers, and its default. */
    static final int LIST_LIMIT_MAX = 1_000;
    /** The longest session secret hashed: the service's secrets are 43 characters; a longer one is wrong. */
    static final int SESSION_SECRET_BYTES_MAX = 256;
    /** The fewest bytes of an OpenSession's retry key: 128 random bits, as many as a guess would need. */
    static final int RETRY_KEY_BYTES_MIN = 16;
    /** The most bytes of an OpenSession's retry key. */
    static final int RETRY_KEY_BYTES_MAX = 64;

    private RequestChecks() {}

    static long sessionId(String field, long sessionId) {
        if (sessionId <= 0) {
            throw new InvalidArgumentException(field, Long.toUnsignedString(sessionId),
                    field + " must be a session id in [1, " + Long.MAX_VALUE + "], got "
                            + Long.toUnsignedString(sessionId));
        }
        return sessionId;
    }

    /**
     * Returns the hash of the session secret a request presented for {@code sessionId}. Its refusals name the session
     * and never the secret: a wrong secret may be the real secret of another session.
     *
     * @throws SessionUnauthenticatedException when no secret was presented, or one longer than any secret
     */
    static SecretHash sessionSecret(long sessionId, String secret) {
        if (secret.isEmpty()) {
            throw new SessionUnauthenticatedException(sessionId, "session " + sessionId + " refused: no"
                    + " session_secret was presented; every call for a session carries the secret OpenSession"
                    + " returned");
        }
        int bytes = secret.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > SESSION_SECRET_BYTES_MAX) {
            throw new SessionUnauthenticatedException(sessionId, "session " + sessionId + " refused: the"
                    + " session_secret presented is " + bytes + " bytes, more than sessionSecretBytesMax "
                    + SESSION_SECRET_BYTES_MAX + ", so it is not this session's");
        }
        return SecretHash.of(secret);
    }

    /** Returns the name of a lock a request reads or releases: any name a lock may have, old ones included. */
    static LockName lock(String field, String lock) {
        return LockName.of(field, lock);
    }

    /**
     * Returns the name of a lock an acquire may create: {@link LockNames#checkNew}, which refuses characters that
     * are invisible or reorder text, so that no two locks look alike. Applied to every acquire, also of a lock that
     * exists already: a name that passes only the plain check can exist from before the rule, and its holders release
     * it, but nobody queues for it again.
     */
    static LockName newLock(String field, String lock) {
        return LockName.ofNew(field, lock);
    }

    static String requestId(String requestId, boolean required) {
        if (required && requestId.isEmpty()) {
            throw new InvalidArgumentException("request_id", "", "request_id must not be empty: retries of one "
                    + "attempt reuse it");
        }
        int bytes = requestId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Limits.REQUEST_ID_BYTES_MAX) {
            throw new InvalidArgumentException("request_id", requestId, "request_id is " + bytes
                    + " bytes of UTF-8, more than the " + Limits.REQUEST_ID_BYTES_MAX + " allowed");
        }
        return requestId;
    }

    /**
     * Returns an OpenSession's retry key as bytes, or null when it has none.
     *
     * @throws InvalidArgumentException when it is not {@value #RETRY_KEY_BYTES_MIN} to {@value #RETRY_KEY_BYTES_MAX}
     *     bytes, or comes without a request id (only a retry with the same request id could present it again)
     */
    static byte[] retryKey(com.google.protobuf.ByteString retryKey, String requestId) {
        if (retryKey.isEmpty()) {
            return null;
        }
        if (retryKey.size() < RETRY_KEY_BYTES_MIN || retryKey.size() > RETRY_KEY_BYTES_MAX) {
            throw new InvalidArgumentException("retry_key", retryKey.size() + " bytes", "retry_key is "
                    + retryKey.size() + " bytes: it must be " + RETRY_KEY_BYTES_MIN + " to " + RETRY_KEY_BYTES_MAX
                    + " random bytes (retryKeyBytesMin, retryKeyBytesMax)");
        }
        if (requestId.isEmpty()) {
            throw new InvalidArgumentException("retry_key", retryKey.size() + " bytes", "retry_key comes without a"
                    + " request_id: a retry of the open presents both, so a key alone means nothing");
        }
        return retryKey.toByteArray();
    }

    static long ttlMillis(long ttlMillis, Limits limits) {
        if (ttlMillis < 0) {
            throw new InvalidArgumentException("ttl_millis", Long.toUnsignedString(ttlMillis), "session ttl "
                    + Long.toUnsignedString(ttlMillis) + " ms is outside [" + limits.ttlMillisMin() + " ms, "
                    + limits.ttlMillisMax() + " ms]");
        }
        limits.checkTtlMillis(ttlMillis);
        return ttlMillis;
    }

    static long waitMillis(long waitMillis) {
        if (waitMillis < 0 || waitMillis > WAIT_MILLIS_MAX) {
            throw new InvalidArgumentException("wait_millis", Long.toUnsignedString(waitMillis), "wait_millis "
                    + Long.toUnsignedString(waitMillis) + " is more than the " + WAIT_MILLIS_MAX + " allowed");
        }
        return waitMillis;
    }

    /** Returns a List's effective limit: 0 means the maximum. */
    static int listLimit(int limit) {
        if (limit < 0 || limit > LIST_LIMIT_MAX) {
            throw new InvalidArgumentException("limit", Integer.toUnsignedString(limit), "limit "
                    + Integer.toUnsignedString(limit) + " is more than the " + LIST_LIMIT_MAX + " allowed");
        }
        return limit == 0 ? LIST_LIMIT_MAX : limit;
    }

    /** Returns a List's start_after: empty, or at most as long as a lock name (any text: it need name no lock). */
    static String startAfter(String startAfter) {
        int bytes = startAfter.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > LockNames.BYTES_MAX) {
            throw new InvalidArgumentException("start_after", startAfter, "start_after is " + bytes
                    + " bytes of UTF-8, more than the " + LockNames.BYTES_MAX + " of a lock name");
        }
        return startAfter;
    }

    static String prefix(String prefix) {
        int bytes = prefix.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > LockNames.BYTES_MAX) {
            throw new InvalidArgumentException("prefix", prefix, "prefix is " + bytes + " bytes of UTF-8, more "
                    + "than the " + LockNames.BYTES_MAX + " allowed");
        }
        return prefix;
    }

    /**
     * Returns the token of a request: lock and value when given, checked against the sequencer when that is given
     * too; or, with neither lock nor value, the token the sequencer names.
     */
    static FencingToken token(String field, io.fencer.api.v1.FencingToken token) {
        String sequencer = token.getSequencer();
        if (token.getLock().isEmpty() && token.getValue() == 0 && !sequencer.isEmpty()) {
            return Sequencer.parse(sequencer);
        }
        LockName lock = LockName.of(field + ".lock", token.getLock());
        long value = token.getValue();
        if (value < 1 || value > FencingToken.VALUE_MAX) {
            throw new InvalidArgumentException(field + ".value", Long.toUnsignedString(value), field
                    + ".value must be in [1, " + FencingToken.VALUE_MAX + "], got " + Long.toUnsignedString(value)
                    + " for lock '" + InvalidArgumentException.printable(lock.value()) + "'");
        }
        // The mode: the field's when set; else the sequencer's (a client before modes sends none), else exclusive.
        FencingToken named = sequencer.isEmpty() ? null : Sequencer.parse(sequencer);
        LockMode mode = token.getModeValue() != 0 ? Protos.mode(field + ".mode", token.getModeValue())
                : named != null ? named.mode() : LockMode.EXCLUSIVE;
        FencingToken checked = FencingToken.of(lock, value, mode);
        if (named != null) {
            if (!named.equals(checked)) {
                throw new InvalidArgumentException(field + ".sequencer", sequencer, "the sequencer names "
                        + InvalidArgumentException.printable(named.toString()) + " but the token is "
                        + InvalidArgumentException.printable(checked.toString()));
            }
        }
        return checked;
    }
}

package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockNames;
import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One whole scope of another store, to import into this one ({@link StoreEngine#importScope}): its fence (bound lock,
 * policy, accepted token, revision) and every key it holds, each with the token that wrote it. Read from a backup
 * file by {@link StoreBackupFile#readScopes}.
 *
 * @param keys every key of the scope, each once
 */
public record ImportedScope(String scope, String lock, FencePolicy policy, long accepted, long revision,
        List<Key> keys) {
    /** The most keys of one imported scope. */
    public static final int KEYS_MAX = 100_000;

    /** One key of an imported scope: its value and the token value that wrote it. */
    public record Key(byte[] key, byte[] value, long writtenBy) {
        public Key {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(value, "value");
        }
    }

    public ImportedScope {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(lock, "lock");
        Objects.requireNonNull(policy, "policy");
        keys = List.copyOf(keys);
    }

    /** Returns a copy whose accepted token is {@code accepted}. */
    public ImportedScope withAccepted(long accepted) {
        return new ImportedScope(scope, lock, policy, accepted, revision, keys);
    }

    /** Returns the bytes of the scope's keys and values together. */
    public long keyBytes() {
        long bytes = 0;
        for (Key key : keys) {
            bytes += key.key().length + key.value().length;
        }
        return bytes;
    }

    /**
     * Checks the scope against {@code options}' limits and its own consistency: names, the accepted token and every
     * written-by token in [0, {@link FencingToken#VALUE_MAX}] (a key's at least 1 and at most the accepted token),
     * keys and values within the limits, no key twice, at most {@link #KEYS_MAX} keys.
     *
     * @throws InvalidArgumentException naming the scope, the limit and the offending value
     */
    public void check(StoreOptions options) {
        LockNames.check("scope", scope);
        LockNames.check("lock", lock);
        if (accepted < 0 || accepted > FencingToken.VALUE_MAX) {
            throw invalid("accepted", Long.toUnsignedString(accepted), "accepted token "
                    + Long.toUnsignedString(accepted) + " is outside [0, " + FencingToken.VALUE_MAX + "]");
        }
        if (revision < 0) {
            throw invalid("revision", Long.toUnsignedString(revision), "revision " + Long.toUnsignedString(revision)
                    + " is above " + Long.MAX_VALUE);
        }
        if (keys.size() > KEYS_MAX) {
            throw new LimitExceededException("importKeysMax", KEYS_MAX, "imported scope '" + scope + "' holds "
                    + keys.size() + " keys, more than the " + KEYS_MAX + " one import may carry");
        }
        Set<ByteBuffer> seen = new HashSet<>();
        for (Key key : keys) {
            checkKey(options, key);
            if (!seen.add(ByteBuffer.wrap(key.key()))) {
                throw invalid("key", StoreCodec.describe(key.key()), "imported scope '" + scope + "' holds key "
                        + StoreCodec.describe(key.key()) + " twice");
            }
        }
    }

    private void checkKey(StoreOptions options, Key key) {
        if (key.key().length < 1 || key.key().length > options.keyBytesMax()) {
            throw invalid("key", key.key().length + " bytes", "a key of imported scope '" + scope + "' has "
                    + key.key().length + " bytes, outside [1, " + options.keyBytesMax() + "]");
        }
        if (key.value().length > options.valueBytesMax()) {
            throw invalid("value", key.value().length + " bytes", "the value of key " + StoreCodec.describe(key.key())
                    + " of imported scope '" + scope + "' has " + key.value().length + " bytes, more than the "
                    + options.valueBytesMax() + " allowed");
        }
        if (key.writtenBy() < 1 || key.writtenBy() > accepted) {
            throw invalid("written_by", Long.toUnsignedString(key.writtenBy()), "key "
                    + StoreCodec.describe(key.key()) + " of imported scope '" + scope + "' was written by token "
                    + Long.toUnsignedString(key.writtenBy()) + ", outside [1, " + accepted
                    + "] (the scope's accepted token)");
        }
    }

    private static InvalidArgumentException invalid(String field, String value, String message) {
        return new InvalidArgumentException(field, value, message);
    }

    @Override
    public String toString() {
        return "ImportedScope[" + scope + ", lock=" + lock + ", " + policy + ", accepted=" + accepted + ", revision="
                + revision + ", " + keys.size() + " keys]";
    }
}

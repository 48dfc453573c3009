package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.LockNames;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The byte layout of the store's three column families. Every record starts with a format version byte so the
 * layout can evolve; composite keys start with the scope, length-prefixed, so no (scope, key) pair can be
 * read as another.
 *
 * <pre>
 * data   key: u16 scopeLength, scope UTF-8, key bytes        value: u8 version, i64 token, value bytes
 * fence  key: scope UTF-8                                     value: u8 version, u8 policy, i64 accepted,
 *                                                                    i64 revision, u16 lockLength, lock UTF-8
 * idem   key: u16 scopeLength, scope UTF-8, idempotency key   value: u8 version, i64 token, i64 accepted,
 *                                                                    i64 revision, i32 opsApplied, i64 sequence,
 *                                                                    [32 bytes opsDigest]
 * </pre>
 *
 * <p>The {@code opsDigest} of an idem record ({@link OpsDigest}) was added without a new version: a record
 * written before it simply ends after {@code sequence} and reads with no digest, which the engine treats as
 * matching any retry; and a build from before it reads a record with one, ignoring the trailing bytes, so a
 * store stays readable both after an upgrade and after a rollback.
 */
final class StoreCodec {
    static final byte VERSION = 1;
    private static final int DESCRIBED_BYTES_MAX = 32;

    private StoreCodec() {}

    /** A decoded fence record. */
    record FenceRecord(String lock, FencePolicy policy, long accepted, long revision) {}

    /** A decoded data record. */
    record DataRecord(long token, byte[] value) {}

    /**
     * A decoded idempotency record: the first result of a write, its place in eviction order, and the digest of
     * its request ({@link OpsDigest}); {@code opsDigest} is null for a record written before digests were kept.
     */
    record IdempotencyRecord(long token, long accepted, long revision, int opsApplied, long sequence,
            byte[] opsDigest) {}

    static byte[] dataKey(String scope, byte[] key) {
        return prefixed(scope, key);
    }

    static byte[] idempotencyKey(String scope, String idempotencyKey) {
        return prefixed(scope, idempotencyKey.getBytes(StandardCharsets.UTF_8));
    }

    /** Splits an idempotency key into its scope and key; for loading the index on open. */
    static String[] splitIdempotencyKey(byte[] bytes) {
        if (bytes.length < Short.BYTES) {
            throw corrupt("idem", "key of " + bytes.length + " bytes is shorter than its scope length");
        }
        int scopeLength = Short.toUnsignedInt(ByteBuffer.wrap(bytes).getShort());
        if (scopeLength > bytes.length - Short.BYTES) {
            throw corrupt("idem", "key of " + bytes.length + " bytes is shorter than its scope of " + scopeLength);
        }
        String scope = name("idem", "scope", bytes, Short.BYTES, scopeLength);
        String key = new String(bytes, 2 + scopeLength, bytes.length - 2 - scopeLength, StandardCharsets.UTF_8);
        return new String[] {scope, key};
    }

    static byte[] fenceKey(String scope) {
        return scope.getBytes(StandardCharsets.UTF_8);
    }

    static String scopeOfFenceKey(byte[] bytes) {
        return name("fence", "scope", bytes, 0, bytes.length);
    }

    static byte[] dataValue(long token, byte[] value) {
        return ByteBuffer.allocate(1 + Long.BYTES + value.length).put(VERSION).putLong(token).put(value).array();
    }

    static DataRecord decodeData(byte[] bytes) {
        ByteBuffer buffer = versioned(bytes, "data");
        need(buffer, Long.BYTES, "data", "token");
        long token = buffer.getLong();
        byte[] value = new byte[buffer.remaining()];
        buffer.get(value);
        return new DataRecord(token, value);
    }

    static byte[] fenceValue(String lock, FencePolicy policy, long accepted, long revision) {
        byte[] lockBytes = lock.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(1 + 1 + Long.BYTES * 2 + Short.BYTES + lockBytes.length)
                .put(VERSION).put((byte) policy.ordinal()).putLong(accepted).putLong(revision)
                .putShort((short) lockBytes.length).put(lockBytes).array();
    }

    static FenceRecord decodeFence(byte[] bytes) {
        ByteBuffer buffer = versioned(bytes, "fence");
        need(buffer, 1 + Long.BYTES * 2 + Short.BYTES, "fence", "policy, accepted token, revision and lock length");
        int policyOrdinal = buffer.get();
        if (policyOrdinal < 0 || policyOrdinal >= FencePolicy.values().length) {
            throw new InternalException("fence record has unknown policy " + policyOrdinal);
        }
        long accepted = buffer.getLong();
        long revision = buffer.getLong();
        int lockLength = Short.toUnsignedInt(buffer.getShort());
        need(buffer, lockLength, "fence", "lock name");
        String lock = name("fence", "lock", bytes, buffer.position(), lockLength);
        return new FenceRecord(lock, FencePolicy.values()[policyOrdinal], accepted, revision);
    }

    static byte[] idempotencyValue(IdempotencyRecord record) {
        byte[] digest = record.opsDigest() == null ? new byte[0] : record.opsDigest();
        assert digest.length == 0 || digest.length == OpsDigest.BYTES : "ops digest of " + digest.length + " bytes";
        return ByteBuffer.allocate(1 + Long.BYTES * 4 + Integer.BYTES + digest.length).put(VERSION)
                .putLong(record.token()).putLong(record.accepted()).putLong(record.revision())
                .putInt(record.opsApplied()).putLong(record.sequence()).put(digest).array();
    }

    /** Decodes an idem record, with its ops digest or, written before digests were kept, without (null). */
    static IdempotencyRecord decodeIdempotency(byte[] bytes) {
        ByteBuffer buffer = versioned(bytes, "idem");
        need(buffer, Long.BYTES * 4 + Integer.BYTES, "idem", "token, accepted token, revision, ops and sequence");
        long token = buffer.getLong();
        long accepted = buffer.getLong();
        long revision = buffer.getLong();
        int opsApplied = buffer.getInt();
        long sequence = buffer.getLong();
        byte[] digest = null;
        if (buffer.remaining() == OpsDigest.BYTES) {
            digest = new byte[OpsDigest.BYTES];
            buffer.get(digest);
        } else if (buffer.hasRemaining()) {
            throw new InternalException("idem record has " + buffer.remaining() + " bytes after its sequence, neither"
                    + " none nor an ops digest of " + OpsDigest.BYTES);
        }
        return new IdempotencyRecord(token, accepted, revision, opsApplied, sequence, digest);
    }

    /** Returns a key for messages: quoted text when it is printable UTF-8, else hex; both truncated. */
    static String describe(byte[] key) {
        try {
            String text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(key)).toString();
            if (text.chars().noneMatch(Character::isISOControl)) {
                return text.length() <= DESCRIBED_BYTES_MAX ? "'" + text + "'"
                        : "'" + text.substring(0, DESCRIBED_BYTES_MAX) + "...'";
            }
        } catch (CharacterCodingException e) {
            // not text: shown as hex below
        }
        StringBuilder hex = new StringBuilder("0x");
        for (int i = 0; i < Math.min(key.length, DESCRIBED_BYTES_MAX); i++) {
            hex.append(String.format(Locale.ROOT, "%02x", key[i] & 0xff));
        }
        return key.length > DESCRIBED_BYTES_MAX ? hex + "..." : hex.toString();
    }

    private static byte[] prefixed(String scope, byte[] suffix) {
        byte[] scopeBytes = scope.getBytes(StandardCharsets.UTF_8);
        assert scopeBytes.length <= LockNames.BYTES_MAX : "scope of " + scopeBytes.length + " bytes: " + scope;
        return ByteBuffer.allocate(Short.BYTES + scopeBytes.length + suffix.length)
                .putShort((short) scopeBytes.length).put(scopeBytes).put(suffix).array();
    }

    /**
     * Refuses a record of {@code family} with fewer than {@code bytes} left for {@code what}: a torn or foreign
     * record is reported as such, as every decode failure here is, never as a buffer's own exception.
     */
    private static void need(ByteBuffer buffer, int bytes, String family, String what) {
        if (buffer.remaining() < bytes) {
            throw corrupt(family, "record has " + buffer.remaining() + " bytes left for its " + what + ", which takes "
                    + bytes);
        }
    }

    /** Decodes a lock or scope name of a record, refusing an invalid one as a corrupt record. */
    private static String name(String family, String field, byte[] bytes, int offset, int length) {
        try {
            return LockNames.decode(field, bytes, offset, length);
        } catch (FencerException e) {
            throw corrupt(family, "record's " + field + " is invalid: " + e.getMessage());
        }
    }

    private static InternalException corrupt(String family, String what) {
        return new InternalException(family + " " + what);
    }

    private static ByteBuffer versioned(byte[] bytes, String family) {
        if (bytes.length == 0 || bytes[0] != VERSION) {
            throw new InternalException(family + " record has format version "
                    + (bytes.length == 0 ? "none" : Byte.toString(bytes[0])) + ", this build reads " + VERSION);
        }
        return ByteBuffer.wrap(bytes, 1, bytes.length - 1);
    }
}

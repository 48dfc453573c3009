package io.fencer.lock;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import java.util.UUID;

/**
 * The file of a backup of the lock state, and of the seed a restored peer starts from: the one place both are written
 * and read.
 *
 * <p>Version 1, big-endian: {@code magic "FENCERBK" (8) | version:u16 | kind:u8 | createdAtMillis:i64 |
 * sourceGroup (16: the UUID of the Raft group it was taken from, most significant half first) | appliedIndex:i64 |
 * stateBytes:i32 | state (stateBytes: the lock state in {@link SnapshotCodec}'s format) | SHA-256 (32) of every byte
 * before it}. The checksum is checked before anything else is believed, so a damaged or truncated file is refused
 * whole, with what is wrong, and nothing is restored from it; the state is then read as a snapshot is, checked whole.
 *
 * <p>A {@link Kind#BACKUP} is what {@code fencer backup} writes of a running group; a {@link Kind#SEED} is what
 * {@code fencer restore} makes of a backup in a new peer's data directory: the restored state
 * ({@link LockStateMachine#restoredInGeneration}) that the peer starts from. Every peer of a restored group starts
 * from the same seed, and the group's Raft id is derived from the seed's digest ({@link Contents#stateDigest}), so a
 * peer restored from another seed, or not restored, cannot join that group.
 */
public final class BackupFile {
    private static final byte[] MAGIC = "FENCERBK".getBytes(StandardCharsets.US_ASCII);
    /** The version this class writes and reads. */
    public static final int VERSION = 1;
    private static final int DIGEST_BYTES = 32;
    private static final int HEAD_BYTES = MAGIC.length + 2 + 1 + 8 + 16 + 8 + 4;
    /** The largest state a file holds: far above what the limits of a lock service let its state reach. */
    public static final int STATE_BYTES_MAX = 1 << 30;
    /** The largest file read. */
    public static final long FILE_BYTES_MAX = (long) HEAD_BYTES + STATE_BYTES_MAX + DIGEST_BYTES;

    /**
     * The kind code of the fenced store's backup, whose format {@code io.fencer.store.StoreBackupFile} owns in the
     * same container: named here only so that a store backup given to the lock group's restore is named as such.
     */
    private static final int KIND_CODE_STORE_BACKUP = 3;

    /** What a file holds. */
    public enum Kind {
        /** A copy of a running group's state. */
        BACKUP(1),
        /** The state a restored peer starts from. */
        SEED(2);

        final int code;

        Kind(int code) {
            this.code = code;
        }

        static Kind of(int code) {
            for (Kind kind : values()) {
                if (kind.code == code) {
                    return kind;
                }
            }
            return null;
        }
    }

    /**
     * A file's contents.
     *
     * @param state the lock state in {@link SnapshotCodec}'s format
     */
    public record Contents(Kind kind, long createdAtMillis, UUID sourceGroup, long appliedIndex, byte[] state) {
        public Contents {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(sourceGroup, "sourceGroup");
            Objects.requireNonNull(state, "state");
            if (state.length > STATE_BYTES_MAX) {
                throw new IllegalArgumentException("a state of " + state.length + " bytes is over the "
                        + STATE_BYTES_MAX + " a backup file holds");
            }
        }

        /** Reads the state, checked whole. */
        public LockStateMachine machine(Limits limits) throws IOException {
            return LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(state)), limits);
        }

        /** Returns the SHA-256 of the state in hexadecimal: what names a restored group. */
        public String stateDigest() {
            return HexFormat.of().formatHex(sha256(state, state.length));
        }
    }

    /** A file that is not a backup this release reads, or is damaged: the message says which and why. */
    public static final class BackupFileException extends IOException {
        private static final long serialVersionUID = 1L;

        BackupFileException(String message) {
            super(message);
        }

        BackupFileException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private BackupFile() {}

    /** Returns the bytes of the state of {@code machine}, as a file holds it. */
    public static byte[] stateOf(LockStateMachine machine) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            machine.writeSnapshot(out);
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory failed", e);
        }
        return bytes.toByteArray();
    }

    /** Returns the file of {@code contents}. */
    public static byte[] write(Contents contents) {
        ByteBuffer buffer = ByteBuffer.allocate(HEAD_BYTES + contents.state().length + DIGEST_BYTES);
        buffer.put(MAGIC).putShort((short) VERSION).put((byte) contents.kind().code)
                .putLong(contents.createdAtMillis())
                .putLong(contents.sourceGroup().getMostSignificantBits())
                .putLong(contents.sourceGroup().getLeastSignificantBits())
                .putLong(contents.appliedIndex()).putInt(contents.state().length).put(contents.state());
        buffer.put(sha256(buffer.array(), buffer.position()));
        return buffer.array();
    }

    /**
     * Reads a file of {@code expected} kind, from {@code source} (named in errors).
     *
     * @throws BackupFileException naming the source and what is wrong: not a backup, a version or kind this release
     *     does not read, a checksum that does not match (damaged or truncated), a state that does not load
     */
    public static Contents read(byte[] bytes, Kind expected, String source, Limits limits)
            throws BackupFileException {
        if (bytes.length < MAGIC.length || !Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new BackupFileException(source + " is not a Fencer backup: it does not start with \"FENCERBK\"");
        }
        if (bytes.length < HEAD_BYTES + DIGEST_BYTES) {
            throw new BackupFileException(source + " is truncated: " + bytes.length + " bytes, fewer than a backup's "
                    + (HEAD_BYTES + DIGEST_BYTES) + " bytes of head and checksum");
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        buffer.position(MAGIC.length);
        int version = Short.toUnsignedInt(buffer.getShort());
        if (version != VERSION) {
            throw new BackupFileException(source + " is a backup of format version " + version + "; this release"
                    + " reads version " + VERSION);
        }
        byte[] expectedDigest = sha256(bytes, bytes.length - DIGEST_BYTES);
        if (!MessageDigest.isEqual(expectedDigest, Arrays.copyOfRange(bytes, bytes.length - DIGEST_BYTES,
                bytes.length))) {
            throw new BackupFileException(source + " is damaged: its SHA-256 checksum does not match its "
                    + bytes.length + " bytes (changed or truncated)");
        }
        int code = Byte.toUnsignedInt(buffer.get());
        Kind kind = Kind.of(code);
        if (kind != expected) {
            String is = kind != null ? "a " + name(kind) : code == KIND_CODE_STORE_BACKUP
                    ? "a backup of the fenced store (of fencer store backup; restore it with fencer store restore)"
                    : "of an unknown kind (" + code + ")";
            throw new BackupFileException(source + " is " + is + ", not a " + name(expected));
        }
        return contents(buffer, kind, bytes.length, source, limits);
    }

    private static Contents contents(ByteBuffer buffer, Kind kind, int length, String source, Limits limits)
            throws BackupFileException {
        long createdAtMillis = buffer.getLong();
        UUID group = new UUID(buffer.getLong(), buffer.getLong());
        long appliedIndex = buffer.getLong();
        int stateBytes = buffer.getInt();
        if (stateBytes < 0 || stateBytes != length - HEAD_BYTES - DIGEST_BYTES) {
            throw new BackupFileException(source + " says its state has " + stateBytes + " bytes, but "
                    + (length - HEAD_BYTES - DIGEST_BYTES) + " follow its head");
        }
        byte[] state = new byte[stateBytes];
        buffer.get(state);
        Contents contents = new Contents(kind, createdAtMillis, group, appliedIndex, state);
        try {
            contents.machine(limits);
        } catch (IOException | RuntimeException e) {
            throw new BackupFileException(source + " holds a lock state that does not load: " + e.getMessage(), e);
        }
        return contents;
    }

    private static String name(Kind kind) {
        return kind == Kind.BACKUP ? "backup (of fencer backup)" : "restored peer's seed (of fencer restore)";
    }

    private static byte[] sha256(byte[] bytes, int length) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(bytes, 0, length);
            return digest.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}

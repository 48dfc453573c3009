package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The file of a backup of the fenced store: the one place it is written and read. It shares the {@code FENCERBK}
 * container of the lock group's backup (magic, format version, kind, SHA-256 over every byte), with its own kind,
 * so either restore command names the other's file for what it is instead of misreading it.
 *
 * <p>Version 1, big-endian: {@code magic "FENCERBK" (8) | version:u16 | kind:u8 (3, a store backup) |
 * createdAtMillis:i64 | sequence:i64 (the RocksDB sequence number of the snapshot copied) | records | end | SHA-256
 * (32) of every byte before it}. A record is {@code tag:u8 | keyBytes:u32 | key | valueBytes:u32 | value}, the key and
 * value being the store's own records ({@code StoreCodec}) of family {@code fence} (tag 1), {@code data} (2) or
 * {@code idem} (3), in that order of families, each family in key order. The end is {@code tag 0 | fences:i64 |
 * data:i64 | idem:i64}, the counts of the records before it.
 *
 * <p>A file is believed only whole: {@link #verify} checks the head, then the checksum over every byte, then every
 * record (each decodes as the store would read it, and every data record belongs to a scope whose fence the file
 * holds, since a key without its scope's fence would admit any token after a restore), then the counts. A damaged,
 * truncated, foreign or lock-group file is refused with what is wrong.
 */
public final class StoreBackupFile {
    private static final byte[] MAGIC = "FENCERBK".getBytes(StandardCharsets.US_ASCII);
    /** The version this class writes and reads. */
    public static final int VERSION = 1;
    /** This file's kind in the container; the lock group's backup is 1 and its restored seed 2. */
    static final int KIND_STORE = 3;
    private static final int KIND_LOCK_BACKUP = 1;
    private static final int KIND_LOCK_SEED = 2;
    static final int DIGEST_BYTES = 32;
    /** The head's bytes: magic, version, kind, createdAtMillis, sequence. */
    static final int HEAD_BYTES = MAGIC.length + 2 + 1 + 8 + 8;
    static final byte TAG_END = 0;
    static final byte TAG_FENCE = 1;
    static final byte TAG_DATA = 2;
    static final byte TAG_IDEMPOTENCY = 3;
    /** The longest record key read: a scope (at most 256 bytes) and a key, far above the store's key limits. */
    public static final int RECORD_KEY_BYTES_MAX = 1 << 20;
    /** The longest record value read: far above the largest value a request can carry (5 MiB). */
    public static final int RECORD_VALUE_BYTES_MAX = 64 << 20;
    /** The largest file read (1 TiB). */
    public static final long FILE_BYTES_MAX = 1L << 40;

    /** A scope as the file holds it: its binding, policy and accepted token. */
    public record ScopeFence(String scope, String lock, FencePolicy policy, long accepted) {}

    /**
     * What a checked file holds.
     *
     * @param sequence the RocksDB sequence number of the snapshot the backup copied
     * @param scopes every scope's fence, in scope order
     */
    public record Summary(long createdAtMillis, long sequence, List<ScopeFence> scopes, long dataRecords,
            long idempotencyRecords, long fileBytes) {
        public Summary {
            scopes = List.copyOf(scopes);
        }
    }

    /** A file that is not a store backup this release reads, or is damaged: the message says which and why. */
    public static final class StoreBackupFileException extends IOException {
        private static final long serialVersionUID = 1L;

        StoreBackupFileException(String message) {
            super(message);
        }

        StoreBackupFileException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Receives the records of a file being read, in file order. */
    interface RecordSink {
        /** Receives one record; {@code tag} is {@link #TAG_FENCE}, {@link #TAG_DATA} or {@link #TAG_IDEMPOTENCY}. */
        void record(byte tag, byte[] key, byte[] value) throws IOException;
    }

    private StoreBackupFile() {}

    /**
     * Checks the file at {@code path} whole and returns what it holds; reads it twice (the checksum first, so a
     * damaged file is named damaged rather than by the first record it garbles), keeping only the scopes' fences.
     *
     * @throws StoreBackupFileException naming the file and what is wrong: not a Fencer backup, a version this
     *     release does not read, a checksum that does not match (changed or truncated), a lock group's file, a
     *     record that does not decode or a key without its scope's fence
     * @throws IOException when the file cannot be read
     */
    public static Summary verify(Path path) throws IOException {
        return read(path, (tag, key, value) -> { });
    }

    /** Checks the file as {@link #verify} does, then reads it again, handing every record to {@code sink}. */
    static Summary read(Path path, RecordSink sink) throws IOException {
        long size = checkHeadAndDigest(path);
        try (InputStream file = Files.newInputStream(path)) {
            MessageDigest digest = sha256();
            DataInputStream in = new DataInputStream(new DigestInputStream(
                    new BufferedInputStream(new BoundedInput(file, size - DIGEST_BYTES), 1 << 16), digest));
            Summary summary = records(in, path, size, sink);
            byte[] stored = file.readNBytes(DIGEST_BYTES);
            if (!MessageDigest.isEqual(digest.digest(), stored)) {
                throw new StoreBackupFileException(path + " changed while it was read: its SHA-256 checksum no longer"
                        + " matches");
            }
            return summary;
        } catch (EOFException e) {
            throw new StoreBackupFileException(path + " ends inside a record or before its end record", e);
        }
    }

    /** Receives the scopes of a file, one whole scope at a time ({@link #readScopes}). */
    @FunctionalInterface
    public interface ScopeSink {
        /**
         * Receives one scope.
         *
         * @param scope the scope with every key, or, when {@code whole} is false, with none
         * @param keyBytes the bytes of the scope's keys and values together
         * @param whole false when the scope's keys and values exceed the caller's bound: they were counted, not kept
         */
        void scope(ImportedScope scope, long keyBytes, boolean whole) throws IOException;
    }

    /**
     * Checks the file as {@link #verify} does (its checksum before any record is handed on), then hands every scope,
     * whole, to {@code sink}: those with keys in the file's order of keys, then those without. Keeps at most one
     * scope's keys in memory, and of a scope whose keys and values exceed {@code scopeKeyBytesMax} none: it is handed
     * on with its size and {@code whole} false. Idempotency records are not handed on (they answer retries of writes
     * made to the store the file was taken of).
     */
    public static Summary readScopes(Path path, long scopeKeyBytesMax, ScopeSink sink) throws IOException {
        java.util.Map<String, StoreCodec.FenceRecord> fences = new java.util.LinkedHashMap<>();
        ScopeRun[] run = {null};
        Summary summary = read(path, (tag, key, value) -> {
            if (tag == TAG_FENCE) {
                fences.put(StoreCodec.scopeOfFenceKey(key), StoreCodec.decodeFence(value));
                return;
            }
            if (tag != TAG_DATA) {
                return;
            }
            String scope = StoreCodec.splitIdempotencyKey(key)[0]; // data keys are prefixed the same way
            if (run[0] != null && !run[0].scope.equals(scope)) {
                run[0].handTo(sink);
                run[0] = null;
            }
            if (run[0] == null) {
                run[0] = new ScopeRun(scope, fences.remove(scope), scopeKeyBytesMax);
            }
            byte[] userKey = Arrays.copyOfRange(key, StoreCodec.dataKey(scope, new byte[0]).length, key.length);
            run[0].add(userKey, StoreCodec.decodeData(value));
        });
        if (run[0] != null) {
            run[0].handTo(sink);
        }
        for (java.util.Map.Entry<String, StoreCodec.FenceRecord> fence : fences.entrySet()) {
            new ScopeRun(fence.getKey(), fence.getValue(), scopeKeyBytesMax).handTo(sink);
        }
        return summary;
    }

    /** The keys of one scope read so far, kept up to a bound. */
    private static final class ScopeRun {
        final String scope;
        final StoreCodec.FenceRecord fence;
        final long keyBytesMax;
        final List<ImportedScope.Key> keys = new ArrayList<>();
        long keyBytes;

        ScopeRun(String scope, StoreCodec.FenceRecord fence, long keyBytesMax) {
            this.scope = scope;
            this.fence = Objects.requireNonNull(fence, scope); // verified: every key's scope has its fence
            this.keyBytesMax = keyBytesMax;
        }

        void add(byte[] key, StoreCodec.DataRecord record) {
            keyBytes += key.length + record.value().length;
            if (keyBytes <= keyBytesMax) {
                keys.add(new ImportedScope.Key(key, record.value(), record.token()));
            } else {
                keys.clear(); // over the bound: counted from now on, not kept
            }
        }

        void handTo(ScopeSink sink) throws IOException {
            boolean whole = keyBytes <= keyBytesMax;
            sink.scope(new ImportedScope(scope, fence.lock(), fence.policy(), fence.accepted(), fence.revision(),
                    whole ? keys : List.of()), keyBytes, whole);
        }
    }

    /** Checks magic, version, size and checksum, then kind; returns the file's size. */
    private static long checkHeadAndDigest(Path path) throws IOException {
        long size = Files.size(path);
        byte[] head;
        try (InputStream in = Files.newInputStream(path)) {
            head = in.readNBytes(HEAD_BYTES);
        }
        if (head.length < MAGIC.length || !Arrays.equals(head, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new StoreBackupFileException(path + " is not a Fencer backup: it does not start with \"FENCERBK\"");
        }
        if (size < HEAD_BYTES + 1 + 3L * Long.BYTES + DIGEST_BYTES) {
            throw new StoreBackupFileException(path + " is truncated: " + size + " bytes, fewer than a store"
                    + " backup's " + (HEAD_BYTES + 1 + 3 * Long.BYTES + DIGEST_BYTES) + " bytes of head, end and"
                    + " checksum");
        }
        if (size > FILE_BYTES_MAX) {
            throw new StoreBackupFileException(path + " has " + size + " bytes, more than the " + FILE_BYTES_MAX
                    + " a store backup may have");
        }
        ByteBuffer buffer = ByteBuffer.wrap(head, MAGIC.length, head.length - MAGIC.length);
        int version = Short.toUnsignedInt(buffer.getShort());
        if (version != VERSION) {
            throw new StoreBackupFileException(path + " is a backup of format version " + version + "; this release"
                    + " reads version " + VERSION);
        }
        checkDigest(path, size);
        int kind = Byte.toUnsignedInt(buffer.get());
        if (kind != KIND_STORE) {
            throw new StoreBackupFileException(path + " is " + kindName(kind) + ", not a store backup (of fencer"
                    + " store backup)" + (kind == KIND_LOCK_BACKUP ? ": restore it with fencer restore" : ""));
        }
        return size;
    }

    private static void checkDigest(Path path, long size) throws IOException {
        MessageDigest digest = sha256();
        byte[] stored;
        try (InputStream in = Files.newInputStream(path)) {
            InputStream body = new BoundedInput(in, size - DIGEST_BYTES);
            byte[] buffer = new byte[1 << 16];
            for (int n = body.read(buffer); n > 0; n = body.read(buffer)) {
                digest.update(buffer, 0, n);
            }
            stored = in.readNBytes(DIGEST_BYTES);
        }
        if (!MessageDigest.isEqual(digest.digest(), stored)) {
            throw new StoreBackupFileException(path + " is damaged: its SHA-256 checksum does not match its " + size
                    + " bytes (changed or truncated)");
        }
    }

    private static String kindName(int kind) {
        return switch (kind) {
            case KIND_LOCK_BACKUP -> "a lock group's backup (of fencer backup)";
            case KIND_LOCK_SEED -> "a restored peer's seed (of fencer restore)";
            default -> "of an unknown kind " + kind;
        };
    }

    /** Reads the head's fields (already checked), every record and the end record. */
    private static Summary records(DataInputStream in, Path path, long size, RecordSink sink) throws IOException {
        in.readFully(new byte[MAGIC.length + 2 + 1]); // read, not skipped: skipped bytes miss the digest
        long createdAtMillis = in.readLong();
        long sequence = in.readLong();
        List<ScopeFence> scopes = new ArrayList<>();
        Set<String> fenced = new HashSet<>();
        long[] counts = new long[4];
        byte last = TAG_FENCE;
        while (true) {
            byte tag = in.readByte();
            if (tag == TAG_END) {
                break;
            }
            if (tag < last || tag > TAG_IDEMPOTENCY) {
                throw new StoreBackupFileException(path + " holds a record of tag " + tag + " after tag " + last
                        + ": records come in the order fence (1), data (2), idem (3)");
            }
            last = tag;
            byte[] key = field(in, RECORD_KEY_BYTES_MAX, path, "key");
            byte[] value = field(in, RECORD_VALUE_BYTES_MAX, path, "value");
            check(path, tag, key, value, scopes, fenced);
            counts[tag]++;
            sink.record(tag, key, value);
        }
        long fences = in.readLong();
        long data = in.readLong();
        long idempotency = in.readLong();
        if (fences != counts[TAG_FENCE] || data != counts[TAG_DATA] || idempotency != counts[TAG_IDEMPOTENCY]) {
            throw new StoreBackupFileException(path + " says it holds " + fences + " fences, " + data + " keys and "
                    + idempotency + " idempotency records, but holds " + counts[TAG_FENCE] + ", " + counts[TAG_DATA]
                    + " and " + counts[TAG_IDEMPOTENCY]);
        }
        if (in.read() != -1) {
            throw new StoreBackupFileException(path + " holds bytes after its end record");
        }
        return new Summary(createdAtMillis, sequence, scopes, data, idempotency, size);
    }

    private static byte[] field(DataInputStream in, int bytesMax, Path path, String what) throws IOException {
        int length = in.readInt();
        if (length < 0 || length > bytesMax) {
            throw new StoreBackupFileException(path + " holds a record " + what + " of "
                    + Integer.toUnsignedLong(length) + " bytes, outside [0, " + bytesMax + "]");
        }
        byte[] bytes = new byte[length];
        in.readFully(bytes);
        return bytes;
    }

    /** Decodes a record as the store reads it, refusing one that does not decode or whose scope has no fence. */
    private static void check(Path path, byte tag, byte[] key, byte[] value, List<ScopeFence> scopes,
            Set<String> fenced) throws StoreBackupFileException {
        try {
            if (tag == TAG_FENCE) {
                String scope = StoreCodec.scopeOfFenceKey(key);
                StoreCodec.FenceRecord fence = StoreCodec.decodeFence(value);
                if (!fenced.add(scope)) {
                    throw new StoreBackupFileException(path + " holds the fence of scope '" + scope + "' twice");
                }
                scopes.add(new ScopeFence(scope, fence.lock(), fence.policy(), fence.accepted()));
                return;
            }
            String scope = StoreCodec.splitIdempotencyKey(key)[0]; // data keys are prefixed the same way
            if (tag == TAG_DATA) {
                StoreCodec.decodeData(value);
            } else {
                StoreCodec.decodeIdempotency(value);
            }
            if (!fenced.contains(scope)) {
                throw new StoreBackupFileException(path + " holds a " + (tag == TAG_DATA ? "key" : "idempotency record")
                        + " of scope '" + scope + "' but not the scope's fence");
            }
        } catch (FencerException e) {
            throw new StoreBackupFileException(path + " holds a " + familyName(tag) + " record that does not decode: "
                    + e.getMessage(), e);
        }
    }

    static String familyName(byte tag) {
        return tag == TAG_FENCE ? "fence" : tag == TAG_DATA ? "data" : "idem";
    }

    /**
     * Returns a whole store backup file that holds nothing, made {@code createdAtMillis}: the state of a store that
     * never applied a write, for a peer that must snapshot the group's replicated store without keeping one.
     */
    public static byte[] empty(long createdAtMillis) {
        Writer writer = new Writer(createdAtMillis, 0);
        writer.end();
        return writer.take(writer.pendingBytes());
    }

    /**
     * Builds a file in pieces, for {@link StoreBackup}: the head, records, then the end and the checksum; the
     * bytes made so far are taken with {@link #take}.
     */
    static final class Writer {
        private final Pending pending = new Pending();
        private final MessageDigest digest = sha256();
        private final long[] counts = new long[4];
        private boolean ended;

        Writer(long createdAtMillis, long sequence) {
            append(ByteBuffer.allocate(HEAD_BYTES).put(MAGIC).putShort((short) VERSION).put((byte) KIND_STORE)
                    .putLong(createdAtMillis).putLong(sequence).array());
        }

        void record(byte tag, byte[] key, byte[] value) {
            assert !ended : "a record after the end";
            assert tag >= TAG_FENCE && tag <= TAG_IDEMPOTENCY : "tag " + tag;
            if (key.length > RECORD_KEY_BYTES_MAX || value.length > RECORD_VALUE_BYTES_MAX) {
                throw new IllegalStateException("a " + familyName(tag) + " record of " + key.length + " + "
                        + value.length + " bytes is over a backup's limits (" + RECORD_KEY_BYTES_MAX + " + "
                        + RECORD_VALUE_BYTES_MAX + ")");
            }
            append(ByteBuffer.allocate(1 + Integer.BYTES).put(tag).putInt(key.length).array());
            append(key);
            append(ByteBuffer.allocate(Integer.BYTES).putInt(value.length).array());
            append(value);
            counts[tag]++;
        }

        void end() {
            assert !ended : "ended twice";
            append(ByteBuffer.allocate(1 + 3 * Long.BYTES).put(TAG_END).putLong(counts[TAG_FENCE])
                    .putLong(counts[TAG_DATA]).putLong(counts[TAG_IDEMPOTENCY]).array());
            pending.write(digest.digest(), 0, DIGEST_BYTES);
            ended = true;
        }

        int pendingBytes() {
            return pending.size();
        }

        /** Returns at most {@code bytesMax} of the bytes made and not taken yet, oldest first. */
        byte[] take(int bytesMax) {
            return pending.take(bytesMax);
        }

        private void append(byte[] bytes) {
            digest.update(bytes);
            pending.write(bytes, 0, bytes.length);
        }
    }

    /** Bytes made and not yet taken. */
    private static final class Pending extends ByteArrayOutputStream {
        byte[] take(int bytesMax) {
            int length = Math.min(bytesMax, count);
            byte[] taken = Arrays.copyOfRange(buf, 0, length);
            System.arraycopy(buf, length, buf, 0, count - length);
            count -= length;
            return taken;
        }
    }

    /** The first {@code limit} bytes of a stream: a file's body without its checksum. */
    private static final class BoundedInput extends InputStream {
        private final InputStream in;
        private long left;

        BoundedInput(InputStream in, long limit) {
            this.in = Objects.requireNonNull(in);
            this.left = limit;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] bytes, int offset, int length) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(bytes, offset, (int) Math.min(length, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}

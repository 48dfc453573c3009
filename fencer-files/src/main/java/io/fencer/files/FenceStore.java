package io.fencer.files;

import io.fencer.core.LimitExceededException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The fence file and the files of one directory, read and replaced under the directory's lock: a lock per directory
 * in this JVM (an OS file lock is held by the whole JVM, and closing any channel of the file would drop it) and the
 * OS lock on the lock file across processes.
 */
final class FenceStore {
    /** One lock per directory for the whole JVM, whichever instance opened it. */
    private static final ConcurrentHashMap<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The most stray temporary files one write removes: the rest wait for the next write. */
    private static final int SWEEP_FILES_MAX = 1000;

    private final Path directory;
    private final String scope;
    private final Path fenceFile;
    private final Path lockFile;

    interface IoAction<T> {
        T run() throws IOException;
    }

    FenceStore(Path directory, String scope) throws IOException {
        this.directory = directory.toRealPath();
        this.scope = scope;
        this.fenceFile = this.directory.resolve(FencedDirectory.FENCE_FILE_NAME);
        this.lockFile = this.directory.resolve(FencedDirectory.LOCK_FILE_NAME);
    }

    Path directory() {
        return directory;
    }

    /** Runs {@code action} holding the directory's lock, in this JVM and across processes. */
    <T> T exclusively(IoAction<T> action) throws IOException {
        ReentrantLock jvmLock = JVM_LOCKS.computeIfAbsent(directory, unused -> new ReentrantLock());
        if (jvmLock.isHeldByCurrentThread()) {
            throw new IllegalStateException("a fenced write or read of " + directory + " from inside a content"
                    + " writer of the same directory; a content writer must not call back into it");
        }
        jvmLock.lock();
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE); FileLock ignored = channel.lock()) {
            return action.run();
        } finally {
            jvmLock.unlock();
        }
    }

    /** Reads the fence file; a directory without one has accepted nothing. The caller holds the lock. */
    FenceState read() throws IOException {
        byte[] bytes;
        try (FileChannel channel = FileChannel.open(fenceFile, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size > FenceState.FILE_BYTES_MAX) {
                throw new FenceFileCorruptException(fenceFile, "it is " + size + " bytes, more than "
                        + FenceState.FILE_BYTES_MAX);
            }
            bytes = Channels.newInputStream(channel).readNBytes((int) size);
        } catch (NoSuchFileException e) {
            return FenceState.empty(scope);
        }
        FenceState state = FenceState.decode(fenceFile, bytes);
        if (!state.scope().equals(scope)) {
            throw new IllegalStateException("directory " + directory + " is fenced for scope '" + state.scope()
                    + "', not '" + scope + "'");
        }
        return state;
    }

    /**
     * Settles a pending write in memory, for readers: its content landed when its temporary file is gone (the
     * temporary file is written and fsynced before the pending record, and only the rename removes it).
     */
    FenceState settleInMemory(FenceState state) {
        FenceState.Pending pending = state.pending();
        if (pending == null) {
            return state;
        }
        boolean landed = !Files.exists(directory.resolve(pending.tempName()));
        return new FenceState(scope, Math.max(state.accepted(), pending.token()), null,
                landed ? FencedDirectory.with(state.writers(), pending.name(), pending.token()) : state.writers());
    }

    /**
     * Settles a pending write for a writer: the settled fence is made durable first and only then are stray
     * temporary files removed, so a crash in between cannot turn a write that did not land into one that did.
     */
    FenceState settle(FenceState state) throws IOException {
        FenceState settled = settleInMemory(state);
        if (state.pending() != null) {
            persist(settled);
        }
        sweepTemporaryFiles();
        return settled;
    }

    /**
     * Writes the content to a temporary file and fsyncs it, records the write as pending, renames the content into
     * place, fsyncs the directory, then raises the fence. The caller holds the lock and has checked the token.
     */
    void replace(FenceState state, long token, String name, FencedDirectory.ContentWriter writer,
            long contentBytesMax) throws IOException {
        String tempName = FencedDirectory.TEMP_PREFIX + token + "." + HexFormat.of().formatHex(randomBytes());
        Path temp = directory.resolve(tempName);
        try {
            writeSynced(temp, writer, contentBytesMax);
        } catch (IOException | RuntimeException | Error e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        persist(new FenceState(scope, state.accepted(), new FenceState.Pending(name, token, tempName),
                state.writers()));
        Files.move(temp, directory.resolve(name), StandardCopyOption.ATOMIC_MOVE,
                StandardCopyOption.REPLACE_EXISTING);
        syncDirectory();
        persist(new FenceState(scope, token, null, FencedDirectory.with(state.writers(), name, token)));
    }

    private static void writeSynced(Path file, FencedDirectory.ContentWriter writer, long bytesMax)
            throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            OutputStream out = new LimitedStream(Channels.newOutputStream(channel), bytesMax, file);
            writer.writeTo(out);
            out.flush();
            channel.force(true);
        }
    }

    /** Replaces the fence file atomically and durably: temporary file, fsync, rename, fsync of the directory. */
    private void persist(FenceState state) throws IOException {
        Path temp = directory.resolve(FencedDirectory.FENCE_FILE_NAME + ".tmp");
        try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            // One write may take only part of the buffer (a disk filling up): loop until the file system takes the
            // rest or fails, or the rename below would put a truncated fence in place.
            ByteBuffer bytes = ByteBuffer.wrap(state.encode());
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            channel.force(true);
        }
        Files.move(temp, fenceFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory();
    }

    private void syncDirectory() throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    private void sweepTemporaryFiles() throws IOException {
        int removed = 0;
        try (DirectoryStream<Path> strays = Files.newDirectoryStream(directory, FencedDirectory.TEMP_PREFIX + "*")) {
            for (Path stray : strays) {
                if (removed++ >= SWEEP_FILES_MAX) {
                    break;
                }
                Files.deleteIfExists(stray);
            }
        }
    }

    private static byte[] randomBytes() {
        byte[] bytes = new byte[8];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    /** Counts what passes and refuses more than the limit, naming it. */
    private static final class LimitedStream extends FilterOutputStream {
        private final long bytesMax;
        private final Path file;
        private long written;

        LimitedStream(OutputStream out, long bytesMax, Path file) {
            super(out);
            this.bytesMax = bytesMax;
            this.file = file;
        }

        @Override
        public void write(int b) throws IOException {
            count(1);
            out.write(b);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            count(length);
            out.write(bytes, offset, length);
        }

        @Override
        public void close() {
            // the channel is closed by its owner, after its fsync
        }

        private void count(int length) {
            written += length;
            if (written > bytesMax) {
                throw new LimitExceededException("contentBytesMax", bytesMax, "content for " + file + " exceeds"
                        + " contentBytesMax " + bytesMax + " bytes; nothing was replaced");
            }
        }
    }
}

package io.fencer.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A file the commands write whole or not at all ({@code fencer backup}, {@code fencer store backup}): its bytes go
 * to a temporary file of this run alone beside the target, are forced to disk and checked, and only then renamed
 * over the target, whose directory is then forced so that the rename survives a crash. A run that fails removes its
 * temporary file and leaves the target as it was; two runs to the same target never write into each other's file.
 *
 * <p>The file is made readable by its owner alone (where the file system has POSIX permissions), whatever the umask:
 * a store's backup holds every value it stores, a lock group's the hashes of its session secrets and its holders'
 * identities. Whoever should read it is given it by its owner.
 */
final class WholeFile {
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final Set<StandardOpenOption> CREATE_NEW_WRITE = EnumSet.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE);

    private WholeFile() {}

    /** Writes the file's bytes into the channel of the temporary file. */
    interface Body {
        void write(FileChannel channel) throws IOException;
    }

    /** Checks the temporary file once it is on disk, before it is kept; returns what the command reports. */
    interface Check<T> {
        T check(Path written) throws IOException;
    }

    /** Writes {@code target} with {@code body}, keeping it only if {@code check} passes; returns the check's result. */
    static <T> T write(Path target, Body body, Check<T> check) throws IOException {
        Path absolute = target.toAbsolutePath();
        Path temporary = absolute.resolveSibling(absolute.getFileName() + "."
                + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".tmp");
        boolean kept = false;
        try {
            try (FileChannel channel = FileChannel.open(temporary, CREATE_NEW_WRITE, ownerOnly(temporary))) {
                body.write(channel);
                channel.force(true);
            }
            T checked = check.check(temporary);
            Files.move(temporary, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            kept = true;
            syncDirectory(absolute.getParent());
            return checked;
        } catch (IOException | RuntimeException failure) {
            if (!kept) {
                delete(temporary, failure);
            }
            throw failure;
        }
    }

    private static FileAttribute<?>[] ownerOnly(Path file) {
        boolean posix = file.getFileSystem().supportedFileAttributeViews().contains("posix");
        return posix ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(OWNER_ONLY)}
                : new FileAttribute<?>[0];
    }

    /** Writes all of {@code bytes}: one channel write may take only part of them. */
    static void writeAll(FileChannel channel, byte[] bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    static void syncDirectory(Path directory) throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    /** Removes a failed run's temporary file; a failure to remove it is reported beside the run's own. */
    private static void delete(Path temporary, Exception failure) {
        try {
            Files.deleteIfExists(temporary);
        } catch (IOException e) {
            failure.addSuppressed(e);
        }
    }
}

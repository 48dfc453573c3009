package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.sun.security.auth.module.UnixSystem;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.util.Environment;

class RocksLibraryTest {
    private static final Instant NOW = Instant.parse("2026-12-05T12:00:00Z");
    private static final ClassLoader LOADER = RocksLibraryTest.class.getClassLoader();

    @TempDir
    Path tmp;

    @Test
    void copy_intoAMissingDirectory_makesItOwnerOnlyAndCopiesTheWholeLibraryUnderTheNameRocksDbLoads()
            throws Exception {
        Path base = tmp.resolve("missing").resolve("native");

        Path directory = RocksLibrary.copy(base, LOADER, NOW);

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(base))).isEqualTo("rwx------");
        Path library = directory.resolve(Environment.getJniLibraryFileName("rocksdbjni"));
        assertThat(crc32(Files.newInputStream(library))).isEqualTo(crc32(jarLibrary()));
        assertThat(directory.getParent()).isEqualTo(base);
        assertThat(directory.getFileName().toString()).matches("rocksdb-[0-9a-f]{8}-" + Files.size(library));
    }

    @Test
    void copy_whenAWholeCopyExists_reusesItWithoutWriting() throws Exception {
        Path library = library(RocksLibrary.copy(tmp, LOADER, NOW));
        Object inode = Files.getAttribute(library, "unix:ino");
        FileTime written = Files.getLastModifiedTime(library);

        assertThat(library(RocksLibrary.copy(tmp, LOADER, NOW))).isEqualTo(library);

        assertThat(Files.getAttribute(library, "unix:ino")).isEqualTo(inode);
        assertThat(Files.getLastModifiedTime(library)).isEqualTo(written);
    }

    @Test
    void copy_whenTheCopyIsCut_replacesItWithAWholeOne() throws Exception {
        Path library = library(RocksLibrary.copy(tmp, LOADER, NOW));
        long bytes = Files.size(library);
        try (var channel = java.nio.channels.FileChannel.open(library, java.nio.file.StandardOpenOption.WRITE)) {
            channel.truncate(bytes / 2);
        }

        RocksLibrary.copy(tmp, LOADER, NOW);

        assertThat(Files.size(library)).isEqualTo(bytes);
        assertThat(crc32(Files.newInputStream(library))).isEqualTo(crc32(jarLibrary()));
    }

    @Test
    void copy_removesTemporaryCopiesOlderThanTheirAgeLimitAndKeepsYoungerOnes() throws Exception {
        Path directory = RocksLibrary.copy(tmp, LOADER, NOW);
        Files.delete(library(directory));
        Path abandoned = Files.writeString(directory.resolve(RocksLibrary.PARTIAL_PREFIX + "killed.so"), "x");
        Files.setLastModifiedTime(abandoned, FileTime.from(NOW.minus(RocksLibrary.PARTIAL_AGE_MAX).minusSeconds(1)));
        Path beingWritten = Files.writeString(directory.resolve(RocksLibrary.PARTIAL_PREFIX + "writing.so"), "x");
        Files.setLastModifiedTime(beingWritten, FileTime.from(NOW.minus(Duration.ofMinutes(1))));

        RocksLibrary.copy(tmp, LOADER, NOW);

        assertThat(abandoned).doesNotExist();
        assertThat(beingWritten).exists();
        assertThat(library(directory)).exists();
    }

    @Test
    void copy_fromEightThreadsAtOnce_leavesOneWholeCopyAndNoTemporaryFile() throws Exception {
        Path base = tmp.resolve("native");
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            Callable<Path> copy = () -> RocksLibrary.copy(base, LOADER, NOW);
            List<Future<Path>> copies = threads.invokeAll(java.util.Collections.nCopies(8, copy));
            for (Future<Path> each : copies) {
                assertThat(each.get()).isEqualTo(copies.get(0).get());
            }
            Path directory = copies.get(0).get();
            try (var files = Files.list(directory)) {
                assertThat(files).containsExactly(library(directory));
            }
            assertThat(crc32(Files.newInputStream(library(directory)))).isEqualTo(crc32(jarLibrary()));
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void copy_intoADirectoryOthersCanWrite_refusesItNamingThePermissions() throws Exception {
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxrwxrwx"));

        assertThatThrownBy(() -> RocksLibrary.copy(tmp, LOADER, NOW)).isInstanceOf(IOException.class)
                .hasMessage(tmp + " can be written by others (rwxrwxrwx): a library loaded from it would be their"
                        + " code");
        assertThat(tmp).isEmptyDirectory();
    }

    @Test
    void copy_intoALink_refusesIt() throws Exception {
        Path target = Files.createDirectory(tmp.resolve("target"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), target);

        assertThatThrownBy(() -> RocksLibrary.copy(link, LOADER, NOW)).isInstanceOf(IOException.class)
                .hasMessageStartingWith(link + " is not a directory (a link or a file)");
        assertThat(target).isEmptyDirectory();
    }

    @Test
    void copy_intoADirectoryOfAnotherUser_refusesIt() throws Exception {
        assumeThat(new UnixSystem().getUid()).as("only root can give a directory to another user").isZero();
        Path others = Files.createDirectory(tmp.resolve("others"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Files.setAttribute(others, "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);

        assertThatThrownBy(() -> RocksLibrary.copy(others, LOADER, NOW)).isInstanceOf(IOException.class)
                .hasMessage(others + " belongs to uid 65534, not to this process's uid 0: a library loaded from it"
                        + " would be that user's code");
        assertThat(others).isEmptyDirectory();
    }

    private static Path library(Path directory) {
        return directory.resolve(Environment.getJniLibraryFileName("rocksdbjni"));
    }

    private static InputStream jarLibrary() {
        return LOADER.getResourceAsStream(Environment.getJniLibraryFileName("rocksdb"));
    }

    private static long crc32(InputStream stream) throws IOException {
        try (CheckedInputStream in = new CheckedInputStream(stream, new CRC32())) {
            in.transferTo(java.io.OutputStream.nullOutputStream());
            return in.getChecksum().getValue();
        }
    }
}

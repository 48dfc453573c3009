package io.fencer.store;

import com.sun.security.auth.module.UnixSystem;
import java.io.IOException;
import java.io.OutputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;
import org.rocksdb.RocksDB;
import org.rocksdb.util.Environment;

/**
 * Loads RocksDB's native library from one copy per build of it, made once and shared by every JVM of one user.
 *
 * <p>Why not RocksDB's own loader: it copies the 15 MB library out of its jar to a new, randomly named file in
 * {@code java.io.tmpdir} each time a JVM loads it, and deletes that copy only when the JVM exits cleanly. A server
 * killed with SIGKILL or by the OOM killer, one that crash-loops under a supervisor, and every killed process of a fault
 * test leave their copy behind, until the file system is full (5,347 copies, 77 GB, on one test machine). RocksDB's
 * two alternatives do not fit: the library on {@code java.library.path} is an install step, and
 * {@code ROCKSDB_SHAREDLIB_DIR} deletes and rewrites one fixed file on every load, so two JVMs starting at once can load
 * each other's half-written copy.
 *
 * <p>The copy is {@code DIR/rocksdb-CRC-SIZE/}, named by the CRC-32 and size of the library in the jar (both in the
 * jar's directory, so an existing copy is found without reading the 15 MB), where DIR is the system property
 * {@value #DIRECTORY_PROPERTY}, or else {@code fencer-native-UID} in {@code java.io.tmpdir}. A library loaded from a
 * directory that someone else can write is code of their choosing, so DIR must be a directory, not a link, that this
 * process's user owns and nobody else can write; a missing one is made with mode 0700. A copy is written under a
 * temporary name, synced and then renamed, so a JVM finds no copy or a whole one; a copy of another size is replaced.
 * A killed JVM can leave a temporary file only while it is copying, and a later copy removes those older than
 * {@link #PARTIAL_AGE_MAX}.
 *
 * <p>When DIR cannot be used (it belongs to another user, the file system has no POSIX permissions, the disk is full,
 * or a file system mounted {@code noexec} refuses to map the library), the load logs why and falls back to RocksDB's
 * own loader, which may still work, so the store still opens.
 */
final class RocksLibrary {
    /** The system property that names the directory of the copies. */
    static final String DIRECTORY_PROPERTY = "fencer.native.dir";
    /** A temporary copy older than this was left by a killed JVM; one being written is far younger. */
    static final Duration PARTIAL_AGE_MAX = Duration.ofMinutes(10);
    static final String PARTIAL_PREFIX = ".partial-";
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");
    private static final System.Logger LOG = System.getLogger(RocksLibrary.class.getName());
    /** Guarded by the class. */
    private static boolean loaded;

    private RocksLibrary() {}

    /** Loads the library once per JVM, from the shared copy when it can. */
    static synchronized void load() {
        if (loaded) {
            return;
        }
        try {
            Path copy = copy(directory(), RocksLibrary.class.getClassLoader(), Instant.now());
            RocksDB.loadLibrary(List.of(copy.toString()));
        } catch (IOException | UnsupportedOperationException | LinkageError e) {
            LOG.log(System.Logger.Level.WARNING, "loading RocksDB's native library with RocksDB's own loader, which"
                    + " leaves a 15 MB copy in " + System.getProperty("java.io.tmpdir") + " whenever this process is"
                    + " killed; set -D" + DIRECTORY_PROPERTY + " to a directory of this user to avoid it: " + e);
            RocksDB.loadLibrary();
        }
        loaded = true;
    }

    /** The directory of the copies: the system property, or this user's own in {@code java.io.tmpdir}. */
    static Path directory() throws IOException {
        String configured = System.getProperty(DIRECTORY_PROPERTY);
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath();
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "fencer-native-" + uid()).toAbsolutePath();
    }

    /**
     * Makes sure a whole copy of the library in {@code loader}'s RocksDB jar is in {@code base}, and returns the
     * directory that holds it, under the file name {@link RocksDB#loadLibrary(List)} loads.
     *
     * @throws IOException when {@code base} is not this user's alone, or the copy cannot be written
     */
    static Path copy(Path base, ClassLoader loader, Instant now) throws IOException {
        String resource = Environment.getJniLibraryFileName("rocksdb");
        URL url = loader.getResource(resource);
        String fallback = Environment.getFallbackJniLibraryFileName("rocksdb");
        if (url == null && fallback != null) {
            url = loader.getResource(fallback);
        }
        if (url == null) {
            throw new IOException("RocksDB's jar holds no native library " + resource + " for this platform");
        }
        Fingerprint fingerprint = fingerprint(url);
        Path directory = ownDirectory(base).resolve(String.format(Locale.ROOT, "rocksdb-%08x-%d", fingerprint.crc32(),
                fingerprint.bytes()));
        Files.createDirectories(directory);
        Path library = directory.resolve(Environment.getJniLibraryFileName("rocksdbjni"));
        if (Files.isRegularFile(library, LinkOption.NOFOLLOW_LINKS) && Files.size(library) == fingerprint.bytes()) {
            return directory;
        }
        removePartials(directory, now);
        write(url, fingerprint, library);
        return directory;
    }

    /** The CRC-32 and size of a library in a jar: {@code crc32} as an unsigned 32-bit value. */
    record Fingerprint(long crc32, long bytes) {}

    private static Fingerprint fingerprint(URL url) throws IOException {
        URLConnection connection = url.openConnection();
        if (connection instanceof JarURLConnection jar) {
            JarEntry entry = jar.getJarEntry();
            if (entry.getCrc() >= 0 && entry.getSize() >= 0) {
                return new Fingerprint(entry.getCrc(), entry.getSize());
            }
        }
        // Not a plain jar (a nested or exploded one): read it once to name it.
        return transfer(url, OutputStream.nullOutputStream());
    }

    /** Copies the library at {@code url} to {@code out}, and returns the fingerprint of what it read. */
    private static Fingerprint transfer(URL url, OutputStream out) throws IOException {
        try (CheckedInputStream in = new CheckedInputStream(url.openStream(), new CRC32())) {
            long bytes = in.transferTo(out);
            return new Fingerprint(in.getChecksum().getValue(), bytes);
        }
    }

    /**
     * Returns {@code base}, made if missing, once it is a directory (not a link) that this process's user owns and
     * nobody else can write.
     */
    static Path ownDirectory(Path base) throws IOException {
        if (Files.notExists(base, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectories(base, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            } catch (FileAlreadyExistsException raced) {
                // made by another JVM at the same moment: checked below like any existing one
            }
        }
        PosixFileAttributes attributes = Files.readAttributes(base, PosixFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isDirectory()) {
            throw new IOException(base + " is not a directory (a link or a file): RocksDB's library is not copied"
                    + " there");
        }
        long owner = ((Number) Files.getAttribute(base, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
        long uid = uid();
        if (owner != uid) {
            throw new IOException(base + " belongs to uid " + owner + ", not to this process's uid " + uid
                    + ": a library loaded from it would be that user's code");
        }
        Set<PosixFilePermission> permissions = attributes.permissions();
        if (permissions.contains(PosixFilePermission.GROUP_WRITE)
                || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IOException(base + " can be written by others (" + PosixFilePermissions.toString(permissions)
                    + "): a library loaded from it would be their code");
        }
        return base;
    }

    private static long uid() throws IOException {
        try {
            return new UnixSystem().getUid();
        } catch (LinkageError | RuntimeException e) {
            throw new IOException("cannot tell this process's user id: " + e, e);
        }
    }

    /** Removes temporary copies that killed JVMs left, and leaves the ones other JVMs may still be writing. */
    private static void removePartials(Path directory, Instant now) throws IOException {
        FileTime oldest = FileTime.from(now.minus(PARTIAL_AGE_MAX));
        try (var files = Files.newDirectoryStream(directory, PARTIAL_PREFIX + "*")) {
            for (Path file : files) {
                if (Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS).compareTo(oldest) < 0) {
                    Files.deleteIfExists(file);
                }
            }
        }
    }

    /** Writes the copy under a temporary name, checks and syncs it, then renames it into place. */
    private static void write(URL url, Fingerprint expected, Path library) throws IOException {
        Path partial = Files.createTempFile(library.getParent(), PARTIAL_PREFIX, ".so");
        try {
            Fingerprint copied;
            try (FileChannel channel = FileChannel.open(partial, StandardOpenOption.WRITE)) {
                copied = transfer(url, Channels.newOutputStream(channel));
                channel.force(true);
            }
            if (!copied.equals(expected)) {
                throw new IOException(String.format(Locale.ROOT, "the copy of RocksDB's library read %d bytes with CRC-32 %08x,"
                        + " where the jar lists %d bytes with %08x", copied.bytes(), copied.crc32(), expected.bytes(),
                        expected.crc32()));
            }
            Files.move(partial, library, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(partial);
        }
    }
}

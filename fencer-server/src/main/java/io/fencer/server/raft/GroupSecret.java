package io.fencer.server.raft;

import com.sun.security.auth.module.UnixSystem;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The secret every peer of a Raft group shares, and its file: the one place the file is written and read.
 *
 * <p>Peers prove to each other that they hold it before any Raft message ({@link PeerHandshake}). It is never
 * logged, listed or printed: {@link #toString()} shows its length only, and errors about a file name the file and
 * what is wrong with it, never its content.
 *
 * <p>The file is text in UTF-8, two lines:
 * <pre>
 * fencer-raft-secret v1
 * BASE64
 * </pre>
 * the first line names the format and its version (a later release may write {@code v2} and read both), the second is
 * the secret in standard base64 (RFC 4648, with padding): {@value #SECRET_BYTES_MIN} to {@value #SECRET_BYTES_MAX}
 * bytes ({@value #GENERATED_BYTES} random bytes when Fencer makes it). A final line break is optional; nothing else
 * may follow. The file should be readable by its owner alone (0600): one readable by others is used, with a warning.
 * A file that others could replace is refused: one of another user, one group or others may write, or one in a
 * directory others may write; one in a directory its group may write or another user owns is used with a warning
 * ({@link #checkDirectories}).
 *
 * <p>{@link #readOrCreate} makes the file when it does not exist, atomically: the secret is written to a temporary
 * file of its own beside it (0600, forced to the disk), which is then hard-linked to the file's name; the link fails
 * when the name exists, so of several peers started at once with the same path one creates it and the others read
 * that one, complete. Where hard links are unsupported the file is created exclusively ({@code O_EXCL}) and
 * written in place; a reader then waits briefly for its second line.
 */
public final class GroupSecret {
    /** The first line of a secret file of this version. */
    public static final String FORMAT_LINE = "fencer-raft-secret v1";
    /** The bytes of a secret Fencer makes. */
    public static final int GENERATED_BYTES = 32;
    /** The fewest bytes a secret may have: 256 bits, the output of the MAC it keys. */
    public static final int SECRET_BYTES_MIN = 32;
    /** The most bytes a secret may have. */
    public static final int SECRET_BYTES_MAX = 1_024;
    /** The largest secret file read: the two lines of the longest secret, with room for line breaks. */
    static final int FILE_BYTES_MAX = 2_048;
    /** How long a reader waits for a file that another process is writing in place to be complete. */
    static final Duration INCOMPLETE_WAIT_MAX = Duration.ofSeconds(2);
    private static final String FORMAT_PREFIX = "fencer-raft-secret ";
    private static final Set<PosixFilePermission> OWNER_ONLY =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The sticky bit of a Unix mode ({@code S_ISVTX}). */
    private static final int STICKY_BIT = 01000;

    private final byte[] bytes;

    private GroupSecret(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Returns a new random secret of {@value #GENERATED_BYTES} bytes. */
    public static GroupSecret generate() {
        byte[] bytes = new byte[GENERATED_BYTES];
        RANDOM.nextBytes(bytes);
        return new GroupSecret(bytes);
    }

    /**
     * Returns the secret of {@code bytes} (copied).
     *
     * @throws IllegalArgumentException when it has fewer than {@value #SECRET_BYTES_MIN} or more than
     *     {@value #SECRET_BYTES_MAX} bytes
     */
    public static GroupSecret of(byte[] bytes) {
        checkLength(bytes.length, "a group secret");
        return new GroupSecret(bytes.clone());
    }

    /** What {@link #readOrCreate} found: the secret, whether this call made the file, and a warning or null. */
    public record Loaded(GroupSecret secret, boolean created, String warning) {
        public Loaded {
            Objects.requireNonNull(secret, "secret");
        }
    }

    /**
     * Reads the secret file {@code file}, or creates it with a new secret when it does not exist.
     *
     * @throws IllegalArgumentException when the file exists but is not a secret file of a version this release
     *     reads (the message names the file and the fault, never its content)
     * @throws IOException when the file cannot be read or made (e.g. its directory does not exist)
     */
    public static Loaded readOrCreate(Path file) throws IOException {
        String directoryWarning = checkDirectories(file);
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            GroupSecret secret = generate();
            if (create(file, secret)) {
                return new Loaded(secret, true, directoryWarning);
            }
        }
        checkOwnership(file);
        String fileWarning = permissionWarning(file);
        return new Loaded(read(file), false, fileWarning != null ? fileWarning : directoryWarning);
    }

    /**
     * Refuses a secret file that another user owns or that group or others may write: whoever could write it could
     * choose the group's secret (a file planted at a default path in a shared directory, say). The link and the file
     * it names are both checked.
     *
     * @throws IllegalArgumentException naming the file, its owner and this process's user, or its permissions
     */
    static void checkOwnership(Path file) throws IOException {
        if (Files.getFileAttributeView(file, PosixFileAttributeView.class) == null) {
            return; // no owners to compare on this file system
        }
        for (LinkOption[] options : List.of(new LinkOption[] {LinkOption.NOFOLLOW_LINKS}, new LinkOption[0])) {
            Owner owner = Owner.of(file, options);
            if (!owner.isThisUser()) {
                throw new IllegalArgumentException("the group secret file " + file + " belongs to " + owner
                        + ", not to " + Owner.thisUser() + " who runs this server: another user could have chosen "
                        + "its secret");
            }
        }
        Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(file);
        if (permissions.contains(PosixFilePermission.GROUP_WRITE)
                || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IllegalArgumentException("the group secret file " + file + " may be written by others ("
                    + PosixFilePermissions.toString(permissions) + "): chmod 600 " + file);
        }
    }

    /**
     * Checks the directories that hold the secret file (its own, and that of the file a link names): whoever may
     * write one may delete the file and put another in its place between this server's check of the file and its
     * read, or delete it so that the next start makes a new secret and leaves the group. One that others may write
     * is refused, unless it has the sticky bit (a shared one, such as the system's temporary directory, where only a
     * file's owner may delete or rename it, and the file's owner is checked). One that its group may write, or that
     * belongs to a user other than this process's or root, is used with a warning: a umask or a mounted volume makes
     * such directories by accident, and its group or owner is someone the machine's administrator chose. Directories
     * further up are not checked: a deployment's layout above its own directories is the machine's, not the
     * server's, and refusing it would stop a server over a path it cannot change.
     *
     * @return a warning naming the directory and its mode or owner, or null
     * @throws IllegalArgumentException naming the directory and its mode, when others may write it
     */
    static String checkDirectories(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent)
                || Files.getFileAttributeView(parent, PosixFileAttributeView.class) == null) {
            return null; // a missing directory is reported when the file is made; no modes on this file system
        }
        Set<Path> directories = new LinkedHashSet<>();
        directories.add(parent.toRealPath());
        if (Files.exists(file)) {
            directories.add(file.toRealPath().getParent()); // the directory of the file a link names
        }
        String warning = null;
        for (Path directory : directories) {
            String found = checkDirectory(file, directory);
            warning = warning == null ? found : warning;
        }
        return warning;
    }

    private static String checkDirectory(Path file, Path directory) throws IOException {
        Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(directory);
        boolean others = permissions.contains(PosixFilePermission.OTHERS_WRITE);
        boolean group = permissions.contains(PosixFilePermission.GROUP_WRITE);
        if ((others || group) && !sticky(directory)) {
            String why = "the group secret file " + file + " is in the directory " + directory + ", which "
                    + (others ? "others" : "its group") + " may write (" + PosixFilePermissions.toString(permissions)
                    + "): whoever may write it may replace the secret; chmod " + (others ? "o-w " : "g-w ")
                    + directory + " (or chmod +t, for a directory others must write), or keep the secret elsewhere";
            if (others) {
                throw new IllegalArgumentException(why);
            }
            return why;
        }
        Owner owner = Owner.of(directory);
        if (!owner.isThisUser() && !owner.isRoot()) {
            Owner user = Owner.thisUser();
            return "the group secret file " + file + " is in the directory " + directory + ", which belongs to "
                    + owner + ", not to " + user + " or root: its owner may replace the secret; keep the secret in a"
                    + " directory of " + user + "'s";
        }
        return null;
    }

    /**
     * The owner of a file, or this process's user: compared by numeric uid where the platform gives one, since a
     * container's user may have no name (the JDK's {@code user.name} is then {@code ?}, a file's owner its uid in
     * digits); by name elsewhere.
     *
     * @param uid the numeric uid, or -1 where the platform gives none
     */
    private record Owner(long uid, String name) {
        private static final long ROOT_UID = 0;

        static Owner of(Path path, LinkOption... options) throws IOException {
            String name = Files.getOwner(path, options).getName();
            try {
                return new Owner(((Number) Files.getAttribute(path, "unix:uid", options)).longValue(), name);
            } catch (UnsupportedOperationException | IllegalArgumentException noUids) {
                return new Owner(-1, name);
            }
        }

        static Owner thisUser() {
            String name = System.getProperty("user.name");
            try {
                return new Owner(new UnixSystem().getUid(), name);
            } catch (LinkageError | RuntimeException noUids) {
                return new Owner(-1, name);
            }
        }

        boolean isThisUser() {
            Owner user = thisUser();
            return uid >= 0 && user.uid >= 0 ? uid == user.uid : name.equals(user.name);
        }

        boolean isRoot() {
            return uid >= 0 ? uid == ROOT_UID : name.equals("root");
        }

        @Override
        public String toString() {
            return uid < 0 || name.equals(Long.toString(uid)) ? name : name + " (uid " + uid + ")";
        }
    }

    /** Returns true when {@code directory} has the sticky bit; false where the file system cannot tell. */
    private static boolean sticky(Path directory) throws IOException {
        try {
            return (((Integer) Files.getAttribute(directory, "unix:mode")) & STICKY_BIT) != 0;
        } catch (UnsupportedOperationException | IllegalArgumentException noUnixModes) {
            return false;
        }
    }

    /**
     * Reads the secret file {@code file}, waiting up to {@link #INCOMPLETE_WAIT_MAX} for one that another process is
     * writing in place.
     *
     * @throws IllegalArgumentException when it is not a secret file of a version this release reads
     * @throws IOException when it cannot be read
     */
    public static GroupSecret read(Path file) throws IOException {
        long deadline = System.nanoTime() + INCOMPLETE_WAIT_MAX.toNanos();
        while (true) {
            String text = readText(file);
            try {
                return parse(text, file);
            } catch (IllegalArgumentException e) {
                if (!mayBeIncomplete(text) || System.nanoTime() - deadline >= 0) {
                    throw e;
                }
            }
            // A file created in place (no hard links here) that its writer is still writing: wait for the rest.
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted waiting for the group secret file " + file);
            }
        }
    }

    /** Returns true when {@code text} could be the start of a secret file still being written. */
    private static boolean mayBeIncomplete(String text) {
        String firstLine = FORMAT_LINE + "\n";
        return firstLine.startsWith(text) || text.startsWith(firstLine) && !text.endsWith("\n");
    }

    /** Parses the text of a secret file; {@code file} names it in errors. */
    static GroupSecret parse(String text, Path file) {
        String[] lines = text.split("\r?\n", -1);
        int count = lines.length > 1 && lines[lines.length - 1].isEmpty() ? lines.length - 1 : lines.length;
        if (!lines[0].equals(FORMAT_LINE)) {
            throw new IllegalArgumentException("the group secret file " + file + " is not a '" + FORMAT_LINE
                    + "' file: " + (lines[0].startsWith(FORMAT_PREFIX) && lines[0].length() <= 32
                    ? "its first line names version '" + lines[0].substring(FORMAT_PREFIX.length())
                    + "', which this release does not read" : "its first line is not '" + FORMAT_LINE + "'"));
        }
        if (count != 2) {
            throw new IllegalArgumentException("the group secret file " + file + " has " + count + " line"
                    + (count == 1 ? "" : "s") + ", not 2: '" + FORMAT_LINE + "' and the secret in base64");
        }
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(lines[1].strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the group secret file " + file + " has a second line that is not "
                    + "base64");
        }
        if (bytes.length < SECRET_BYTES_MIN || bytes.length > SECRET_BYTES_MAX) {
            Arrays.fill(bytes, (byte) 0);
            checkLength(bytes.length, "the secret in " + file);
        }
        return new GroupSecret(bytes);
    }

    private static void checkLength(int length, String what) {
        if (length < SECRET_BYTES_MIN || length > SECRET_BYTES_MAX) {
            throw new IllegalArgumentException(what + " has " + length + " bytes, outside [" + SECRET_BYTES_MIN + ", "
                    + SECRET_BYTES_MAX + "]");
        }
    }

    private static String readText(Path file) throws IOException {
        if (Files.isDirectory(file)) {
            throw new IOException("the group secret file " + file + " is a directory");
        }
        try (InputStream in = Files.newInputStream(file)) {
            byte[] content = in.readNBytes(FILE_BYTES_MAX + 1);
            if (content.length > FILE_BYTES_MAX) {
                throw new IllegalArgumentException("the group secret file " + file + " is longer than the "
                        + FILE_BYTES_MAX + " bytes a secret file has at most");
            }
            return new String(content, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new IOException("the group secret file " + file + " does not exist", e);
        }
    }

    /** Returns the text of the secret file holding this secret. */
    String toFileText() {
        return FORMAT_LINE + "\n" + Base64.getEncoder().encodeToString(bytes) + "\n";
    }

    /**
     * Makes {@code file} hold {@code secret}, atomically; returns false when another process made it first.
     */
    private static boolean create(Path file, GroupSecret secret) throws IOException {
        Path directory = file.toAbsolutePath().getParent();
        if (!Files.isDirectory(directory)) {
            throw new IOException("cannot create the group secret file " + file + ": its directory " + directory
                    + " does not exist");
        }
        byte[] text = secret.toFileText().getBytes(StandardCharsets.UTF_8);
        Path temporary = Files.createTempFile(directory, "." + file.getFileName() + ".", ".tmp", ownerOnly(file));
        try {
            write(temporary, text);
            try {
                Files.createLink(file, temporary);
            } catch (FileAlreadyExistsException lost) {
                return false;
            } catch (UnsupportedOperationException | FileSystemException noHardLinks) {
                return createInPlace(file, text);
            }
        } finally {
            Files.deleteIfExists(temporary);
        }
        syncDirectory(directory);
        return true;
    }

    /** Creates {@code file} exclusively and writes it where hard links are unsupported; false when it exists. */
    private static boolean createInPlace(Path file, byte[] text) throws IOException {
        try {
            Files.createFile(file, ownerOnly(file));
        } catch (FileAlreadyExistsException lost) {
            return false;
        }
        write(file, text);
        return true;
    }

    private static void write(Path file, byte[] text) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(text);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
    }

    private static void syncDirectory(Path directory) {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // Some platforms cannot open a directory; the file itself is on the disk.
        }
    }

    private static FileAttribute<?>[] ownerOnly(Path file) {
        boolean posix = file.toAbsolutePath().getFileSystem().supportedFileAttributeViews().contains("posix");
        return posix ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(OWNER_ONLY)}
                : new FileAttribute<?>[0];
    }

    /** Returns a warning when group or others may read or write {@code file}, else null. */
    static String permissionWarning(Path file) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class);
        if (view == null) {
            return null;
        }
        Set<PosixFilePermission> permissions = view.readAttributes().permissions();
        Set<PosixFilePermission> others = EnumSet.copyOf(permissions);
        others.removeAll(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.OWNER_EXECUTE));
        if (others.isEmpty()) {
            return null;
        }
        return "the group secret file " + file + " may be read or written by others ("
                + PosixFilePermissions.toString(permissions) + "): anyone who reads it can join the Raft group; "
                + "chmod 600 " + file;
    }

    /** Returns a copy of the secret's bytes, for the MAC of the handshake. */
    byte[] bytes() {
        return bytes.clone();
    }

    /** Returns the number of bytes of the secret. */
    public int length() {
        return bytes.length;
    }

    /** Compares in constant time. */
    @Override
    public boolean equals(Object other) {
        return other instanceof GroupSecret secret && MessageDigest.isEqual(bytes, secret.bytes);
    }

    @Override
    public int hashCode() {
        return bytes.length; // never derived from the secret's content
    }

    /** Shows the length only: a secret is never printed. */
    @Override
    public String toString() {
        return "GroupSecret[" + bytes.length + " bytes]";
    }
}

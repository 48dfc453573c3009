package io.fencer.files;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A directory on a (possibly shared) volume whose files are replaced only under a fencing token: a writer paused past
 * its lease, waking after a newer holder wrote, is refused however late it arrives, and its bytes never reach the
 * file.
 *
 * <pre>{@code
 * FencedDirectory reports = FencedDirectory.open(Path.of("/mnt/shared/reports"), "reports");
 * reports.write(grant.token(), "daily.csv", bytes);   // StaleTokenException once a newer grant has written
 * FencedFile current = reports.read("daily.csv");      // its content and the token that wrote it
 * }</pre>
 *
 * <p>How: the accepted token lives beside the files, in the fence file {@value #FENCE_FILE_NAME} (a format version,
 * the scope, the accepted token, the token that wrote each file, and a CRC-32C). Each write takes an OS lock on
 * {@value #LOCK_FILE_NAME} ({@code FileChannel.lock}, which holds across processes and, on volumes whose locks do,
 * across machines), reads and checks the fence, writes the content to a temporary file and fsyncs it, records the
 * write as pending in the fence file, renames the content into place, fsyncs the directory and only then raises the
 * fence. The pending record closes the window between the rename and the raise: a writer that dies there leaves a
 * fence that already counts its token, so a stale writer cannot slip into the window, and the next write or read
 * settles whether the content landed (its temporary file is gone) or not. So the fence never goes backwards across
 * crashes, and a file is always the old or the new content, never a torn one.
 *
 * <p>Every writer must go through this class (or honour the same protocol): a process that writes the files
 * directly is not fenced. A fence file that fails its checksum or version check is an error
 * ({@link FenceFileCorruptException}) and nothing is written. Deleting the fence file resets the fence: don't.
 *
 * <p>Thread-safe, and safe across processes: in one JVM a lock per directory serialises the calls (the OS lock is
 * held per JVM), the OS lock serialises processes. A process paused while it holds the lock (inside a write) stalls
 * other writers until it resumes; its write then lands before theirs, in token order, so the fence still holds.
 */
public final class FencedDirectory {
    /** The name of the fence file in the directory. */
    public static final String FENCE_FILE_NAME = ".fencer-fence";
    /** The name of the lock file in the directory; it is never replaced, so its OS lock means one thing. */
    public static final String LOCK_FILE_NAME = ".fencer-lock";
    /** The largest content {@link #read} returns by default, in bytes. */
    public static final long CONTENT_BYTES_MAX_DEFAULT = 64L * 1024 * 1024;
    /** The most files one directory tracks by default. */
    public static final int FILES_MAX_DEFAULT = 10_000;
    /** The longest file name, in UTF-8 bytes (the usual file system limit). */
    public static final int NAME_BYTES_MAX = 255;
    static final String TEMP_PREFIX = ".fencer-tmp.";
    /** The prefix of every file the fence keeps in the directory, which no fenced write may name. */
    private static final String FENCE_NAME_PREFIX = ".fencer-";

    private final FenceStore store;
    private final String scope;
    private final FencePolicy policy;
    private final long contentBytesMax;
    private final int filesMax;
    private final RefusalCounter refusals;

    /** Writes a file's content; called once per write, under the directory's lock. */
    @FunctionalInterface
    public interface ContentWriter {
        /** Writes the whole content to {@code out}; the stream is closed (and fsynced) by the caller. */
        void writeTo(OutputStream out) throws IOException;
    }

    private FencedDirectory(Builder builder) throws IOException {
        this.store = new FenceStore(builder.directory, builder.scope);
        this.scope = builder.scope;
        this.policy = builder.policy;
        this.contentBytesMax = builder.contentBytesMax;
        this.filesMax = builder.filesMax;
        this.refusals = new RefusalCounter(builder.meterRegistry, "files");
        accepted(); // a corrupt fence file or one of another scope fails here, not at the first write
    }

    /**
     * Opens {@code directory}, which must exist, as the fenced directory of lock {@code scope}, with policy
     * {@link FencePolicy#AT_LEAST}; a directory without a fence file starts with none accepted.
     *
     * @throws FenceFileCorruptException when its fence file is corrupt
     * @throws IllegalStateException when its fence file belongs to another scope
     */
    public static FencedDirectory open(Path directory, String scope) throws IOException {
        return builder(directory, scope).open();
    }

    /** Returns a builder for the fenced directory {@code directory} of lock {@code scope}. */
    public static Builder builder(Path directory, String scope) {
        return new Builder(directory, scope);
    }

    /**
     * Replaces (or creates) file {@code name} with {@code content} when the fence admits {@code token}, and raises
     * the fence to it.
     *
     * @throws StaleTokenException when a newer token (AT_LEAST), or the same or newer (STRICT), was accepted; nothing
     *     was written
     * @throws ScopeMismatchException when the token belongs to another lock; nothing was read or written
     * @throws ModeMismatchException when the token is a shared (reader's) grant
     * @throws InvalidArgumentException when the name is not a plain file name (see {@link #NAME_BYTES_MAX})
     * @throws FenceFileCorruptException when the fence file is corrupt; nothing was written
     */
    public void write(FencingToken token, String name, byte[] content) throws IOException {
        Objects.requireNonNull(content, "content");
        write(token, name, out -> out.write(content));
    }

    /**
     * As {@link #write(FencingToken, String, byte[])}, the content streamed by {@code writer} into a temporary file,
     * at most {@code contentBytesMax} bytes (more fails the write with {@link LimitExceededException}, nothing
     * replaced). A writer that throws leaves the file and the fence as they were.
     */
    public void write(FencingToken token, String name, ContentWriter writer) throws IOException {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(writer, "writer");
        checkName(name);
        if (!token.lock().equals(scope)) {
            throw refusals.refused(scope, new ScopeMismatchException(scope, token));
        }
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw refusals.refused(scope, new ModeMismatchException(scope, token.value(), token.mode()));
        }
        store.exclusively(() -> {
            FenceState state = store.settle(store.read());
            if (!policy.admits(token.value(), state.accepted())) {
                throw refusals.refused(scope,
                        new StaleTokenException(scope, token.value(), state.accepted(), policy));
            }
            if (!state.writers().containsKey(name) && state.writers().size() >= filesMax) {
                throw new LimitExceededException("filesMax", filesMax, "directory " + store.directory()
                        + " tracks " + state.writers().size() + " files, its limit filesMax; " + name + " is new");
            }
            store.replace(state, token.value(), name, writer, contentBytesMax);
            return null;
        });
    }

    /**
     * Reads file {@code name} and the token that wrote it, under the directory's lock (one moment for both).
     *
     * @return the file, or empty when no fenced write has written {@code name}
     * @throws LimitExceededException when the file is larger than {@code contentBytesMax}
     */
    public Optional<FencedFile> read(String name) throws IOException {
        checkName(name);
        return store.exclusively(() -> {
            Long writer = store.settleInMemory(store.read()).writers().get(name);
            Path file = store.directory().resolve(name);
            if (writer == null || !Files.exists(file)) {
                return Optional.empty();
            }
            long size = Files.size(file);
            if (size > contentBytesMax) {
                throw new LimitExceededException("contentBytesMax", contentBytesMax, "file " + file + " is " + size
                        + " bytes, more than contentBytesMax " + contentBytesMax);
            }
            return Optional.of(new FencedFile(name, Files.readAllBytes(file), new FencingToken(scope, writer)));
        });
    }

    /** Returns the token whose fenced write put the current content of {@code name}, or empty when none did. */
    public Optional<FencingToken> writerOf(String name) throws IOException {
        checkName(name);
        return store.exclusively(() -> Optional.ofNullable(store.settleInMemory(store.read()).writers().get(name))
                .map(value -> new FencingToken(scope, value)));
    }

    /** Returns the highest token accepted (counting a write that stopped between its rename and its raise). */
    public long accepted() throws IOException {
        return store.exclusively(() -> store.settleInMemory(store.read()).accepted());
    }

    public Path directory() {
        return store.directory();
    }

    public String scope() {
        return scope;
    }

    public FencePolicy policy() {
        return policy;
    }

    static void checkName(String name) {
        Objects.requireNonNull(name, "name");
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        String why = null;
        if (bytes == 0 || bytes > NAME_BYTES_MAX) {
            why = "it is " + bytes + " bytes of UTF-8, not 1 to " + NAME_BYTES_MAX;
        } else if (name.equals(".") || name.equals("..") || name.indexOf('/') >= 0 || name.indexOf('\\') >= 0) {
            why = "it is not a plain file name in the directory";
        } else if (name.regionMatches(true, 0, FENCE_NAME_PREFIX, 0, FENCE_NAME_PREFIX.length())) {
            // In any case: on a case-insensitive volume (macOS, Windows, most SMB shares) '.FENCER-LOCK' is the lock
            // file, and renaming content over it would let two processes lock two different files at once.
            why = "names starting with '.fencer-', in any letter case, are the fence's own files";
        } else if (name.chars().anyMatch(Character::isISOControl)) {
            why = "it contains a control character";
        } else if (!StandardCharsets.UTF_8.newEncoder().canEncode(name)) { // an unpaired surrogate
            why = "it is not valid UTF-8 (an unpaired surrogate, which the fence would record as '?')";
        }
        if (why != null) {
            throw new InvalidArgumentException("name", name, "file name '" + InvalidArgumentException.printable(name)
                    + "' refused: " + why);
        }
    }

    @Override
    public String toString() {
        return "FencedDirectory[" + store.directory() + ", scope " + scope + ", " + policy + "]";
    }

    /** Chooses the policy and limits of a fenced directory. */
    public static final class Builder {
        private final Path directory;
        private final String scope;
        private FencePolicy policy = FencePolicy.AT_LEAST;
        private long contentBytesMax = CONTENT_BYTES_MAX_DEFAULT;
        private int filesMax = FILES_MAX_DEFAULT;
        private MeterRegistry meterRegistry;

        private Builder(Path directory, String scope) {
            this.directory = Objects.requireNonNull(directory, "directory");
            this.scope = LockNames.check("scope", scope);
        }

        /** {@link FencePolicy#AT_LEAST} (the default: a holder may rewrite) or {@link FencePolicy#STRICT}. */
        public Builder policy(FencePolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** The largest content a write may stream or a read return, in bytes (default 64 MiB). */
        public Builder contentBytesMax(long contentBytesMax) {
            if (contentBytesMax < 1) {
                throw new IllegalArgumentException("contentBytesMax must be positive, got " + contentBytesMax);
            }
            this.contentBytesMax = contentBytesMax;
            return this;
        }

        /** The most files the directory tracks (default 10,000): each is a line of the fence file. */
        public Builder filesMax(int filesMax) {
            if (filesMax < 1 || filesMax > 1_000_000) {
                throw new IllegalArgumentException("filesMax must be in [1, 1000000], got " + filesMax);
            }
            this.filesMax = filesMax;
            return this;
        }

        /**
         * Counts refused writes into {@code registry} as {@code fencer_adapter_refusals_total{adapter="files",
         * scope=<the directory's scope>, reason}} ({@code stale_token}, {@code scope_mismatch}, {@code mode_mismatch});
         * by default nothing is counted. One series per reason and directory scope.
         */
        public Builder meterRegistry(MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Opens the directory, reading its fence file.
         *
         * @throws java.nio.file.NoSuchFileException when the directory does not exist
         * @throws FenceFileCorruptException when its fence file is corrupt
         * @throws IllegalStateException when its fence file belongs to another scope
         */
        public FencedDirectory open() throws IOException {
            if (!Files.isDirectory(directory)) {
                throw new java.nio.file.NoSuchFileException(directory.toString(), null, "not a directory");
            }
            return new FencedDirectory(this);
        }
    }

    static Map<String, Long> with(Map<String, Long> writers, String name, long token) {
        Map<String, Long> next = new HashMap<>(writers);
        next.put(name, token);
        return next;
    }
}

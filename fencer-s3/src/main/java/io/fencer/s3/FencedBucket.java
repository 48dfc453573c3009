package io.fencer.s3;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.MeterRegistry;
import io.fencer.core.TokenKeys;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The objects under one prefix of an S3 bucket (any store that serves conditional writes: {@code If-Match} and
 * {@code If-None-Match} on PutObject), written only under a fencing token: a writer paused past its lease, waking
 * after a newer holder wrote, is refused however late it arrives, and its bytes never replace the newer holder's.
 *
 * <pre>{@code
 * FencedBucket reports = FencedBucket.open(s3, "my-bucket", "reports/", "reports");   // scope = the lock's name
 * reports.write(grant.token(), "daily.csv", bytes);    // StaleTokenException once a newer grant has written
 * FencedObject current = reports.read("daily.csv").orElseThrow();   // its content and the token that wrote it
 * }</pre>
 *
 * <p>How: the fence object {@code <prefix>.fencer-fence} holds the scope's accepted token and, for each name, the
 * token that wrote it and the key of an immutable data object with its content. A write reads the fence and its
 * ETag, refuses a stale token, creates a new data object under a key of its own ({@code If-None-Match: *}: it never
 * replaces an object), and commits by replacing the fence object with {@code If-Match: <the ETag it read>}
 * ({@code If-None-Match: *} for the first write). The store applies that condition and the replacement atomically, so
 * of two writers that read the same fence only one commits; the other reads the fence again and is checked again, and
 * a superseded holder is refused there. A writer refused at any step has written only a data object nothing points
 * to, which it deletes; a committed writer deletes the data object its commit superseded.
 *
 * <p>What a reader sees: {@link #read} reads the fence, then the data object it names, so it sees the whole old or
 * the whole new content, switched by the fence's replacement in one step. A plain S3 reader sees data objects under
 * {@code <prefix>.fencer-data/}, never a half-written one, but only the fence tells which is current.
 *
 * <p>Every writer must go through this class (or honour the same protocol): a process that writes the fence or the
 * data objects directly is not fenced. A fence object that fails its checksum or version check is an error
 * ({@link FenceObjectCorruptException}) and nothing is written. Deleting the fence object resets the fence: don't.
 *
 * <p>Thread-safe: it keeps no state between calls but its configuration; concurrent writes, in one process or many,
 * are ordered by the store's conditional writes.
 */
public final class FencedBucket {
    /** The key of the fence object under the prefix. */
    public static final String FENCE_OBJECT_NAME = ".fencer-fence";
    /** The folder of the data objects under the prefix. */
    public static final String DATA_FOLDER = ".fencer-data/";
    /** The largest content a write takes or a read returns by default, in bytes. */
    public static final long CONTENT_BYTES_MAX_DEFAULT = 64L * 1024 * 1024;
    /** The largest content this class can hold in one array, in bytes. */
    public static final long CONTENT_BYTES_MAX_LIMIT = Integer.MAX_VALUE - 8;
    /** The most objects one fenced bucket tracks by default. */
    public static final int OBJECTS_MAX_DEFAULT = 10_000;
    /** The longest object name, in UTF-8 bytes. */
    public static final int NAME_BYTES_MAX = 255;
    /** The longest prefix, in UTF-8 bytes: a data object's key must fit the fence's 256-byte key field. */
    public static final int PREFIX_BYTES_MAX = 128;
    /** How often a write tries to commit when other writers keep changing the fence. */
    public static final int COMMIT_ATTEMPTS_MAX = 16;
    /** How often a read follows the fence again when the data object it named was superseded meanwhile. */
    public static final int READ_ATTEMPTS_MAX = 8;
    /** The most data objects one {@link #sweep()} looks at. */
    public static final int SWEEP_KEYS_MAX = 10_000;
    /** The digits of the token in a data object's key: zero-padded, so that keys sort by token. */
    private static final int TOKEN_DIGITS = 19;
    /** The user metadata of a data object: the token value that wrote it, its scope and name (base64url). */
    static final String META_TOKEN = "fencer-token";
    static final String META_SCOPE = "fencer-scope";
    static final String META_NAME = "fencer-name";

    private final ObjectStore store;
    private final String prefix;
    private final String scope;
    private final FencePolicy policy;
    private final TokenKeys tokenKeys;
    private final long contentBytesMax;
    private final int objectsMax;
    private final Runnable beforeCommit;
    private final RefusalCounter refusals;

    private FencedBucket(Builder builder) {
        this.store = new ObjectStore(builder.s3, builder.bucket, builder.prefix + FENCE_OBJECT_NAME);
        this.prefix = builder.prefix;
        this.scope = builder.scope;
        this.policy = builder.policy;
        this.tokenKeys = builder.tokenKeys;
        this.contentBytesMax = builder.contentBytesMax;
        this.objectsMax = builder.objectsMax;
        this.beforeCommit = builder.beforeCommit;
        this.refusals = new RefusalCounter(builder.meterRegistry, "s3");
        readFence(); // a corrupt fence object or one of another scope fails here, not at the first write
    }

    /**
     * Opens the objects under {@code prefix} ("" or ending with '/') of {@code bucket} as the fenced bucket of lock
     * {@code scope}, with policy {@link FencePolicy#AT_LEAST}; a prefix without a fence object starts with none
     * accepted.
     *
     * @throws FenceObjectCorruptException when its fence object is corrupt
     * @throws IllegalStateException when its fence object belongs to another scope
     */
    public static FencedBucket open(S3Client s3, String bucket, String prefix, String scope) {
        return builder(s3, bucket, prefix, scope).open();
    }

    /** Returns a builder for the fenced bucket of lock {@code scope} under {@code prefix} of {@code bucket}. */
    public static Builder builder(S3Client s3, String bucket, String prefix, String scope) {
        return new Builder(s3, bucket, prefix, scope);
    }

    /**
     * Writes (creates or replaces) object {@code name} with {@code content} when the fence admits {@code token}, and
     * raises the fence to it.
     *
     * @throws StaleObjectWriteException (a {@link StaleTokenException}) when a newer token (AT_LEAST), or the same or
     *     newer (STRICT), was accepted, before or while this write ran; the fence and the current object are as the
     *     newer holder left them
     * @throws ScopeMismatchException when the token belongs to another lock; nothing was read or written
     * @throws ModeMismatchException when the token is a shared (reader's) grant; nothing was read or written
     * @throws InvalidArgumentException when the name is empty, longer than {@link #NAME_BYTES_MAX} bytes or holds a
     *     control character
     * @throws LimitExceededException when the content is larger than {@code contentBytesMax}, the bucket would track
     *     more than {@code objectsMax} objects, or other writers kept changing the fence through
     *     {@link #COMMIT_ATTEMPTS_MAX} attempts; nothing was committed
     * @throws FenceObjectCorruptException when the fence object is corrupt; nothing was written
     * @throws software.amazon.awssdk.core.exception.SdkException when the store failed; the write may or may not have
     *     committed (a retry with the same token settles it, as {@link #writerOf} tells)
     */
    public void write(FencingToken token, String name, byte[] content) {
        Objects.requireNonNull(content, "content");
        checkToken(token);
        checkName(name);
        if (content.length > contentBytesMax) {
            throw new LimitExceededException("contentBytesMax", contentBytesMax, "object '"
                    + InvalidArgumentException.printable(name) + "' of " + content.length
                    + " bytes is larger than contentBytesMax " + contentBytesMax);
        }
        ObjectStore.Fence fence = admit(readFence(), token, name, true, false);
        String dataKey = prefix + DATA_FOLDER + String.format(Locale.ROOT, "%0" + TOKEN_DIGITS + "d", token.value()) + "-"
                + UUID.randomUUID().toString().replace("-", "");
        store.createData(dataKey, content, Map.of(META_TOKEN, Long.toString(token.value()),
                META_SCOPE, FenceState.b64(scope), META_NAME, FenceState.b64(name)));
        commit(fence, token, name, new FenceState.Entry(token.value(), dataKey));
    }

    /**
     * As {@link #write(FencingToken, String, byte[])}, the token given as a sequencer (as a client sends it); with
     * {@link Builder#tokenKeys} set, its signature is required.
     *
     * @throws InvalidArgumentException when the sequencer is malformed; nothing was read or written
     * @throws io.fencer.core.BadTokenSignatureException when keys are set and the sequencer is not signed by one
     */
    public void write(String sequencer, String name, byte[] content) {
        write(Sequencer.parse(sequencer, tokenKeys), name, content);
    }

    /**
     * Removes object {@code name} when the fence admits {@code token}, and raises the fence to it; removing a name
     * that is not there still raises the fence.
     *
     * @throws StaleObjectWriteException as {@link #write(FencingToken, String, byte[])}
     */
    public void delete(FencingToken token, String name) {
        checkToken(token);
        checkName(name);
        commit(admit(readFence(), token, name, false, false), token, name, null);
    }

    /**
     * Reads object {@code name} and the token that wrote it, both as of one fence.
     *
     * @return the object, or empty when no fenced write has written {@code name}
     * @throws LimitExceededException when the object is larger than {@code contentBytesMax}
     * @throws FenceObjectCorruptException when the fence object, or the data object it names, is not what a fenced
     *     write leaves
     */
    public Optional<FencedObject> read(String name) {
        checkName(name);
        for (int attempt = 1; attempt <= READ_ATTEMPTS_MAX; attempt++) {
            FenceState.Entry entry = readFence().state().objects().get(name);
            if (entry == null) {
                return Optional.empty();
            }
            Optional<ObjectStore.Data> data = store.readData(entry.dataKey(), contentBytesMax);
            if (data.isPresent()) {
                String stamped = data.get().metadata().get(META_TOKEN);
                if (!Long.toString(entry.token()).equals(stamped)) {
                    throw new FenceObjectCorruptException(store.bucket(), store.fenceKey(), "object '"
                            + InvalidArgumentException.printable(name) + "' is committed under token "
                            + entry.token() + " but its data object " + entry.dataKey() + " is stamped '"
                            + InvalidArgumentException.printable(String.valueOf(stamped)) + "'");
                }
                return Optional.of(new FencedObject(name, data.get().content(), new FencingToken(scope,
                        entry.token())));
            }
            // The data object was deleted after a newer commit superseded it: follow the new fence.
        }
        throw new LimitExceededException("readAttemptsMax", READ_ATTEMPTS_MAX, "object '"
                + InvalidArgumentException.printable(name) + "' was superseded " + READ_ATTEMPTS_MAX
                + " times while it was read, or its data object is missing");
    }

    /** Returns the token whose fenced write committed the current content of {@code name}, or empty when none did. */
    public Optional<FencingToken> writerOf(String name) {
        checkName(name);
        return Optional.ofNullable(readFence().state().objects().get(name))
                .map(entry -> new FencingToken(scope, entry.token()));
    }

    /**
     * Deletes the data objects that no write can commit any more: those the fence does not name whose token is below
     * the accepted one. A writer that died between creating its data object and its commit leaves one; a write still
     * in flight with such a token can only be refused, since the fence moved past it after that write read it. Looks
     * at most {@link #SWEEP_KEYS_MAX} data objects per call.
     *
     * @return the number of data objects deleted
     */
    public int sweep() {
        FenceState state = readFence().state();
        Set<String> live = new HashSet<>();
        state.objects().values().forEach(entry -> live.add(entry.dataKey()));
        int deleted = 0;
        String folder = prefix + DATA_FOLDER;
        for (String key : store.listKeys(folder, SWEEP_KEYS_MAX)) {
            long token = dataKeyToken(key.substring(folder.length()));
            if (token != FencingToken.NONE && token < state.accepted() && !live.contains(key)) {
                store.deleteQuietly(key);
                deleted++;
            }
        }
        return deleted;
    }

    /** The token of a data object's key (after the folder), or NONE when the key is not one a write makes. */
    private static long dataKeyToken(String rest) {
        int dash = rest.indexOf('-');
        if (dash != TOKEN_DIGITS || rest.indexOf('/') >= 0) {
            return FencingToken.NONE;
        }
        try {
            return Long.parseLong(rest.substring(0, dash));
        } catch (NumberFormatException e) {
            return FencingToken.NONE;
        }
    }

    /** Returns the highest token accepted. */
    public long accepted() {
        return readFence().state().accepted();
    }

    public String bucket() {
        return store.bucket();
    }

    public String prefix() {
        return prefix;
    }

    public String scope() {
        return scope;
    }

    public FencePolicy policy() {
        return policy;
    }

    private ObjectStore.Fence readFence() {
        ObjectStore.Fence fence = store.readFence(scope);
        if (!fence.state().scope().equals(scope)) {
            throw new IllegalStateException("fence object s3://" + store.bucket() + "/" + store.fenceKey()
                    + " belongs to scope '" + InvalidArgumentException.printable(fence.state().scope())
                    + "', not '" + scope + "'");
        }
        return fence;
    }

    /**
     * Refuses {@code token} unless {@code fence} admits it and, when the call {@code adds} {@code name} (a write, not
     * a delete, which adds no line to the fence), has room for it; returns the fence.
     */
    private ObjectStore.Fence admit(ObjectStore.Fence fence, FencingToken token, String name, boolean adds,
            boolean atCommit) {
        FenceState state = fence.state();
        if (!policy.admits(token.value(), state.accepted())) {
            FenceState.Entry current = state.objects().get(name);
            StaleTokenException stale = refusals.refused(scope,
                    new StaleTokenException(scope, token.value(), state.accepted(), policy));
            throw new StaleObjectWriteException(stale, name, atCommit,
                    current == null ? FencingToken.NONE : current.token());
        }
        if (adds && !state.objects().containsKey(name) && state.objects().size() >= objectsMax) {
            throw new LimitExceededException("objectsMax", objectsMax, "fenced bucket s3://" + store.bucket() + "/"
                    + prefix + " tracks " + state.objects().size() + " objects, its limit objectsMax; '"
                    + InvalidArgumentException.printable(name) + "' is new");
        }
        return fence;
    }

    /**
     * Replaces the fence read as {@code fence} with one that commits {@code entry} for {@code name} (removes it when
     * null). When another writer replaced the fence first, reads it again and checks the token again: a newer holder's
     * commit makes this one stale, an equal token's commit (the same holder's other write) is merged with.
     */
    private void commit(ObjectStore.Fence fence, FencingToken token, String name, FenceState.Entry entry) {
        String created = entry == null ? null : entry.dataKey();
        for (int attempt = 1; attempt <= COMMIT_ATTEMPTS_MAX; attempt++) {
            beforeCommit.run();
            FenceState.Entry previous = fence.state().objects().get(name);
            if (store.replaceFence(fence.state().with(token.value(), name, entry), fence.etag())) {
                if (previous != null && !previous.dataKey().equals(created)) {
                    store.deleteQuietly(previous.dataKey());
                }
                return;
            }
            fence = readFence();
            FenceState.Entry now = fence.state().objects().get(name);
            if (created != null && now != null && now.dataKey().equals(created)) {
                return; // an earlier attempt committed, though its answer was lost (the SDK retried it)
            }
            if (created == null && now == null && fence.state().accepted() == token.value()) {
                // A delete: the fence is what its commit leaves (the name gone, the fence at its token), most likely
                // by an earlier attempt whose answer was lost; under STRICT a second commit would be refused as
                // stale, under AT_LEAST it would change nothing.
                return;
            }
            try {
                admit(fence, token, name, entry != null, true);
            } catch (RuntimeException refused) {
                if (created != null) {
                    store.deleteQuietly(created);
                }
                throw refused;
            }
        }
        if (created != null) {
            store.deleteQuietly(created);
        }
        throw new LimitExceededException("commitAttemptsMax", COMMIT_ATTEMPTS_MAX, "write of '"
                + InvalidArgumentException.printable(name) + "' under " + token + " lost the fence to other writers "
                + COMMIT_ATTEMPTS_MAX + " times in a row; nothing was committed");
    }

    private void checkToken(FencingToken token) {
        Objects.requireNonNull(token, "token");
        if (!token.lock().equals(scope)) {
            throw refusals.refused(scope, new ScopeMismatchException(scope, token));
        }
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw refusals.refused(scope, new ModeMismatchException(scope, token.value(), token.mode()));
        }
    }

    static void checkName(String name) {
        Objects.requireNonNull(name, "name");
        LockNames.check("object", name); // valid UTF-8 (no lone surrogate), no control character, at most 256 bytes
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        String why = null;
        if (bytes == 0 || bytes > NAME_BYTES_MAX) {
            why = "it is " + bytes + " bytes of UTF-8, not 1 to " + NAME_BYTES_MAX;
        } else if (name.codePoints().anyMatch(c -> Character.isISOControl(c)
                || Character.getType(c) == Character.FORMAT)) {
            why = "it contains a control or invisible format character";
        }
        if (why != null) {
            throw new InvalidArgumentException("name", name, "object name '" + InvalidArgumentException.printable(name)
                    + "' refused: " + why);
        }
    }

    @Override
    public String toString() {
        return "FencedBucket[s3://" + store.bucket() + "/" + prefix + ", scope " + scope + ", " + policy + "]";
    }

    /** Chooses the policy, the token keys and the limits of a fenced bucket. */
    public static final class Builder {
        private final S3Client s3;
        private final String bucket;
        private final String prefix;
        private final String scope;
        private FencePolicy policy = FencePolicy.AT_LEAST;
        private TokenKeys tokenKeys;
        private long contentBytesMax = CONTENT_BYTES_MAX_DEFAULT;
        private int objectsMax = OBJECTS_MAX_DEFAULT;
        private Runnable beforeCommit = () -> {};
        private MeterRegistry meterRegistry;

        private Builder(S3Client s3, String bucket, String prefix, String scope) {
            this.s3 = Objects.requireNonNull(s3, "s3");
            this.bucket = Objects.requireNonNull(bucket, "bucket");
            if (bucket.isEmpty()) {
                throw new IllegalArgumentException("bucket must not be empty");
            }
            this.prefix = checkPrefix(prefix);
            this.scope = LockNames.check("scope", scope);
        }

        private static String checkPrefix(String prefix) {
            Objects.requireNonNull(prefix, "prefix");
            if (!prefix.isEmpty()) {
                LockNames.check("prefix", prefix); // valid UTF-8: the fence names data objects by their keys
            }
            int bytes = prefix.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > PREFIX_BYTES_MAX || (!prefix.isEmpty() && !prefix.endsWith("/"))
                    || prefix.codePoints().anyMatch(c -> Character.getType(c) == Character.FORMAT)) {
                throw new InvalidArgumentException("prefix", prefix, "prefix '" + InvalidArgumentException.printable(
                        prefix) + "' refused: it must be empty or end with '/', be at most " + PREFIX_BYTES_MAX
                        + " bytes of UTF-8 (it is " + bytes + ") and hold no invisible format character");
            }
            return prefix;
        }

        /** {@link FencePolicy#AT_LEAST} (the default: a holder may rewrite) or {@link FencePolicy#STRICT}. */
        public Builder policy(FencePolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Requires sequencers given to {@code write(String, ...)} to be signed by one of {@code keys}. */
        public Builder tokenKeys(TokenKeys keys) {
            this.tokenKeys = Objects.requireNonNull(keys, "keys");
            return this;
        }

        /** The largest content a write takes or a read returns, in bytes (default 64 MiB). */
        public Builder contentBytesMax(long contentBytesMax) {
            if (contentBytesMax < 1 || contentBytesMax > CONTENT_BYTES_MAX_LIMIT) {
                throw new IllegalArgumentException("contentBytesMax must be in [1, " + CONTENT_BYTES_MAX_LIMIT
                        + "], got " + contentBytesMax);
            }
            this.contentBytesMax = contentBytesMax;
            return this;
        }

        /** The most objects the fenced bucket tracks (default 10,000): each is a line of the fence object. */
        public Builder objectsMax(int objectsMax) {
            if (objectsMax < 1 || objectsMax > OBJECTS_MAX_DEFAULT) {
                throw new IllegalArgumentException("objectsMax must be in [1, " + OBJECTS_MAX_DEFAULT
                        + "] (the fence object holds a line each), got " + objectsMax);
            }
            this.objectsMax = objectsMax;
            return this;
        }

        /** Runs {@code hook} right before each attempt to commit: tests pause a writer there. */
        Builder beforeCommit(Runnable hook) {
            this.beforeCommit = Objects.requireNonNull(hook, "hook");
            return this;
        }

        /**
         * Counts refused writes and deletes into {@code registry} as {@code fencer_adapter_refusals_total{adapter="s3",
         * scope=<the bucket's scope>, reason}} ({@code stale_token}, {@code scope_mismatch}, {@code mode_mismatch});
         * by default nothing is counted. One series per reason and fenced scope.
         */
        public Builder meterRegistry(MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /**
         * Opens the fenced bucket, reading its fence object.
         *
         * @throws FenceObjectCorruptException when its fence object is corrupt
         * @throws IllegalStateException when its fence object belongs to another scope
         */
        public FencedBucket open() {
            return new FencedBucket(this);
        }
    }
}

package io.fencer.s3;

/**
 * The fence object of a fenced bucket cannot be trusted: its checksum does not match, its format version is not one
 * this release reads, it does not parse, or it is larger than any fence this release writes. Nothing was written: a
 * scope whose accepted token is unknown admits no write, because admitting one could let a stale writer replace a
 * newer writer's object.
 *
 * <p>Recovery is an operator's decision: restore the fence object from a version or a backup, or write a new one
 * whose accepted token is at least the highest token ever issued for the scope (the lock service's latest token).
 */
public final class FenceObjectCorruptException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String bucket;
    private final String key;

    FenceObjectCorruptException(String bucket, String key, String why) {
        super("fence object s3://" + bucket + "/" + key + " is corrupt, nothing was written: " + why);
        this.bucket = bucket;
        this.key = key;
    }

    /** Returns the bucket of the fence object. */
    public String bucket() {
        return bucket;
    }

    /** Returns the key of the fence object. */
    public String key() {
        return key;
    }
}

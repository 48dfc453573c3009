package io.fencer.lock;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Objects;

/**
 * The SHA-256 of a session secret: all that the replicated state, the Raft log and snapshots keep of the secret a
 * session was opened with, and all that a command carries of the secret its caller presented. The state machine
 * compares two of them, in constant time, to decide whether a command acts for the session's opener.
 *
 * <p>Why a hash: the state machine is deterministic and replicated, so whatever it keeps is on every peer's disk and
 * in every snapshot. A secret of at least 128 random bits cannot be recovered from its SHA-256, so a copied log or
 * snapshot does not let anyone act for a session. Immutable; {@link #toString()} shows no bytes.
 *
 * <p>Two values are not the hash of any secret. {@link #NONE} is the hash of a session opened before session secrets
 * (by the previous release, whose data this release still loads): {@link #matches} is false for it whatever is
 * presented, so nobody can act for such a session. {@link #NOT_CARRIED} stands in a command decoded from a version-1
 * log entry, which carried no hash: the state machine applies such a command as the previous release did (see
 * {@link CommandCodec}); it is package-private so that no command made outside this package carries it, and it is
 * never written.
 */
public final class SecretHash {
    /** The length of a SHA-256 digest. */
    public static final int BYTES = 32;

    /**
     * The hash of a session opened before session secrets: 32 zero bytes in snapshots, matched by nothing. Zero
     * bytes are the SHA-256 of no known input; {@link #matches} refuses them on either side all the same, so that
     * no secret can match even by a chance of 2^-256.
     */
    public static final SecretHash NONE = new SecretHash(new byte[BYTES]);

    /**
     * The absent hash of a command decoded from a version-1 log entry; the codec refuses to write it, and
     * {@link #matches} is false for it on either side.
     */
    static final SecretHash NOT_CARRIED = new SecretHash(null);

    /** The digest, or null for {@link #NOT_CARRIED} alone. */
    private final byte[] bytes;

    private SecretHash(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Returns the hash of {@code secret}: the SHA-256 of its UTF-8 bytes. */
    public static SecretHash of(String secret) {
        Objects.requireNonNull(secret, "secret");
        try {
            return new SecretHash(MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /**
     * Returns the hash held in {@code bytes} (copied), as the codec and snapshots read it back; 32 zero bytes read
     * back as {@link #NONE}.
     */
    static SecretHash fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a secret hash is " + BYTES + " bytes, got " + bytes.length);
        }
        return isZero(bytes) ? NONE : new SecretHash(bytes.clone());
    }

    /**
     * Returns a copy of the hash's bytes, for the codec and snapshots to write.
     *
     * @throws IllegalStateException for {@link #NOT_CARRIED}, which has none and is never written
     */
    byte[] bytes() {
        if (bytes == null) {
            throw new IllegalStateException("a version-1 command carries no secret hash: it is applied as decoded from"
                    + " the log and never written again");
        }
        return bytes.clone();
    }

    /**
     * True when both are the hash of the same secret; takes the same time wherever the bytes differ. Always false
     * when either is {@link #NONE} or {@link #NOT_CARRIED}: neither is the hash of a secret.
     */
    public boolean matches(SecretHash other) {
        if (other == null || bytes == null || other.bytes == null || isZero(bytes) || isZero(other.bytes)) {
            return false;
        }
        return MessageDigest.isEqual(bytes, other.bytes);
    }

    private static boolean isZero(byte[] digest) {
        int bits = 0;
        for (byte part : digest) {
            bits |= part;
        }
        return bits == 0;
    }

    /**
     * True when both hold the same bytes, {@link #NONE} included (unlike {@link #matches}), so that commands and
     * states holding them compare equal; {@link #NOT_CARRIED} equals itself alone.
     */
    @Override
    public boolean equals(Object other) {
        if (other == this) {
            return true;
        }
        return other instanceof SecretHash hash && bytes != null && hash.bytes != null
                && MessageDigest.isEqual(bytes, hash.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** Shows no bytes: values holding a hash are printed in logs and assertion messages. */
    @Override
    public String toString() {
        if (this == NOT_CARRIED) {
            return "SecretHash[not carried: version 1]";
        }
        return isZero(bytes) ? "SecretHash[none: opened before session secrets]" : "SecretHash[not shown]";
    }
}

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
 */
public final class SecretHash {
    /** The length of a SHA-256 digest. */
    public static final int BYTES = 32;

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

    /** Returns the hash held in {@code bytes} (copied), as the codec and snapshots read it back. */
    static SecretHash fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a secret hash is " + BYTES + " bytes, got " + bytes.length);
        }
        return new SecretHash(bytes.clone());
    }

    /** Returns a copy of the hash's bytes, for the codec and snapshots to write. */
    byte[] bytes() {
        return bytes.clone();
    }

    /** True when both are the hash of the same secret; takes the same time wherever the bytes differ. */
    public boolean matches(SecretHash other) {
        return other != null && MessageDigest.isEqual(bytes, other.bytes);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof SecretHash hash && matches(hash);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** Shows no bytes: values holding a hash are printed in logs and assertion messages. */
    @Override
    public String toString() {
        return "SecretHash[not shown]";
    }
}

package io.fencer.store;

import java.util.Arrays;
import java.util.Objects;

/**
 * One mutation of a write or unit: put a value under a key, or delete a key. Immutable: the factories copy
 * the arrays they are given.
 */
public final class Op {
    /** What an op does. */
    public enum Kind { PUT, DELETE }

    private final Kind kind;
    private final byte[] key;
    private final byte[] value;

    private Op(Kind kind, byte[] key, byte[] value) {
        this.kind = kind;
        this.key = key;
        this.value = value;
    }

    /** Returns an op that stores {@code value} under {@code key}. */
    public static Op put(byte[] key, byte[] value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        return new Op(Kind.PUT, key.clone(), value.clone());
    }

    /** Returns an op that removes {@code key}; deleting an absent key is not an error. */
    public static Op delete(byte[] key) {
        Objects.requireNonNull(key, "key");
        return new Op(Kind.DELETE, key.clone(), null);
    }

    public Kind kind() {
        return kind;
    }

    /** Returns a copy of the key. */
    public byte[] key() {
        return key.clone();
    }

    /** Returns a copy of the value, or null for a delete. */
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    /** Returns the bytes this op counts against the batch limit: key plus value. */
    int bytes() {
        return key.length + (value == null ? 0 : value.length);
    }

    byte[] keyBytes() {
        return key;
    }

    byte[] valueBytes() {
        return value;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Op op && kind == op.kind && Arrays.equals(key, op.key)
                && Arrays.equals(value, op.value);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, Arrays.hashCode(key), Arrays.hashCode(value));
    }

    @Override
    public String toString() {
        return kind + "(" + StoreCodec.describe(key) + (value == null ? "" : ", " + value.length + " bytes") + ")";
    }
}

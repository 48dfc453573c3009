package io.fencer.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/** One operation of a {@link FencedStore#write write} or a {@link StoreUnit}: put a value at a key, or delete one. */
public final class StoreOp {
    /** What an op does. */
    public enum Kind { PUT, DELETE }

    private final Kind kind;
    private final byte[] key;
    private final byte[] value;

    private StoreOp(Kind kind, byte[] key, byte[] value) {
        this.kind = kind;
        this.key = key;
        this.value = value;
    }

    /** Returns an op that puts {@code value} at {@code key}; both are copied. */
    public static StoreOp put(byte[] key, byte[] value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        return new StoreOp(Kind.PUT, key.clone(), value.clone());
    }

    /** Returns an op that puts a UTF-8 {@code value} at a UTF-8 {@code key}. */
    public static StoreOp put(String key, String value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        return new StoreOp(Kind.PUT, key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }

    /** Returns an op that deletes {@code key} (copied); deleting an absent key is not an error. */
    public static StoreOp delete(byte[] key) {
        Objects.requireNonNull(key, "key");
        return new StoreOp(Kind.DELETE, key.clone(), null);
    }

    /** Returns an op that deletes a UTF-8 {@code key}. */
    public static StoreOp delete(String key) {
        Objects.requireNonNull(key, "key");
        return new StoreOp(Kind.DELETE, key.getBytes(StandardCharsets.UTF_8), null);
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

    @Override
    public boolean equals(Object other) {
        return other instanceof StoreOp op && kind == op.kind && Arrays.equals(key, op.key)
                && Arrays.equals(value, op.value);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * kind.hashCode() + Arrays.hashCode(key)) + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return kind + "[" + key.length + "-byte key" + (value == null ? "" : ", " + value.length + "-byte value") + "]";
    }
}

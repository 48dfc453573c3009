package io.fencer.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * The outcome of a store read: the value (or its absence), the token that wrote it, and the scope's accepted
 * token, all from one consistent snapshot. {@code writtenBy < accepted} tells that a newer holder has written to
 * the scope since this value was written (perhaps to other keys).
 *
 * @param scope the scope read
 * @param value the value, or null when the key is absent
 * @param writtenBy the value of the token that wrote the value, or 0 when absent
 * @param accepted the scope's accepted token value, or 0 when it has accepted none
 */
public record StoreValue(String scope, byte[] value, long writtenBy, long accepted) {
    public StoreValue {
        Objects.requireNonNull(scope, "scope");
        value = value == null ? null : value.clone();
    }

    /** Returns true when the key has a value. */
    public boolean present() {
        return value != null;
    }

    /** Returns a copy of the value, or null when absent. */
    @Override
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    /** Returns the value decoded as UTF-8, or null when absent. */
    public String valueUtf8() {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof StoreValue read && scope.equals(read.scope) && Arrays.equals(value, read.value)
                && writtenBy == read.writtenBy && accepted == read.accepted;
    }

    @Override
    public int hashCode() {
        return Objects.hash(scope, Arrays.hashCode(value), writtenBy, accepted);
    }

    @Override
    public String toString() {
        return "StoreValue[" + scope + ", " + (value == null ? "absent" : value.length + " bytes") + ", writtenBy="
                + writtenBy + ", accepted=" + accepted + "]";
    }
}

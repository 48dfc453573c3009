package io.fencer.store;

/**
 * The outcome of a read: the value (or its absence), the token that wrote it, and the scope's accepted token,
 * all from one consistent snapshot.
 *
 * <p>{@code writtenBy < accepted} tells a reader that a newer holder has written to the scope since this value
 * was written (it may have written other keys).
 *
 * @param scope the scope read
 * @param value the value, or null when the key is absent; a fresh array owned by the caller
 * @param writtenBy the value of the token that wrote the value, or 0 when absent
 * @param accepted the scope's accepted token value, or 0 when it has accepted none
 */
public record ReadResult(String scope, byte[] value, long writtenBy, long accepted) {

    /** Returns true when the key has a value. */
    public boolean present() {
        return value != null;
    }

    @Override
    public String toString() {
        return "ReadResult[" + scope + ", " + (value == null ? "absent" : value.length + " bytes") + ", writtenBy="
                + writtenBy + ", accepted=" + accepted + "]";
    }
}

package io.fencer.core.internal;

import io.fencer.core.LockNames;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A lock name known to be valid: 1 to {@link LockNames#BYTES_MAX} bytes of UTF-8 with no control characters.
 *
 * <p>Every way to make one validates, so whoever receives a {@code LockName} never scans the name again: the lock
 * server checks a request's name once, at its edge, and carries it inward to the command, the state machine and
 * the token ({@link FencingToken#of(LockName, long)}).
 */
public final class LockName {
    private final String value;

    private LockName(String value) {
        this.value = value;
    }

    /**
     * Returns {@code name} as a lock name.
     *
     * @throws InvalidArgumentException naming the field "lock" and the offending value when it is not valid
     */
    public static LockName of(String name) {
        return of("lock", name);
    }

    /** As {@link #of(String)}, naming {@code field} (e.g. "token.lock") in the error; see {@link LockNames#check}. */
    public static LockName of(String field, String name) {
        return new LockName(LockNames.check(field, name));
    }

    /**
     * Returns {@code name} as the name of a lock about to be created: {@link LockNames#checkNew(String, String)},
     * which also refuses characters that are invisible or reorder text. Names already kept take {@link #of}.
     *
     * @throws InvalidArgumentException naming {@code field}, the offending code point and its position
     */
    public static LockName ofNew(String field, String name) {
        return new LockName(LockNames.checkNew(field, name));
    }

    /**
     * Decodes {@code length} bytes of UTF-8 at {@code offset} as a lock name. An ASCII name is checked in the same
     * pass that decodes it; any other name is decoded strictly, then checked as {@link #of(String, String)} does.
     *
     * @throws InvalidArgumentException naming {@code field} when the bytes are not valid UTF-8 or not a valid name,
     *     with the messages of {@link LockNames#check(String, String)} and {@link LockNames#decode}
     */
    public static LockName fromUtf8(String field, byte[] bytes, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (length == 0 || length > LockNames.BYTES_MAX || !isPrintableAscii(bytes, offset, length)) {
            // Rare: non-ASCII (or invalid) names take the strict decoder and the full check, with their messages.
            return new LockName(LockNames.decode(field, bytes, offset, length));
        }
        return new LockName(new String(bytes, offset, length, StandardCharsets.ISO_8859_1));
    }

    /** True when every byte is ASCII and not a control character (C0 or DEL): a valid name as it is. */
    private static boolean isPrintableAscii(byte[] bytes, int offset, int length) {
        for (int i = offset; i < offset + length; i++) {
            byte b = bytes[i];
            if (b < 0x20 || b == 0x7f) { // bytes are signed: every non-ASCII byte is negative
                return false;
            }
        }
        return true;
    }

    /** Returns the name. */
    public String value() {
        return value;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LockName name && value.equals(name.value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    /** Returns the name itself, so that messages read as they did with a plain string. */
    @Override
    public String toString() {
        return value;
    }
}

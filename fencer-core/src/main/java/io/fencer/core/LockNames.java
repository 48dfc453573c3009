package io.fencer.core;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** Validation of lock and scope names: 1 to {@link #BYTES_MAX} bytes of valid UTF-8, no control characters. */
public final class LockNames {
    /** The longest name, in UTF-8 bytes. */
    public static final int BYTES_MAX = 256;

    private LockNames() {}

    /**
     * Returns {@code name} when it is a valid lock name.
     *
     * @throws InvalidArgumentException naming the offending value otherwise
     */
    public static String check(String name) {
        return check("lock", name);
    }

    /**
     * As {@link #check(String)}, naming {@code field} (e.g. "scope") in the error. One pass over the chars, with
     * no allocation: it runs for every acquire and release, on the client and on the server (where a checked lock
     * name is carried inward as a {@link LockName}, so that it is not checked again).
     */
    public static String check(String field, String name) {
        if (name == null || name.isEmpty()) {
            throw new InvalidArgumentException(field, "", field + " name must not be empty");
        }
        if (name.length() > BYTES_MAX) { // every char is at least one byte
            throw tooLong(field, name, name.length());
        }
        int bytes = 0;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isISOControl(c)) {
                throw control(field, name);
            }
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < name.length()
                    && Character.isLowSurrogate(name.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InvalidArgumentException(field, name, field
                        + " name is not valid UTF-8 (unpaired surrogate): '" + InvalidArgumentException.printable(name)
                        + "'");
            } else {
                bytes += 3;
            }
        }
        if (bytes > BYTES_MAX) {
            throw tooLong(field, name, bytes);
        }
        return name;
    }

    private static InvalidArgumentException control(String field, String name) {
        return new InvalidArgumentException(field, name, field + " name must not contain control characters: '"
                + InvalidArgumentException.printable(name) + "'");
    }

    /** Decodes {@code bytes} as a name, refusing invalid UTF-8 with an error naming the bytes. */
    public static String decode(String field, byte[] bytes) {
        return decode(field, bytes, 0, bytes.length);
    }

    /** As {@link #decode(String, byte[])}, for {@code length} bytes at {@code offset}. */
    static String decode(String field, byte[] bytes, int offset, int length) {
        try {
            String name = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes, offset, length)).toString();
            return check(field, name);
        } catch (CharacterCodingException e) {
            String hex = hex(bytes, offset, length);
            throw new InvalidArgumentException(field, hex, field + " name is not valid UTF-8: bytes " + hex);
        }
    }

    private static InvalidArgumentException tooLong(String field, String name, int bytes) {
        return new InvalidArgumentException(field, name, field + " name is " + bytes + " bytes of UTF-8, more than the "
                + BYTES_MAX + " allowed: '" + InvalidArgumentException.printable(name) + "'");
    }

    private static String hex(byte[] bytes, int offset, int length) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < Math.min(length, 64); i++) {
            out.append(String.format("%02x", bytes[offset + i] & 0xff));
        }
        return length > 64 ? out + "..." : out.toString();
    }
}

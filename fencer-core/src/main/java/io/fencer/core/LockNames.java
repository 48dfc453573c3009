package io.fencer.core;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
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

    /** As {@link #check(String)}, naming {@code field} (e.g. "scope") in the error. */
    public static String check(String field, String name) {
        if (name == null || name.isEmpty()) {
            throw new InvalidArgumentException(field, "", field + " name must not be empty");
        }
        if (name.length() > BYTES_MAX) { // every char is at least one byte
            throw tooLong(field, name, name.length());
        }
        byte[] bytes;
        try {
            bytes = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(name)).array();
        } catch (CharacterCodingException e) {
            throw new InvalidArgumentException(field, name, field + " name is not valid UTF-8 (unpaired surrogate): '"
                    + InvalidArgumentException.printable(name) + "'");
        }
        int length = utf8Length(name);
        if (length > BYTES_MAX) {
            throw tooLong(field, name, length);
        }
        assert bytes.length >= length : "encoder produced " + bytes.length + " < " + length;
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                throw new InvalidArgumentException(field, name, field + " name must not contain control characters: '"
                        + InvalidArgumentException.printable(name) + "'");
            }
        }
        return name;
    }

    /** Decodes {@code bytes} as a name, refusing invalid UTF-8 with an error naming the bytes. */
    public static String decode(String field, byte[] bytes) {
        try {
            String name = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
            return check(field, name);
        } catch (CharacterCodingException e) {
            throw new InvalidArgumentException(field, hex(bytes),
                    field + " name is not valid UTF-8: bytes " + hex(bytes));
        }
    }

    private static InvalidArgumentException tooLong(String field, String name, int bytes) {
        return new InvalidArgumentException(field, name, field + " name is " + bytes + " bytes of UTF-8, more than the "
                + BYTES_MAX + " allowed: '" + InvalidArgumentException.printable(name) + "'");
    }

    private static int utf8Length(String s) {
        int bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c)) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    private static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < Math.min(bytes.length, 64); i++) {
            out.append(String.format("%02x", bytes[i] & 0xff));
        }
        return bytes.length > 64 ? out + "..." : out.toString();
    }
}

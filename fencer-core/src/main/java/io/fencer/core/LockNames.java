package io.fencer.core;

import io.fencer.core.internal.LockName;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Validation of lock and scope names: 1 to {@link #BYTES_MAX} bytes of valid UTF-8, no control characters.
 *
 * <p>Two checks. {@link #check} is the rule every name meets, including names already kept by a lock service or a
 * store (in snapshots, logs, store data and the tokens issued for them): those always load and can always be read,
 * released or written to. {@link #checkNew} is the rule a name must meet to be <em>created</em> (a lock acquired,
 * a scope created or first written), stricter because names are shown to people: it also refuses every character
 * that renders as nothing or reorders the text around it, so that two different names cannot look the same in a
 * console, a log line or an error. Those are the format characters ({@link Character#FORMAT}: the bidirectional
 * controls U+061C, U+200E, U+200F, U+202A to U+202E and U+2066 to U+2069, the zero-width U+200B to U+200D, U+2060
 * and U+FEFF, the soft hyphen and the rest of the category) and the line and paragraph separators U+2028 and U+2029.
 */
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

    /**
     * Returns {@code name} when it may name a new lock or scope: {@link #check(String, String)}, and no character
     * that is invisible or reorders text (see the class doc). Only the non-ASCII characters of a name cost more
     * than the plain check.
     *
     * @throws InvalidArgumentException naming the field, the first offending code point (as {@code U+XXXX}) and its
     *     position, counted in code points from 0
     */
    public static String checkNew(String field, String name) {
        check(field, name);
        int position = 0;
        for (int i = 0; i < name.length(); position++) {
            int codePoint = name.codePointAt(i);
            String kind = hiddenKind(codePoint);
            if (kind != null) {
                throw new InvalidArgumentException(field, name, String.format(Locale.ROOT, "%s name holds U+%04X (%s) at position"
                        + " %d (code points counted from 0): a new name must not hold control, format (bidirectional"
                        + " or zero-width) or separator characters, which make different names look alike: '%s'",
                        field, codePoint, kind, position, InvalidArgumentException.printable(name)));
            }
            i += Character.charCount(codePoint);
        }
        return name;
    }

    /** As {@link #checkNew(String, String)}, naming the field "lock". */
    public static String checkNew(String name) {
        return checkNew("lock", name);
    }

    /** Returns what kind of hidden character {@code codePoint} is, or null when it shows as itself. */
    static String hiddenKind(int codePoint) {
        if (codePoint < 0x80) {
            return codePoint < 0x20 || codePoint == 0x7f ? "a control character" : null;
        }
        switch (codePoint) {
            case 0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069:
                return "a bidirectional control";
            case 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF:
                return "a zero-width character";
            case 0x2028, 0x2029:
                return "a line or paragraph separator";
            default:
                break;
        }
        int type = Character.getType(codePoint);
        if (type == Character.CONTROL) {
            return "a control character";
        }
        return type == Character.FORMAT ? "an invisible format character" : null;
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
    public static String decode(String field, byte[] bytes, int offset, int length) {
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
            out.append(String.format(Locale.ROOT, "%02x", bytes[offset + i] & 0xff));
        }
        return length > 64 ? out + "..." : out.toString();
    }
}

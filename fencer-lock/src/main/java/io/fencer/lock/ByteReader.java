package io.fencer.lock;

import io.fencer.core.internal.LockName;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A bounds-checked reader over an encoded byte array. Every read checks the bytes left first, and every length
 * or count read is checked against them before anything is allocated, so garbage fails fast with an
 * {@link IllegalArgumentException} naming the offset instead of looping or allocating.
 */
final class ByteReader {
    /** The longest string the codec reads or writes, in UTF-8 bytes (names, request ids, error messages). */
    static final int STRING_BYTES_MAX = 65_536;

    private final byte[] bytes;
    private final String what;
    private int offset;

    ByteReader(byte[] bytes, String what) {
        this.bytes = bytes;
        this.what = what;
    }

    int offset() {
        return offset;
    }

    int remaining() {
        return bytes.length - offset;
    }

    private void need(int count, String field) {
        if (count > remaining()) {
            throw malformed("truncated: " + field + " needs " + count + " bytes, " + remaining() + " left");
        }
    }

    IllegalArgumentException malformed(String problem) {
        return new IllegalArgumentException("malformed " + what + " at byte " + offset + " of " + bytes.length
                + ": " + problem);
    }

    int readByte(String field) {
        need(1, field);
        return bytes[offset++] & 0xff;
    }

    boolean readBoolean(String field) {
        int value = readByte(field);
        if (value > 1) {
            throw malformed(field + " is the boolean byte " + value + ", expected 0 or 1");
        }
        return value == 1;
    }

    int readInt(String field) {
        need(4, field);
        int value = 0;
        for (int i = 0; i < 4; i++) {
            value = (value << 8) | (bytes[offset++] & 0xff);
        }
        return value;
    }

    long readLong(String field) {
        need(8, field);
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (bytes[offset++] & 0xff);
        }
        return value;
    }

    /** Reads a count of items that take at least {@code itemBytesMin} bytes each, bounded by the bytes left. */
    int readCount(String field, int itemBytesMin) {
        int count = readInt(field);
        if (count < 0 || (long) count * itemBytesMin > remaining()) {
            throw malformed(field + " count " + count + " cannot fit in the " + remaining() + " bytes left");
        }
        return count;
    }

    /** Reads exactly {@code count} raw bytes. */
    byte[] readBytes(int count, String field) {
        need(count, field);
        byte[] read = Arrays.copyOfRange(bytes, offset, offset + count);
        offset += count;
        return read;
    }

    /** Reads a length-prefixed UTF-8 string; a length of -1 stands for null. */
    String readString(String field) {
        int length = readStringLength(field);
        if (length == -1) {
            return null;
        }
        if (isAscii(offset, length)) {
            // ASCII is valid UTF-8 and decodes to itself: skip the strict decoder and its allocations per string
            String text = new String(bytes, offset, length, StandardCharsets.ISO_8859_1);
            offset += length;
            return text;
        }
        try {
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes, offset, length)).toString();
            offset += length;
            return text;
        } catch (CharacterCodingException e) {
            throw malformed(field + " is not valid UTF-8");
        }
    }

    private boolean isAscii(int from, int length) {
        for (int i = from; i < from + length; i++) {
            if (bytes[i] < 0) {
                return false;
            }
        }
        return true;
    }

    /** Reads a string's length, -1 for null, and checks that its bytes are there. */
    private int readStringLength(String field) {
        int length = readInt(field + " length");
        if (length == -1) {
            return -1;
        }
        if (length < 0 || length > STRING_BYTES_MAX) {
            throw malformed(field + " length " + length + " is outside [0, " + STRING_BYTES_MAX + "]");
        }
        need(length, field);
        return length;
    }

    /**
     * Reads a length-prefixed lock name, decoded and checked in one pass over its bytes.
     *
     * @throws io.fencer.core.InvalidArgumentException naming the field "lock" when it is not a valid name
     */
    LockName readLockName(String field) {
        int length = readStringLength(field);
        if (length == -1) {
            throw malformed(field + " is null");
        }
        LockName name = LockName.fromUtf8("lock", bytes, offset, length);
        offset += length;
        return name;
    }

    String readRequiredString(String field) {
        String text = readString(field);
        if (text == null) {
            throw malformed(field + " is null");
        }
        return text;
    }

    void expectEnd() {
        if (remaining() != 0) {
            throw malformed(remaining() + " trailing bytes");
        }
    }
}

package io.fencer.files;

import io.fencer.core.FencingToken;
import io.fencer.core.LockNames;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The content of a fence file: the scope, the accepted token, the token that wrote each file, and at most one
 * pending write (a write whose content may or may not have been renamed into place when its writer stopped).
 *
 * <p>The format is text, one record a line, so an operator can read it: {@code fencer-files 1} (the format version),
 * {@code scope <base64url>}, {@code accepted <decimal>}, at most one {@code pending <base64url name> <token>
 * <temp file name>}, any number of {@code file <base64url name> <token>}, and last {@code crc32c <8 hex digits>}, the
 * CRC-32C of every byte before that line. Names are base64url so that no file name can break a line.
 */
record FenceState(String scope, long accepted, Pending pending, Map<String, Long> writers) {
    static final String MAGIC = "fencer-files";
    static final int VERSION = 1;
    /** The largest fence file read, in bytes: a larger one is refused as corrupt rather than read into memory. */
    static final int FILE_BYTES_MAX = 8 * 1024 * 1024;

    /** A write that had recorded its intent but not yet raised the fence. */
    record Pending(String name, long token, String tempName) {}

    FenceState {
        writers = Collections.unmodifiableMap(new TreeMap<>(writers));
    }

    static FenceState empty(String scope) {
        return new FenceState(scope, FencingToken.NONE, null, Map.of());
    }

    /** The lowest token a write must beat: a pending write's token counts as accepted, whether it landed or not. */
    long effectiveAccepted() {
        return pending == null ? accepted : Math.max(accepted, pending.token);
    }

    byte[] encode() {
        StringBuilder text = new StringBuilder();
        text.append(MAGIC).append(' ').append(VERSION).append('\n');
        text.append("scope ").append(b64(scope)).append('\n');
        text.append("accepted ").append(accepted).append('\n');
        if (pending != null) {
            text.append("pending ").append(b64(pending.name)).append(' ').append(pending.token).append(' ')
                    .append(b64(pending.tempName)).append('\n');
        }
        writers.forEach((name, token) -> text.append("file ").append(b64(name)).append(' ').append(token).append('\n'));
        byte[] body = text.toString().getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        String trailer = String.format(Locale.ROOT, "crc32c %08x%n", crc.getValue());
        byte[] out = new byte[body.length + trailer.length()];
        System.arraycopy(body, 0, out, 0, body.length);
        System.arraycopy(trailer.getBytes(StandardCharsets.US_ASCII), 0, out, body.length, trailer.length());
        return out;
    }

    /**
     * Parses a fence file's bytes, checking its version and checksum first.
     *
     * @throws FenceFileCorruptException naming {@code file} and what is wrong
     */
    static FenceState decode(Path file, byte[] bytes) throws FenceFileCorruptException {
        String text = new String(bytes, StandardCharsets.UTF_8);
        int trailerAt = text.lastIndexOf("crc32c ");
        if (!text.startsWith(MAGIC + " ")) {
            throw new FenceFileCorruptException(file, "it does not start with '" + MAGIC + " '");
        }
        String firstLine = text.substring(0, Math.max(text.indexOf('\n'), 0));
        String version = firstLine.substring(MAGIC.length() + 1);
        if (!version.equals(Integer.toString(VERSION))) {
            throw new FenceFileCorruptException(file, "format version '" + version + "' is not " + VERSION
                    + ", the one this release reads");
        }
        if (trailerAt < 0 || !text.endsWith("\n") || text.indexOf('\n', trailerAt) != text.length() - 1) {
            throw new FenceFileCorruptException(file, "it has no checksum line at its end (truncated?)");
        }
        byte[] body = text.substring(0, trailerAt).getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        String stored = text.substring(trailerAt + "crc32c ".length(), text.length() - 1);
        String computed = String.format(Locale.ROOT, "%08x", crc.getValue());
        if (!stored.equals(computed)) {
            throw new FenceFileCorruptException(file, "its checksum is " + computed + " but the file says '"
                    + stored + "'");
        }
        return parseBody(file, text.substring(0, trailerAt).split("\n", -1));
    }

    private static FenceState parseBody(Path file, String[] lines) throws FenceFileCorruptException {
        // lines[0] is the version line, checked; the body ends with '\n', so the last element is empty.
        String scope = null;
        Long accepted = null;
        Pending pending = null;
        Map<String, Long> writers = new TreeMap<>();
        for (int i = 1; i < lines.length - 1; i++) {
            String[] parts = lines[i].split(" ", -1);
            String at = "line " + (i + 1) + " '" + lines[i] + "'";
            switch (parts[0]) {
                case "scope" -> scope = name(file, at, parts, 2, 1);
                case "accepted" -> accepted = token(file, at, parts, 2, 1, true);
                case "pending" -> pending = new Pending(name(file, at, parts, 4, 1), token(file, at, parts, 4, 2,
                        false), name(file, at, parts, 4, 3));
                case "file" -> writers.put(name(file, at, parts, 3, 1), token(file, at, parts, 3, 2, false));
                default -> throw new FenceFileCorruptException(file, at + " is not a record this release reads");
            }
        }
        if (scope == null || accepted == null) {
            throw new FenceFileCorruptException(file, "it lacks its scope or accepted record");
        }
        return new FenceState(scope, accepted, pending, writers);
    }

    private static String name(Path file, String at, String[] parts, int count, int index)
            throws FenceFileCorruptException {
        if (parts.length != count) {
            throw new FenceFileCorruptException(file, at + " has " + parts.length + " fields, not " + count);
        }
        try {
            return LockNames.decode("name", Base64.getUrlDecoder().decode(parts[index]));
        } catch (RuntimeException e) {
            throw new FenceFileCorruptException(file, at + ": field " + (index + 1) + " is not a base64url name");
        }
    }

    private static long token(Path file, String at, String[] parts, int count, int index, boolean noneAllowed)
            throws FenceFileCorruptException {
        if (parts.length != count) {
            throw new FenceFileCorruptException(file, at + " has " + parts.length + " fields, not " + count);
        }
        long value;
        try {
            value = Long.parseLong(parts[index]);
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < (noneAllowed ? FencingToken.NONE : 1) || value > FencingToken.VALUE_MAX) {
            throw new FenceFileCorruptException(file, at + ": '" + parts[index] + "' is not a token value");
        }
        return value;
    }

    private static String b64(String text) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }
}

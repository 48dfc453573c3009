package io.fencer.s3;

import io.fencer.core.FencingToken;
import io.fencer.core.LockNames;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The content of a fence object: the scope, the accepted token, a revision that every commit raises, and for each
 * object name the token that wrote it and the key of the immutable data object that holds its content.
 *
 * <p>The revision makes every fence a commit writes differ from every fence before it, so its ETag (for a single-part
 * put, a digest of the content) never comes back: a writer holding an old ETag can never see it match again (no
 * A-B-A).
 *
 * <p>The format is text, one record a line, so an operator can read it: {@code fencer-s3 1} (the format version),
 * {@code scope <base64url>}, {@code accepted <decimal>}, {@code revision <decimal>}, any number of
 * {@code object <base64url name> <token> <base64url data key>}, and last {@code crc32c <8 hex digits>}, the CRC-32C of
 * every byte before that line.
 */
record FenceState(String scope, long accepted, long revision, Map<String, Entry> objects) {
    static final String MAGIC = "fencer-s3";
    static final int VERSION = 1;
    /** The largest fence object read, in bytes: a larger one is refused as corrupt rather than read into memory. */
    static final int OBJECT_BYTES_MAX = 8 * 1024 * 1024;

    /** One committed object: the token that wrote it and the key of its data object. */
    record Entry(long token, String dataKey) {}

    FenceState {
        objects = Collections.unmodifiableMap(new TreeMap<>(objects));
    }

    static FenceState empty(String scope) {
        return new FenceState(scope, FencingToken.NONE, 0, Map.of());
    }

    /** The next fence: {@code name} committed under {@code token} (or removed when {@code entry} is null). */
    FenceState with(long token, String name, Entry entry) {
        Map<String, Entry> next = new TreeMap<>(objects);
        if (entry == null) {
            next.remove(name);
        } else {
            next.put(name, entry);
        }
        return new FenceState(scope, Math.max(accepted, token), revision + 1, next);
    }

    byte[] encode() {
        StringBuilder text = new StringBuilder();
        text.append(MAGIC).append(' ').append(VERSION).append('\n');
        text.append("scope ").append(b64(scope)).append('\n');
        text.append("accepted ").append(accepted).append('\n');
        text.append("revision ").append(revision).append('\n');
        objects.forEach((name, entry) -> text.append("object ").append(b64(name)).append(' ').append(entry.token)
                .append(' ').append(b64(entry.dataKey)).append('\n'));
        byte[] body = text.toString().getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        byte[] trailer = String.format(Locale.ROOT, "crc32c %08x%n", crc.getValue()).getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[body.length + trailer.length];
        System.arraycopy(body, 0, out, 0, body.length);
        System.arraycopy(trailer, 0, out, body.length, trailer.length);
        return out;
    }

    /** Thrown by {@link #decode} with the reason; the caller names the object. */
    static final class Corrupt extends Exception {
        private static final long serialVersionUID = 1L;

        Corrupt(String why) {
            super(why, null, false, false);
        }
    }

    /** Parses a fence object's bytes, checking its version and checksum first. */
    static FenceState decode(byte[] bytes) throws Corrupt {
        String text = new String(bytes, StandardCharsets.UTF_8);
        if (!text.startsWith(MAGIC + " ")) {
            throw new Corrupt("it does not start with '" + MAGIC + " '");
        }
        String firstLine = text.substring(0, Math.max(text.indexOf('\n'), 0));
        String version = firstLine.isEmpty() ? "" : firstLine.substring(MAGIC.length() + 1);
        if (!version.equals(Integer.toString(VERSION))) {
            throw new Corrupt("format version '" + version + "' is not " + VERSION + ", the one this release reads");
        }
        int trailerAt = text.lastIndexOf("crc32c ");
        if (trailerAt < 0 || !text.endsWith("\n") || text.indexOf('\n', trailerAt) != text.length() - 1) {
            throw new Corrupt("it has no checksum line at its end (truncated?)");
        }
        CRC32C crc = new CRC32C();
        crc.update(text.substring(0, trailerAt).getBytes(StandardCharsets.UTF_8));
        String stored = text.substring(trailerAt + "crc32c ".length(), text.length() - 1);
        String computed = String.format(Locale.ROOT, "%08x", crc.getValue());
        if (!stored.equals(computed)) {
            throw new Corrupt("its checksum is " + computed + " but the object says '" + stored + "'");
        }
        return parseBody(text.substring(0, trailerAt).split("\n", -1));
    }

    private static FenceState parseBody(String[] lines) throws Corrupt {
        // lines[0] is the version line, checked; the body ends with '\n', so the last element is empty.
        String scope = null;
        Long accepted = null;
        Long revision = null;
        Map<String, Entry> objects = new TreeMap<>();
        for (int i = 1; i < lines.length - 1; i++) {
            String[] parts = lines[i].split(" ", -1);
            String at = "line " + (i + 1) + " '" + lines[i] + "'";
            switch (parts[0]) {
                case "scope" -> scope = text(at, parts, 2, 1);
                case "accepted" -> accepted = number(at, parts, 2, 1, FencingToken.NONE);
                case "revision" -> revision = number(at, parts, 2, 1, 0);
                case "object" -> objects.put(text(at, parts, 4, 1),
                        new Entry(number(at, parts, 4, 2, 1), text(at, parts, 4, 3)));
                default -> throw new Corrupt(at + " is not a record this release reads");
            }
        }
        if (scope == null || accepted == null || revision == null) {
            throw new Corrupt("it lacks its scope, accepted or revision record");
        }
        for (Map.Entry<String, Entry> object : objects.entrySet()) {
            if (object.getValue().token > accepted) {
                throw new Corrupt("object '" + object.getKey() + "' was written by token " + object.getValue().token
                        + ", above the accepted token " + accepted);
            }
        }
        return new FenceState(scope, accepted, revision, objects);
    }

    private static String text(String at, String[] parts, int count, int index) throws Corrupt {
        if (parts.length != count) {
            throw new Corrupt(at + " has " + parts.length + " fields, not " + count);
        }
        try {
            return LockNames.decode("name", Base64.getUrlDecoder().decode(parts[index]));
        } catch (RuntimeException e) {
            throw new Corrupt(at + ": field " + (index + 1) + " is not base64url of a name");
        }
    }

    private static long number(String at, String[] parts, int count, int index, long min) throws Corrupt {
        if (parts.length != count) {
            throw new Corrupt(at + " has " + parts.length + " fields, not " + count);
        }
        long value;
        try {
            value = Long.parseLong(parts[index]);
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < min || value > FencingToken.VALUE_MAX) {
            throw new Corrupt(at + ": '" + parts[index] + "' is not a number in [" + min + ", "
                    + FencingToken.VALUE_MAX + "]");
        }
        return value;
    }

    static String b64(String text) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }
}

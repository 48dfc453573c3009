package io.fencer.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * The sequencer: a token's opaque wire form, {@code fencer1.<base64url(lock)>.<value>} (Chubby's name for
 * it), optionally signed as {@code fencer1.<base64url(lock)>.<value>.<kid>.<base64url(mac)>} with a key of
 * {@link TokenKeys}.
 *
 * <p>The mode: a {@link LockMode#SHARED} token has the part {@code shared} after its value,
 * {@code fencer1.<lock>.<value>.shared[.<kid>.<mac>]} (4 parts, 6 when signed), and its MAC covers the mode. An
 * exclusive token is written without a mode part, exactly as before read-write locks, so every sequencer issued
 * before still parses (as exclusive) and resources of that release refuse a shared one as malformed rather than
 * let it write. A mode part {@code exclusive} is read too; any other mode is refused as a malformed sequencer
 * ({@link InvalidArgumentException} of field {@code sequencer}) whose sentence names the unknown mode. Resources receive it from clients and parse it with {@link #parse(String)} (any form,
 * signature ignored) or {@link #parse(String, TokenKeys)} (signature required); it is not meant to be read by
 * people ({@link FencingToken#toString()} is).
 */
public final class Sequencer {
    /** The version prefix of the current format. */
    public static final String PREFIX = "fencer1";
    /** The longest sequencer accepted, in characters. */
    public static final int LENGTH_MAX = 512;
    /** The length of an HMAC-SHA256 in bytes, and of its base64url text without padding. */
    private static final int MAC_BYTES = 32;
    private static final int MAC_CHARS = 43;
    /** The fewest and the most dot-separated parts: prefix, lock, value; then a mode, a key id and a MAC. */
    private static final int PARTS_MIN = 3;
    private static final int PARTS_MAX = 6;

    private Sequencer() {}

    /** Formats {@code token} as a sequencer. */
    public static String format(FencingToken token) {
        String lock = Base64.getUrlEncoder().withoutPadding()
                .encodeToString(token.lock().getBytes(StandardCharsets.UTF_8));
        String text = PREFIX + "." + lock + "." + token.value();
        return token.mode() == LockMode.EXCLUSIVE ? text : text + "." + token.mode().text();
    }

    /**
     * Formats {@code token} as a sequencer signed with the signing key of {@code keys}; with null keys, as
     * {@link #format(FencingToken)}.
     */
    public static String format(FencingToken token, TokenKeys keys) {
        if (keys == null) {
            return format(token);
        }
        String mac = Base64.getUrlEncoder().withoutPadding().encodeToString(keys.sign(token));
        return format(token) + "." + keys.signingKeyId() + "." + mac;
    }

    /**
     * Parses a sequencer, signed or not, ignoring any signature: the verifier of a resource that does not
     * require signed tokens.
     *
     * @throws InvalidArgumentException with field "sequencer" and the offending text when it is malformed:
     *     wrong prefix or part count, a lock that is not base64url of a valid name, a value that is not a
     *     decimal in [1, {@link FencingToken#VALUE_MAX}], or a signature part of the wrong shape
     */
    public static FencingToken parse(String sequencer) {
        return split(sequencer).token();
    }

    /**
     * Parses a sequencer and, when {@code keys} is not null, requires a valid signature by one of them (MACs
     * compared in constant time); with null keys, as {@link #parse(String)}.
     *
     * @throws InvalidArgumentException when the sequencer is malformed, as {@link #parse(String)}
     * @throws BadTokenSignatureException when keys are given and the sequencer is unsigned, signed with an
     *     unknown key id, or its MAC is wrong
     */
    public static FencingToken parse(String sequencer, TokenKeys keys) {
        Parts parts = split(sequencer);
        if (keys == null) {
            return parts.token();
        }
        FencingToken token = parts.token();
        if (parts.keyId() == null) {
            throw new BadTokenSignatureException(token.lock(), token.value(),
                    "it is unsigned and this resource requires signed tokens");
        }
        byte[] expected = keys.mac(parts.keyId(), token);
        if (expected == null) {
            throw new BadTokenSignatureException(token.lock(), token.value(), "it is signed with key id '"
                    + parts.keyId() + "', which is not among this resource's keys " + keys.keyIds());
        }
        if (!MessageDigest.isEqual(expected, parts.mac())) {
            throw new BadTokenSignatureException(token.lock(), token.value(),
                    "its signature does not verify with key '" + parts.keyId() + "' (forged or altered)");
        }
        return token;
    }

    /** The parsed parts of a sequencer; {@code keyId} and {@code mac} are null when it is unsigned. */
    private record Parts(FencingToken token, String keyId, byte[] mac) {}

    private static Parts split(String sequencer) {
        if (sequencer == null || sequencer.isEmpty()) {
            throw malformed("", "it is empty");
        }
        if (sequencer.length() > LENGTH_MAX) {
            throw malformed(sequencer, "it is " + sequencer.length() + " characters, more than " + LENGTH_MAX);
        }
        String[] parts = parts(sequencer);
        if (!PREFIX.equals(parts[0])) {
            throw malformed(sequencer, "it does not start with '" + PREFIX + ".'");
        }
        byte[] lockBytes;
        try {
            lockBytes = Base64.getUrlDecoder().decode(parts[1]);
        } catch (IllegalArgumentException e) {
            throw malformed(sequencer, "the lock part is not base64url");
        }
        String lock;
        try {
            lock = LockNames.decode("lock", lockBytes);
        } catch (InvalidArgumentException e) {
            throw malformed(sequencer, e.getMessage());
        }
        boolean moded = parts.length == 4 || parts.length == 6;
        LockMode mode = moded ? parseMode(sequencer, parts[3]) : LockMode.EXCLUSIVE;
        FencingToken token = new FencingToken(lock, parseValue(sequencer, parts[2]), mode);
        int keyPart = moded ? 4 : 3;
        if (parts.length == keyPart) {
            return new Parts(token, null, null);
        }
        if (!TokenKeys.isKeyId(parts[keyPart])) {
            throw malformed(sequencer, "the key id '" + InvalidArgumentException.printable(parts[keyPart])
                    + "' is not 1 to " + TokenKeys.KEY_ID_CHARS_MAX + " characters of [A-Za-z0-9_-]");
        }
        return new Parts(token, parts[keyPart], parseMac(sequencer, parts[keyPart + 1]));
    }

    /**
     * Splits {@code sequencer} at every dot, keeping empty parts (as {@code split("\\.", -1)} would), after counting
     * them: every fenced write parses a sequencer, on the resource and on the client, and {@code String.split}, with
     * the list and the array it builds, was about half of the parse's time in a profile of the store.
     */
    private static String[] parts(String sequencer) {
        int count = 1;
        for (int i = 0; i < sequencer.length(); i++) {
            if (sequencer.charAt(i) == '.') {
                count++;
            }
        }
        if (count < PARTS_MIN || count > PARTS_MAX) {
            throw malformed(sequencer, "expected 3 dot-separated parts (5 when signed; one more with a mode),"
                    + " found " + count);
        }
        String[] parts = new String[count];
        int start = 0;
        for (int part = 0; part < count - 1; part++) {
            int dot = sequencer.indexOf('.', start);
            parts[part] = sequencer.substring(start, dot);
            start = dot + 1;
        }
        parts[count - 1] = sequencer.substring(start);
        return parts;
    }

    private static LockMode parseMode(String sequencer, String text) {
        try {
            return LockMode.ofText(text);
        } catch (InvalidArgumentException e) {
            throw malformed(sequencer, "unknown mode '" + InvalidArgumentException.printable(text)
                    + "' (expected exclusive or shared)");
        }
    }

    private static byte[] parseMac(String sequencer, String text) {
        byte[] mac = null;
        if (text.length() == MAC_CHARS) {
            try {
                mac = Base64.getUrlDecoder().decode(text);
            } catch (IllegalArgumentException e) {
                mac = null;
            }
        }
        if (mac == null || mac.length != MAC_BYTES) {
            throw malformed(sequencer, "the signature is not " + MAC_CHARS + " characters of base64url ("
                    + MAC_BYTES + " bytes)");
        }
        return mac;
    }

    private static long parseValue(String sequencer, String text) {
        if (text.isEmpty() || text.length() > 19 || !isDecimal(text)) {
            throw malformed(sequencer, "the value '" + InvalidArgumentException.printable(text)
                    + "' is not a positive decimal");
        }
        long value;
        try {
            value = Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw malformed(sequencer, "the value " + text + " exceeds " + FencingToken.VALUE_MAX);
        }
        if (value < 1 || value > FencingToken.VALUE_MAX) {
            throw malformed(sequencer, "the value " + value + " is outside [1, " + FencingToken.VALUE_MAX + "]");
        }
        return value;
    }

    private static boolean isDecimal(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static InvalidArgumentException malformed(String sequencer, String why) {
        return new InvalidArgumentException("sequencer", sequencer,
                "malformed sequencer '" + InvalidArgumentException.printable(sequencer) + "': " + why);
    }
}

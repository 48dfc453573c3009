package io.fencer.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * The sequencer: a token's opaque wire form, {@code fencer1.<base64url(lock)>.<value>} (Chubby's name for
 * it), optionally signed as {@code fencer1.<base64url(lock)>.<value>.<kid>.<base64url(mac)>} with a key of
 * {@link TokenKeys}. Resources receive it from clients and parse it with {@link #parse(String)} (any form,
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

    private Sequencer() {}

    /** Formats {@code token} as a sequencer. */
    public static String format(FencingToken token) {
        String lock = Base64.getUrlEncoder().withoutPadding()
                .encodeToString(token.lock().getBytes(StandardCharsets.UTF_8));
        return PREFIX + "." + lock + "." + token.value();
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
        String[] parts = sequencer.split("\\.", -1);
        if (parts.length != 3 && parts.length != 5) {
            throw malformed(sequencer, "expected 3 dot-separated parts (5 when signed), found " + parts.length);
        }
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
        FencingToken token = new FencingToken(lock, parseValue(sequencer, parts[2]));
        if (parts.length == 3) {
            return new Parts(token, null, null);
        }
        if (!TokenKeys.isKeyId(parts[3])) {
            throw malformed(sequencer, "the key id '" + InvalidArgumentException.printable(parts[3])
                    + "' is not 1 to " + TokenKeys.KEY_ID_CHARS_MAX + " characters of [A-Za-z0-9_-]");
        }
        return new Parts(token, parts[3], parseMac(sequencer, parts[4]));
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
        if (text.isEmpty() || text.length() > 19 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
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

    private static InvalidArgumentException malformed(String sequencer, String why) {
        return new InvalidArgumentException("sequencer", sequencer,
                "malformed sequencer '" + InvalidArgumentException.printable(sequencer) + "': " + why);
    }
}

package io.fencer.core;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A set of HMAC-SHA256 keys, by key id, with which the lock service signs tokens and resources verify them.
 *
 * <p>The first key signs; every key verifies. Rotation is therefore: put a new key first and keep the old
 * one after it until every token signed with it has been superseded, then drop it.
 *
 * <p>The key file ({@link #load(Path)}) holds one key a line, {@code kid=base64(key)}; blank lines and lines
 * starting with {@code #} are ignored. Key ids are 1 to {@value #KEY_ID_CHARS_MAX} characters of
 * {@code [A-Za-z0-9_-]}; keys are at least {@value #KEY_BYTES_MIN} bytes. Errors name the file and line,
 * never the key material.
 *
 * <pre>
 * # signs new tokens
 * k2=q0Ldxk9p1c0QmC0Yj7sTnq3x3cS1WcE1sJzq3wJH2zA=
 * # verifies tokens signed before the rotation
 * k1=Vb0p6GgCq1s6g7bVv2c2qg4c0mC9pY4F3uXy0bFh2mU=
 * </pre>
 *
 * <p>Immutable and thread-safe; {@link #toString()} shows key ids only.
 */
public final class TokenKeys {
    /** The shortest key accepted, in bytes. */
    public static final int KEY_BYTES_MIN = 16;
    /** The longest key id, in characters. */
    public static final int KEY_ID_CHARS_MAX = 32;
    /** The most keys one set may hold. */
    public static final int KEYS_MAX = 64;
    /** The largest key file read, in bytes. */
    public static final int FILE_BYTES_MAX = 64 * 1024;
    /** The size of keys made by {@link #generate(String)}, in bytes. */
    public static final int GENERATED_KEY_BYTES = 32;

    private static final String ALGORITHM = "HmacSHA256";
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9_-]{1," + KEY_ID_CHARS_MAX + "}");
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Key ids in file order; the first signs. */
    private final List<String> keyIds;
    private final Map<String, SecretKeySpec> keys;

    private TokenKeys(Map<String, SecretKeySpec> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("a key set needs at least one key");
        }
        this.keys = Collections.unmodifiableMap(new LinkedHashMap<>(keys));
        this.keyIds = List.copyOf(keys.keySet());
    }

    /**
     * Reads a key file.
     *
     * @throws IOException when the file cannot be read
     * @throws InvalidArgumentException (field "tokenKeys", value "file:line") naming the line that is wrong
     */
    public static TokenKeys load(Path file) throws IOException {
        Objects.requireNonNull(file, "file");
        long size = Files.size(file);
        if (size > FILE_BYTES_MAX) {
            throw new InvalidArgumentException("tokenKeys", file.toString(), "token key file " + file + " is "
                    + size + " bytes, more than the " + FILE_BYTES_MAX + " allowed");
        }
        return parse(Files.readString(file, StandardCharsets.UTF_8), file.toString());
    }

    /**
     * Parses the text of a key file; {@code source} names it in errors (a path, or "--token-keys").
     *
     * @throws InvalidArgumentException (field "tokenKeys", value "source:line") naming the line that is wrong
     */
    public static TokenKeys parse(String text, String source) {
        Objects.requireNonNull(text, "text");
        Objects.requireNonNull(source, "source");
        Map<String, SecretKeySpec> keys = new LinkedHashMap<>();
        String[] lines = text.split("\r?\n", -1);
        for (int index = 0; index < lines.length; index++) {
            String line = lines[index].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int lineNumber = index + 1;
            int equals = line.indexOf('=');
            if (equals < 0) {
                throw badLine(source, lineNumber, "expected kid=base64(key), found no '='");
            }
            String keyId = line.substring(0, equals).strip();
            checkKeyId(keyId, source, lineNumber);
            if (keys.containsKey(keyId)) {
                throw badLine(source, lineNumber, "key id '" + keyId + "' appears twice");
            }
            if (keys.size() == KEYS_MAX) {
                throw badLine(source, lineNumber, "more than " + KEYS_MAX + " keys");
            }
            byte[] key = decodeKey(line.substring(equals + 1).strip(), keyId, source, lineNumber);
            keys.put(keyId, new SecretKeySpec(key, ALGORITHM));
        }
        if (keys.isEmpty()) {
            throw new InvalidArgumentException("tokenKeys", source, "token key file " + source + " holds no key");
        }
        return new TokenKeys(keys);
    }

    /** Returns a set of one key, which signs and verifies. */
    public static TokenKeys of(String keyId, byte[] key) {
        Objects.requireNonNull(key, "key");
        checkKeyId(keyId, "argument", 0);
        if (key.length < KEY_BYTES_MIN) {
            throw new IllegalArgumentException("key '" + keyId + "' is " + key.length + " bytes, fewer than the "
                    + KEY_BYTES_MIN + " required");
        }
        return new TokenKeys(Map.of(keyId, new SecretKeySpec(key, ALGORITHM)));
    }

    /** Returns a set of one fresh random key of {@value #GENERATED_KEY_BYTES} bytes named {@code keyId}. */
    public static TokenKeys generate(String keyId) {
        byte[] key = new byte[GENERATED_KEY_BYTES];
        RANDOM.nextBytes(key);
        return of(keyId, key);
    }

    /**
     * Returns this set followed by the keys of {@code older}: this set's first key still signs, and tokens
     * signed with the older keys still verify (rotation).
     */
    public TokenKeys plus(TokenKeys older) {
        Map<String, SecretKeySpec> merged = new LinkedHashMap<>(keys);
        for (Map.Entry<String, SecretKeySpec> entry : older.keys.entrySet()) {
            if (merged.putIfAbsent(entry.getKey(), entry.getValue()) != null) {
                throw new IllegalArgumentException("key id '" + entry.getKey() + "' is in both key sets");
            }
        }
        if (merged.size() > KEYS_MAX) {
            throw new IllegalArgumentException(merged.size() + " keys, more than the " + KEYS_MAX + " allowed");
        }
        return new TokenKeys(merged);
    }

    /** Returns the id of the key that signs. */
    public String signingKeyId() {
        return keyIds.get(0);
    }

    /** Returns every key id, the signing one first. */
    public List<String> keyIds() {
        return keyIds;
    }

    /** Returns the key file text of this set ({@code kid=base64} lines), for {@code fencer keygen}. */
    public String toKeyFile() {
        StringBuilder out = new StringBuilder("# Fencer token keys: the first signs, all verify. Keep secret.\n");
        for (Map.Entry<String, SecretKeySpec> entry : keys.entrySet()) {
            out.append(entry.getKey()).append('=')
                    .append(Base64.getEncoder().encodeToString(entry.getValue().getEncoded())).append('\n');
        }
        return out.toString();
    }

    /** Returns the MAC of {@code token} under the signing key. */
    byte[] sign(FencingToken token) {
        return mac(signingKeyId(), token);
    }

    /**
     * Returns the MAC of {@code token} under key {@code keyId}, or null when this set has no such key: HMAC-SHA256
     * over {@code "fencer1" 0x00 lock-UTF-8 0x00 value-as-8-bytes-big-endian}, followed for a shared token by
     * {@code 0x00 "shared"}: an exclusive token's MAC is the one of the release before modes, and a shared token's
     * MAC does not verify for the same lock and value claimed exclusive.
     */
    byte[] mac(String keyId, FencingToken token) {
        SecretKeySpec key = keys.get(keyId);
        if (key == null) {
            return null;
        }
        byte[] prefix = Sequencer.PREFIX.getBytes(StandardCharsets.US_ASCII);
        byte[] lock = token.lock().getBytes(StandardCharsets.UTF_8);
        byte[] mode = token.mode() == LockMode.EXCLUSIVE ? new byte[0]
                : token.mode().text().getBytes(StandardCharsets.US_ASCII);
        int modeBytes = mode.length == 0 ? 0 : 1 + mode.length;
        ByteBuffer message = ByteBuffer.allocate(prefix.length + 1 + lock.length + 1 + Long.BYTES + modeBytes);
        message.put(prefix).put((byte) 0).put(lock).put((byte) 0).putLong(token.value());
        if (modeBytes > 0) {
            message.put((byte) 0).put(mode);
        }
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            return mac.doFinal(message.array());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK lacks " + ALGORITHM + ", which every Java 17 JDK provides", e);
        }
    }

    /** Returns true when {@code keyId} has the shape of a key id. */
    static boolean isKeyId(String keyId) {
        return keyId != null && KEY_ID.matcher(keyId).matches();
    }

    private static void checkKeyId(String keyId, String source, int lineNumber) {
        if (!isKeyId(keyId)) {
            String shown = keyId == null ? "null" : InvalidArgumentException.printable(keyId);
            String why = "key id '" + shown + "' is not 1 to " + KEY_ID_CHARS_MAX + " characters of [A-Za-z0-9_-]";
            if (lineNumber == 0) {
                throw new IllegalArgumentException(why);
            }
            throw badLine(source, lineNumber, why);
        }
    }

    private static byte[] decodeKey(String text, String keyId, String source, int lineNumber) {
        byte[] key;
        try {
            key = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException standard) {
            try {
                key = Base64.getUrlDecoder().decode(text);
            } catch (IllegalArgumentException url) {
                throw badLine(source, lineNumber, "the key of '" + keyId + "' is not base64");
            }
        }
        if (key.length < KEY_BYTES_MIN) {
            throw badLine(source, lineNumber, "the key of '" + keyId + "' is " + key.length
                    + " bytes, fewer than the " + KEY_BYTES_MIN + " required");
        }
        return key;
    }

    private static InvalidArgumentException badLine(String source, int lineNumber, String why) {
        return new InvalidArgumentException("tokenKeys", source + ":" + lineNumber,
                "token key file " + source + " line " + lineNumber + ": " + why);
    }

    /** Shows key ids only, never key material. */
    @Override
    public String toString() {
        return "TokenKeys[signing=" + signingKeyId() + ", verifying=" + keyIds + "]";
    }
}

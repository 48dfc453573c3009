package io.fencer.redis;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.StaleTokenException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A fence kept inside the user's own Redis: one string key per scope holding the highest accepted token, checked
 * and advanced by a Lua script in the same atomic step as the caller's write.
 *
 * <p>Why a script: Redis runs a script without interleaving any other command, so the read of the fence, the
 * comparison, the write and the advance of the fence are one step; a client that read the fence, compared in
 * Java and then wrote would let a stale write land between the read and the write (check-then-act).
 *
 * <pre>{@code
 * RedisFence fence = new RedisFence(connection);
 * fence.set(token, "orders:42", "shipped");   // throws StaleTokenException when a newer token was accepted
 * }</pre>
 *
 * <p>A scope is the token's lock name; its fence is the string key {@code keyPrefix + scope} holding the accepted
 * token in decimal (absent means {@link FencingToken#NONE}). The script is loaded once with SCRIPT LOAD and
 * called with EVALSHA; when Redis has forgotten it (SCRIPT FLUSH, restart, failover) it is reloaded and the call
 * retried once. Thread-safe: Lettuce connections are. Redis errors and connection failures surface as Lettuce's
 * unchecked {@link io.lettuce.core.RedisException}. Not for Redis Cluster: the fence key, the last-write key and the
 * data key must be on one node, which this class does not arrange.
 *
 * <p>A write whose reply was lost. Lettuce is at-least-once by default: with auto-reconnect on, a command it sent
 * but got no reply to (the connection dropped after Redis ran it) is sent again once it has reconnected, and the
 * script runs a second time. Under AT_LEAST that run admits the same token again and applies the same write again,
 * which changes nothing. Under STRICT it would find the fence at its own token and refuse the write Redis had applied,
 * so each STRICT write call draws a random write id, and the script, when it admits a write, also records the id in
 * the scope's last-write key ({@link #lastWriteKey}), which keeps the last 16; a run that finds the fence at its token
 * or past it (a newer holder wrote meanwhile) and its own id there is a repeat of the admitted write: answered
 * admitted, since it was applied, and nothing is applied again. This covers the driver's re-send
 * of the same command only: a call the caller makes again (after a timeout, say) is a new write with a new id, and
 * is refused when the first one landed; a caller retrying on its own should read back first
 * ({@link #accepted(String)} at its token, and the value it wrote, mean it landed). No key has a TTL.
 */
public final class RedisFence {
    /** The default prefix of fence keys. */
    public static final String KEY_PREFIX_DEFAULT = "fencer:fence:";
    /** The longest data key, hash field name or key prefix, in UTF-8 bytes. */
    public static final int KEY_BYTES_MAX = 1024;
    /** The longest value, in UTF-8 bytes. */
    public static final int VALUE_BYTES_MAX = 1024 * 1024;
    /** The most fields one {@link #hset} may write. */
    public static final int HASH_FIELDS_MAX = 1000;

    /**
     * What follows the fence key in the scope's last-write key: the control character U+001F, which
     * {@link LockNames#check} refuses in every lock and scope name, so that no scope's fence key is another scope's
     * last-write key.
     */
    static final String LAST_WRITE_SUFFIX = "\u001F" + "last-write";
    private static final int WRITE_ID_BYTES = 16;
    /**
     * The source of STRICT write ids. Two calls on a scope with the same id would be taken for one (the
     * second answered admitted and not applied: a lost write), so ids must not repeat across every thread and process
     * writing to the scope: 128 bits from a SecureRandom, seeded by the operating system's entropy. Not
     * ThreadLocalRandom: it keeps 64 bits of state per thread, seeded from the clock, so JVMs started alike can draw
     * alike. Its few microseconds are small beside the round trip to Redis, and only STRICT draws one.
     */
    private static final SecureRandom WRITE_IDS = new SecureRandom();
    private static final String SCRIPT_RESOURCE = "fenced-write.lua";
    private static final String SCRIPT = loadScript();
    /**
     * The fenced read: {admitted 0 or 1, the accepted token, the value or nil}, in one atomic script call. Tokens are
     * compared as decimal strings, by length then text, as the write script does: Lua's numbers are doubles, which
     * cannot tell apart two tokens that differ only above 2^53.
     */
    private static final String FENCED_READ = "local accepted = redis.call('GET', KEYS[1]) or '0'\n"
            + "if not (accepted == '0' or string.match(accepted, '^[1-9]%d*$')) then\n"
            + "  return redis.error_reply('ERR fencer: fence key ' .. KEYS[1] .. ' does not hold a token')\n"
            + "end\n"
            + "local presented = ARGV[1]\n"
            + "if #accepted > #presented or (#accepted == #presented and accepted > presented) then\n"
            + "  return {0, accepted}\n"
            + "end\n"
            + "return {1, accepted, redis.call('GET', KEYS[2])}\n";

    private final RedisCommands<String, String> commands;
    private final FencePolicy policy;
    private final String keyPrefix;
    private volatile String scriptSha;
    private final RefusalCounter refusals;

    /**
     * Creates a fence with policy {@link FencePolicy#AT_LEAST} and prefix {@value #KEY_PREFIX_DEFAULT}, loading
     * its script into Redis.
     */
    public RedisFence(StatefulRedisConnection<String, String> connection) {
        this(connection, FencePolicy.AT_LEAST, KEY_PREFIX_DEFAULT);
    }

    /**
     * Creates a fence, loading its script into Redis (so an unreachable Redis fails here, not at the first write).
     *
     * @param keyPrefix the prefix of fence keys, 1 to {@value #KEY_BYTES_MAX} bytes; data keys may not start
     *     with it
     * @throws IllegalArgumentException when the prefix is empty or too long
     */
    public RedisFence(StatefulRedisConnection<String, String> connection, FencePolicy policy, String keyPrefix) {
        this(connection, policy, keyPrefix, new RefusalCounter(null, "redis"));
    }

    /**
     * Creates a fence as {@link #RedisFence(StatefulRedisConnection, FencePolicy, String)} that counts its refusals
     * into {@code registry} as {@code fencer_adapter_refusals_total{adapter="redis", scope, reason}}
     * ({@code stale_token}, {@code mode_mismatch}), scope being the token's lock (the fence key's scope, not the data
     * key): the first 1,000 scopes refused keep a series each, later ones count as {@code scope="_other"}.
     */
    public RedisFence(StatefulRedisConnection<String, String> connection, FencePolicy policy, String keyPrefix,
            MeterRegistry registry) {
        this(connection, policy, keyPrefix, new RefusalCounter(Objects.requireNonNull(registry, "registry"), "redis"));
    }

    private RedisFence(StatefulRedisConnection<String, String> connection, FencePolicy policy, String keyPrefix,
            RefusalCounter refusals) {
        this.refusals = refusals;
        this.commands = Objects.requireNonNull(connection, "connection").sync();
        this.policy = Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        if (keyPrefix.isEmpty() || utf8Bytes(keyPrefix) > KEY_BYTES_MAX) {
            throw new IllegalArgumentException("key prefix must be 1 to " + KEY_BYTES_MAX + " bytes, got '"
                    + InvalidArgumentException.printable(keyPrefix) + "'");
        }
        this.keyPrefix = keyPrefix;
        this.scriptSha = commands.scriptLoad(SCRIPT);
    }

    public FencePolicy policy() {
        return policy;
    }

    public String keyPrefix() {
        return keyPrefix;
    }

    /** Returns the key of the fence of {@code scope}: {@code keyPrefix + scope}. */
    public String fenceKey(String scope) {
        return keyPrefix + LockNames.check("scope", scope);
    }

    /**
     * Returns the key in which a STRICT fence records the write ids of the last 16 writes it admitted on
     * {@code scope}, newest first, separated by spaces:
     * the fence key, the character U+001F (the unit separator, a control character) and {@code last-write}
     * ({@code fencer:fence:orders\x1flast-write} in redis-cli). No scope may hold a control character, so this is no
     * scope's fence key; it starts with the prefix, so no data key may replace it. Absent until a STRICT write is
     * admitted on the scope; AT_LEAST never reads or writes it.
     */
    public String lastWriteKey(String scope) {
        return fenceKey(scope) + LAST_WRITE_SUFFIX;
    }

    /**
     * Sets string key {@code key} to {@code value} when the fence of {@code token.lock()} admits {@code token},
     * advancing the fence to it in the same step.
     *
     * @throws ModeMismatchException when {@code token} is a shared-mode grant, which may read ({@link #get}) but
     *     not write; nothing was sent to Redis
     * @throws StaleTokenException when the fence has accepted a newer token (AT_LEAST) or the same or newer
     *     (STRICT); nothing was written. Not for Lettuce's re-send of this same call after its reply was lost
     *     (at-least-once, on reconnecting): under STRICT the script knows it by the call's write id among the
     *     scope's last 16, even past a newer token's write, and the call returns normally with nothing applied
     *     twice. A call the caller makes again is a new write, refused under
     *     STRICT when the first one landed: to learn whether a call whose outcome is unknown landed, read back
     *     ({@link #accepted(String)} at its token, and the value)
     * @throws InvalidArgumentException when the key or value is empty, too long, or the key is a fence key
     */
    public void set(FencingToken token, String key, String value) {
        checkValue("value", value);
        write(token, key, null, "set", List.of(value));
    }

    /**
     * Sets the given fields of hash key {@code key} (other fields stay) when the fence admits {@code token}, as
     * {@link #set}.
     *
     * @throws StaleTokenException as {@link #set}: nothing was written; under STRICT not for Lettuce's re-send of
     *     this same call after a lost reply
     * @throws InvalidArgumentException when {@code fields} is empty or has more than {@value #HASH_FIELDS_MAX}
     *     entries, or a field name or value is out of bounds
     */
    public void hset(FencingToken token, String key, Map<String, String> fields) {
        Objects.requireNonNull(fields, "fields");
        if (fields.isEmpty() || fields.size() > HASH_FIELDS_MAX) {
            throw new InvalidArgumentException("fields", Integer.toString(fields.size()),
                    "hash fields must number 1 to " + HASH_FIELDS_MAX + ", got " + fields.size());
        }
        List<String> arguments = new ArrayList<>(fields.size() * 2);
        for (Map.Entry<String, String> field : fields.entrySet()) {
            checkBounded("field", field.getKey(), KEY_BYTES_MAX);
            checkValue("value", field.getValue());
            arguments.add(field.getKey());
            arguments.add(field.getValue());
        }
        write(token, key, null, "hset", arguments);
    }

    /**
     * Deletes key {@code key} (of any type) when the fence admits {@code token}, as {@link #set}.
     *
     * @throws StaleTokenException as {@link #set}: nothing was deleted; under STRICT not for Lettuce's re-send of
     *     this same call after a lost reply
     */
    public void del(FencingToken token, String key) {
        write(token, key, null, "del", List.of());
    }

    /**
     * Returns the scope's accepted token value, or {@link FencingToken#NONE} when it has none.
     *
     * @throws RedisException naming the fence key when it holds no token, as the fenced read and write do
     */
    public long accepted(String scope) {
        String fenceKey = fenceKey(scope);
        String accepted = commands.get(fenceKey);
        return accepted == null ? FencingToken.NONE : acceptedValue(fenceKey, accepted);
    }

    /**
     * As {@link #set}, also appending each admitted token to list {@code logKey} inside the same script call: the
     * test's witness of the order in which Redis admitted tokens.
     */
    void setLogged(FencingToken token, String key, String value, String logKey) {
        checkValue("value", value);
        checkKey(Objects.requireNonNull(logKey, "logKey"));
        write(token, key, logKey, "set", List.of(value));
    }

    /**
     * Reads string key {@code key} fenced by {@code token}: the fence of {@code token.lock()} is compared and the
     * key read in one script call, and the read is refused when the fence has accepted a higher token. A token of
     * either mode may read; a shared-mode token (a reader of a read-write lock) is compared as any token, so a
     * stale reader is refused once a later exclusive grant has written. Reads never move the fence.
     *
     * @return the key's value, or null when it has none
     * @throws StaleTokenException when the fence has accepted a higher token (under either policy)
     */
    public String get(FencingToken token, String key) {
        Objects.requireNonNull(token, "token");
        checkKey(key);
        String scope = token.lock();
        List<Object> reply = commands.eval(FENCED_READ, ScriptOutputType.MULTI,
                new String[] {fenceKey(scope), key}, Long.toString(token.value()));
        if (reply.size() < 2 || !(reply.get(0) instanceof Long admitted) || !(reply.get(1) instanceof String)) {
            throw new IllegalStateException("fenced read script of scope '" + scope + "' answered " + reply);
        }
        if (admitted == 0) {
            throw refusals.refused(scope, new StaleTokenException(scope, token.value(),
                    acceptedValue(fenceKey(scope), (String) reply.get(1)), policy));
        }
        return reply.size() > 2 ? (String) reply.get(2) : null;
    }

    private void write(FencingToken token, String key, String logKey, String operation, List<String> arguments) {
        Objects.requireNonNull(token, "token");
        checkKey(key);
        String scope = token.lock();
        if (token.mode() != LockMode.EXCLUSIVE) { // readers overlap: none of them may write
            throw refusals.refused(scope, new ModeMismatchException(scope, token.value(), token.mode()));
        }
        String fenceKey = fenceKey(scope);
        String lastWriteKey = fenceKey + LAST_WRITE_SUFFIX; // sent under AT_LEAST too, for one layout; never touched
        String[] keys = logKey == null
                ? new String[] {fenceKey, key, lastWriteKey}
                : new String[] {fenceKey, key, lastWriteKey, logKey};
        boolean strict = policy == FencePolicy.STRICT;
        String[] values = new String[4 + arguments.size()];
        values[0] = Long.toString(token.value());
        values[1] = strict ? "1" : "0";
        // One id per call, the same in the NOSCRIPT retry below and in Lettuce's re-send of the command. STRICT only:
        // AT_LEAST admits a repeat anyway, so its writes draw no id and keep none in Redis, and cost what they did.
        values[2] = strict ? newWriteId() : "";
        values[3] = operation;
        for (int i = 0; i < arguments.size(); i++) {
            values[4 + i] = arguments.get(i);
        }
        List<Object> reply = evaluate(keys, values); // admitted: 1 applied, 2 a repeat of this call, applied before
        if (reply.size() != 2 || !(reply.get(0) instanceof Long admitted) || !(reply.get(1) instanceof String)) {
            throw new IllegalStateException("fenced write script of scope '" + scope + "' answered " + reply);
        }
        if (admitted == 0) {
            throw refusals.refused(scope, new StaleTokenException(scope, token.value(),
                    acceptedValue(fenceKey, (String) reply.get(1)), policy));
        }
    }

    /** Returns a new STRICT write id: {@value #WRITE_ID_BYTES} bytes from {@link #WRITE_IDS}, in hex. */
    private static String newWriteId() {
        byte[] id = new byte[WRITE_ID_BYTES];
        WRITE_IDS.nextBytes(id);
        return HexFormat.of().formatHex(id);
    }

    /** Calls the script by SHA; when Redis answers NOSCRIPT, loads it again and retries once. */
    private List<Object> evaluate(String[] keys, String[] values) {
        try {
            return commands.evalsha(scriptSha, ScriptOutputType.MULTI, keys, values);
        } catch (RedisNoScriptException forgotten) {
            // Redis lost its script cache (SCRIPT FLUSH, restart, failover to a replica that never loaded it).
            scriptSha = commands.scriptLoad(SCRIPT);
            return commands.evalsha(scriptSha, ScriptOutputType.MULTI, keys, values);
        }
    }

    /**
     * Reads a fence key's text as the scripts do, "0" or a decimal without sign or leading zero, and fails as they
     * do, naming the key, on anything else; a number above every token (which the scripts, comparing text, let
     * refuse every writer) fails too rather than escaping as a bare NumberFormatException.
     */
    private static long acceptedValue(String fenceKey, String text) {
        if (text.equals("0")) {
            return FencingToken.NONE;
        }
        if (text.matches("[1-9][0-9]{0,18}")) {
            try {
                long value = Long.parseLong(text);
                if (value <= FencingToken.VALUE_MAX) {
                    return value;
                }
            } catch (NumberFormatException aboveLongRange) {
                // falls through to the error below
            }
        }
        throw new RedisException("fencer: fence key " + fenceKey + " does not hold a token: '"
                + InvalidArgumentException.printable(text) + "'");
    }

    private void checkKey(String key) {
        checkBounded("key", key, KEY_BYTES_MAX);
        if (key.startsWith(keyPrefix)) {
            throw new InvalidArgumentException("key", key, "key '" + InvalidArgumentException.printable(key)
                    + "' starts with the fence key prefix '" + keyPrefix + "': a write may not replace a fence");
        }
    }

    private static void checkValue(String field, String value) {
        Objects.requireNonNull(value, field);
        if (value.length() > VALUE_BYTES_MAX || utf8Bytes(value) > VALUE_BYTES_MAX) {
            throw new InvalidArgumentException(field, value, field + " is " + utf8Bytes(value)
                    + " bytes of UTF-8, more than the " + VALUE_BYTES_MAX + " allowed");
        }
    }

    private static void checkBounded(String field, String text, int bytesMax) {
        Objects.requireNonNull(text, field);
        if (text.isEmpty()) {
            throw new InvalidArgumentException(field, "", field + " must not be empty");
        }
        if (text.length() > bytesMax || utf8Bytes(text) > bytesMax) {
            throw new InvalidArgumentException(field, text, field + " is " + utf8Bytes(text)
                    + " bytes of UTF-8, more than the " + bytesMax + " allowed: '"
                    + InvalidArgumentException.printable(text) + "'");
        }
    }

    /** Counts the UTF-8 bytes of {@code text} without encoding it (a lone surrogate counts as one '?'). */
    private static long utf8Bytes(String text) {
        long bytes = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                bytes += 1;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    private static String loadScript() {
        try (InputStream in = RedisFence.class.getResourceAsStream(SCRIPT_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + SCRIPT_RESOURCE + " missing from the fencer-redis jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + SCRIPT_RESOURCE, e);
        }
    }
}

package io.fencer.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.fencer.testing.AnswerLosingProxy;
import io.fencer.testing.FreePorts;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.embedded.RedisServer;

/** Tests of {@link RedisFence} against a real redis-server (embedded-redis's 6.2 binary) on a free port. */
class RedisFenceTest {
    private static final int THREADS = 32;
    private static final int WRITES_PER_THREAD = 40;
    private static final int CONTROL_ROUNDS_MAX = 50;
    /** The key in which a STRICT fence records the id of scope "orders"'s last admitted write. */
    private static final String ORDERS_LAST_WRITE_KEY = "fencer:fence:orders" + "\u001F" + "last-write";

    private static int port;
    private static RedisServer server;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> connection;
    private static RedisCommands<String, String> redis;

    @BeforeAll
    static void startRedis() throws IOException {
        port = FreePorts.one();
        server = RedisServer.newRedisServer().port(port).bind("127.0.0.1").setting("save \"\"")
                .setting("appendonly no").build();
        server.start();
        client = RedisClient.create(RedisURI.create("127.0.0.1", port));
        connection = client.connect();
        redis = connection.sync();
    }

    @AfterAll
    static void stopRedis() throws IOException {
        if (connection != null) {
            connection.close();
        }
        if (client != null) {
            client.shutdown();
        }
        if (server != null) {
            server.stop();
        }
    }

    @BeforeEach
    void flush() {
        redis.flushall();
    }

    @Test
    void set_sharedModeToken_isModeMismatchAndGetAcceptsItUntilAHigherTokenWrote() {
        RedisFence fence = new RedisFence(connection);
        FencingToken reader = new FencingToken("orders", 3, LockMode.SHARED);
        fence.set(new FencingToken("orders", 2), "orders:42", "by t2");

        assertThatThrownBy(() -> fence.set(reader, "orders:42", "by reader"))
                .isInstanceOfSatisfying(ModeMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.presented()).isEqualTo(3);
                });
        assertThatThrownBy(() -> fence.del(reader, "orders:42")).isInstanceOf(ModeMismatchException.class);
        assertThat(fence.accepted("orders")).isEqualTo(2);
        assertThat(fence.get(reader, "orders:42")).isEqualTo("by t2");
        assertThat(fence.get(reader, "orders:missing")).isNull();

        fence.set(new FencingToken("orders", 4), "orders:42", "by t4");
        assertThatThrownBy(() -> fence.get(reader, "orders:42"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(4));
        assertThat(redis.get("orders:42")).isEqualTo("by t4");
    }

    @Test
    void set_whenOlderTokenAfterNewer_refusesAndKeepsNewerValue() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RedisFence fence = new RedisFence(connection, FencePolicy.AT_LEAST, RedisFence.KEY_PREFIX_DEFAULT, registry);
        fence.set(new FencingToken("orders", 2), "orders:42", "by t2");

        assertThatThrownBy(() -> fence.set(new FencingToken("orders", 1), "orders:42", "by t1"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.presented()).isEqualTo(1);
                    assertThat(e.accepted()).isEqualTo(2);
                });
        assertThatThrownBy(() -> fence.del(new FencingToken("orders", 1), "orders:42"))
                .isInstanceOf(StaleTokenException.class);
        assertThat(redis.get("orders:42")).isEqualTo("by t2");
        assertThat(fence.accepted("orders")).isEqualTo(2);
        assertThat(redis.get("fencer:fence:orders")).isEqualTo("2");
        assertThat(registry.get("fencer.adapter.refusals").tags("adapter", "redis", "scope", "orders", "reason",
                "stale_token").counter().count()).as("the stale set and del, counted").isEqualTo(2);
    }

    @Test
    void hset_whenOlderTokenAfterNewer_refusesAndKeepsNewerFields() {
        RedisFence fence = new RedisFence(connection);
        fence.hset(new FencingToken("orders", 2), "order:42", Map.of("state", "shipped", "by", "t2"));

        assertThatThrownBy(() -> fence.hset(new FencingToken("orders", 1), "order:42", Map.of("state", "lost")))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(2));
        assertThat(redis.hgetall("order:42")).containsExactlyInAnyOrderEntriesOf(
                Map.of("state", "shipped", "by", "t2"));
    }

    @Test
    void del_whenOlderTokenAfterNewer_refusesAndKeyStays() {
        RedisFence fence = new RedisFence(connection);
        fence.set(new FencingToken("orders", 2), "orders:42", "by t2");

        assertThatThrownBy(() -> fence.del(new FencingToken("orders", 1), "orders:42"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(2));
        assertThat(redis.get("orders:42")).isEqualTo("by t2");

        fence.del(new FencingToken("orders", 3), "orders:42");
        assertThat(redis.exists("orders:42")).isZero();
        assertThat(fence.accepted("orders")).isEqualTo(3);
    }

    @Test
    void set_whenScopesDiffer_fencesEachScopeAlone() {
        RedisFence fence = new RedisFence(connection);
        fence.set(new FencingToken("a", 10), "key:a", "a10");

        fence.set(new FencingToken("b", 1), "key:b", "b1");

        assertThat(fence.accepted("a")).isEqualTo(10);
        assertThat(fence.accepted("b")).isEqualTo(1);
        assertThat(fence.accepted("never-written")).isEqualTo(FencingToken.NONE);
    }

    @Test
    void set_whenTokensDifferOnlyAboveDoublePrecision_comparesExactly() {
        RedisFence fence = new RedisFence(connection);
        long big = FencingToken.VALUE_MAX;
        fence.set(new FencingToken("big", big), "key", "newest");

        // big - 1 and big are the same double: a numeric comparison in Lua would admit it.
        assertThatThrownBy(() -> fence.set(new FencingToken("big", big - 1), "key", "stale"))
                .isInstanceOf(StaleTokenException.class);
        assertThat(fence.accepted("big")).isEqualTo(big);
        assertThat(redis.get("key")).isEqualTo("newest");
    }

    /** The fenced read compared tokens as Lua numbers (doubles), so it admitted a stale reader above 2^53. */
    @Test
    void get_whenTokensDifferOnlyAboveDoublePrecision_refusesTheLowerExactly() {
        RedisFence fence = new RedisFence(connection);
        long big = FencingToken.VALUE_MAX;
        fence.set(new FencingToken("big", big), "key", "newest");

        assertThatThrownBy(() -> fence.get(new FencingToken("big", big - 1), "key"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.presented()).isEqualTo(big - 1);
                    assertThat(e.accepted()).isEqualTo(big);
                });
        assertThat(fence.get(new FencingToken("big", big), "key")).isEqualTo("newest");
    }

    @Test
    void get_whenFenceKeyHoldsNoToken_failsNamingTheKey() {
        RedisFence fence = new RedisFence(connection);
        redis.set("fencer:fence:orders", "not a token");

        assertThatThrownBy(() -> fence.get(new FencingToken("orders", 1), "orders:42"))
                .hasMessageContaining("fencer:fence:orders").hasMessageContaining("does not hold a token");
    }

    /**
     * accepted() parsed the fence key with Long.parseLong, so a key holding no token failed with a bare
     * NumberFormatException not naming the key (or, for "-5", answered a negative token the scripts refuse).
     */
    @Test
    void accepted_whenFenceKeyHoldsNoToken_failsNamingTheKey() {
        RedisFence fence = new RedisFence(connection);
        for (String notAToken : List.of("not a token", "-5", "+5", "007", "99999999999999999999")) {
            redis.set("fencer:fence:orders", notAToken);

            assertThatThrownBy(() -> fence.accepted("orders")).as(notAToken)
                    .isInstanceOf(RedisException.class)
                    .hasMessageContaining("fencer:fence:orders").hasMessageContaining("does not hold a token");
        }
    }

    /** A fence key above every token made the write's refusal fail parsing it, with a bare NumberFormatException. */
    @Test
    void set_whenFenceKeyHoldsANumberAboveEveryToken_failsNamingTheKey() {
        RedisFence fence = new RedisFence(connection);
        redis.set("fencer:fence:orders", "99999999999999999999");

        assertThatThrownBy(() -> fence.set(new FencingToken("orders", 1), "orders:42", "v"))
                .isInstanceOf(RedisException.class)
                .hasMessageContaining("fencer:fence:orders").hasMessageContaining("does not hold a token");
        assertThat(redis.get("orders:42")).isNull();
    }

    @Test
    void set_whenStrictAndEqualToken_refuses() {
        RedisFence fence = new RedisFence(connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
        fence.set(new FencingToken("orders", 5), "orders:42", "first");

        assertThatThrownBy(() -> fence.set(new FencingToken("orders", 5), "orders:42", "again"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(5));
        assertThat(redis.get("orders:42")).isEqualTo("first");
        fence.set(new FencingToken("orders", 6), "orders:42", "next");
        assertThat(redis.get("orders:42")).isEqualTo("next");
    }

    @Test
    void set_whenAtLeastAndEqualToken_admits() {
        RedisFence fence = new RedisFence(connection);
        fence.set(new FencingToken("orders", 5), "orders:42", "first");

        fence.set(new FencingToken("orders", 5), "orders:42", "again");

        assertThat(redis.get("orders:42")).isEqualTo("again");
        assertThat(fence.accepted("orders")).isEqualTo(5);
    }

    @Test
    void set_whenScriptFlushedBetweenWrites_reloadsAndWrites() {
        RedisFence fence = new RedisFence(connection);
        fence.set(new FencingToken("orders", 1), "orders:42", "before flush");
        String sha = redis.digest(scriptText());
        redis.scriptFlush();
        assertThat(redis.scriptExists(sha)).containsExactly(false);

        fence.set(new FencingToken("orders", 2), "orders:42", "after flush");

        assertThat(redis.get("orders:42")).isEqualTo("after flush");
        assertThat(fence.accepted("orders")).isEqualTo(2);
        assertThat(redis.scriptExists(sha)).containsExactly(true);
    }

    @Test
    void set_whenWriteFailsInsideScript_fenceDoesNotMove() {
        RedisFence fence = new RedisFence(connection);
        fence.set(new FencingToken("orders", 1), "orders:42", "string value");

        // HSET on a string key fails with WRONGTYPE: the fence must stay at 1, or token 1 would be locked out
        // by a write that never happened.
        assertThatThrownBy(() -> fence.hset(new FencingToken("orders", 7), "orders:42", Map.of("f", "v")))
                .hasMessageContaining("WRONGTYPE");
        assertThat(fence.accepted("orders")).isEqualTo(1);
    }

    @Test
    void writes_whenArgumentsOutOfBounds_throwNamingTheValue() {
        RedisFence fence = new RedisFence(connection);
        FencingToken token = new FencingToken("orders", 1);

        assertThatThrownBy(() -> fence.set(token, "k".repeat(RedisFence.KEY_BYTES_MAX + 1), "v"))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.field()).isEqualTo("key"))
                .hasMessageContaining("1025 bytes").hasMessageContaining("1024 allowed");
        assertThatThrownBy(() -> fence.set(token, "k", "v".repeat(RedisFence.VALUE_BYTES_MAX + 1)))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.field()).isEqualTo("value"))
                .hasMessageContaining("1048577 bytes");
        Map<String, String> tooMany = new HashMap<>();
        for (int i = 0; i <= RedisFence.HASH_FIELDS_MAX; i++) {
            tooMany.put("f" + i, "v");
        }
        assertThatThrownBy(() -> fence.hset(token, "k", tooMany))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.value()).isEqualTo("1001"));
        assertThatThrownBy(() -> fence.set(token, "fencer:fence:orders", "0"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("fence key prefix");
        assertThatThrownBy(() -> fence.accepted("bad\nscope"))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.field()).isEqualTo("scope"));
        assertThat(redis.dbsize()).isZero();
    }

    @Test
    void hset_whenThousandFields_writesAll() {
        RedisFence fence = new RedisFence(connection);
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i < RedisFence.HASH_FIELDS_MAX; i++) {
            fields.put("f" + i, "v" + i);
        }

        fence.hset(new FencingToken("orders", 1), "big", fields);

        assertThat(redis.hlen("big")).isEqualTo(RedisFence.HASH_FIELDS_MAX);
    }

    @Test
    void setLogged_when32ThreadsWriteInterleavedTokens_logNeverDecreases() throws Exception {
        RedisFence fence = new RedisFence(connection);
        AtomicLong issued = new AtomicLong();
        AtomicLong refused = new AtomicLong();

        runThreads(() -> {
            long token = interleavedToken(issued);
            try {
                fence.setLogged(new FencingToken("race", token), "race:value", Long.toString(token), "race:log");
            } catch (StaleTokenException e) {
                refused.incrementAndGet();
            }
        });

        List<Long> log = readLog();
        assertThat(log).hasSize(THREADS * WRITES_PER_THREAD - (int) refused.get());
        assertThat(refused.get()).as("stale tokens were presented and refused").isPositive();
        assertThat(firstDecrease(log)).as("index of the first decrease in the admitted log").isEqualTo(-1);
        long newest = log.get(log.size() - 1);
        assertThat(fence.accepted("race")).isEqualTo(newest);
        assertThat(redis.get("race:value")).isEqualTo(Long.toString(newest));
    }

    @Test
    void control_whenCheckedInJavaThenSetSeparately_logDecreasesWithinBoundedRounds() throws Exception {
        AtomicLong issued = new AtomicLong();
        int rounds = 0;
        int decrease = -1;
        while (decrease < 0 && rounds < CONTROL_ROUNDS_MAX) {
            rounds++;
            runThreads(() -> {
                long token = interleavedToken(issued);
                String accepted = redis.get("control:fence");
                if (accepted == null || token >= Long.parseLong(accepted)) {
                    redis.set("control:fence", Long.toString(token));
                    redis.rpush("race:log", Long.toString(token));
                }
            });
            decrease = firstDecrease(readLog());
        }
        assertThat(decrease).as("check-then-set outside Redis lets a stale token land after a newer one, "
                + "within " + CONTROL_ROUNDS_MAX + " rounds").isPositive();
    }

    /**
     * Regression: under STRICT a write whose reply was lost, which Lettuce (at-least-once by default) sent again once
     * it had reconnected, ran the script a second time; that run found the fence at the write's own token and refused
     * it, so set threw StaleTokenException for a write Redis had applied.
     */
    @Test
    @Timeout(30)
    void set_strictReplyLostAndLettuceResendsAfterReconnect_succeeds() {
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
            fence.set(new FencingToken("orders", 4), "orders:42", "by t4");
            redis.configResetstat();
            lossy.proxy.arm();

            fence.set(new FencingToken("orders", 5), "orders:42", "by t5");

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(lossy.proxy.connections()).as("connections: the first and Lettuce's reconnect").isEqualTo(2);
            assertThat(evalshaCalls()).as("script runs: the write and Lettuce's re-send of it").isEqualTo(2);
            assertThat(redis.get("orders:42")).isEqualTo("by t5");
            assertThat(fence.accepted("orders")).isEqualTo(5);
            assertThat(redis.get("fencer:fence:orders")).as("the fence key, a plain decimal").isEqualTo("5");
        }
    }

    /** The re-sent write is answered admitted and applies nothing again: the token is logged once. */
    @Test
    @Timeout(30)
    void setLogged_strictReplyLostAndLettuceResends_appliesTheWriteOnce() {
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
            redis.configResetstat();
            lossy.proxy.arm();

            fence.setLogged(new FencingToken("orders", 5), "orders:42", "by t5", "race:log");

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(evalshaCalls()).as("script runs: the write and Lettuce's re-send of it").isEqualTo(2);
            assertThat(readLog()).as("tokens admitted and applied").containsExactly(5L);
            assertThat(redis.get("orders:42")).isEqualTo("by t5");
        }
    }

    @Test
    @Timeout(30)
    void del_strictReplyLostAndLettuceResends_succeeds() {
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
            fence.set(new FencingToken("orders", 4), "orders:42", "by t4");
            redis.configResetstat();
            lossy.proxy.arm();

            fence.del(new FencingToken("orders", 5), "orders:42");

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(evalshaCalls()).as("script runs: the delete and Lettuce's re-send of it").isEqualTo(2);
            assertThat(redis.exists("orders:42")).isZero();
            assertThat(fence.accepted("orders")).isEqualTo(5);
        }
    }

    /**
     * Regression: a STRICT write whose reply was lost while another holder wrote a newer token (the lease ran out
     * just then) was applied, yet Lettuce's re-send found the fence past its token and set threw StaleTokenException,
     * when the script knew only the last write's id; the caller then believed a key written that was not.
     */
    @Test
    @Timeout(30)
    void set_strictReplyLostAndANewerTokenWritesBeforeTheResend_succeedsAndTheNewerWriteStands() {
        RedisFence direct = new RedisFence(connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
            fence.set(new FencingToken("orders", 4), "orders:42", "by t4");
            redis.configResetstat();
            lossy.proxy.armWith(() -> direct.set(new FencingToken("orders", 6), "orders:43", "by t6"));

            fence.set(new FencingToken("orders", 5), "orders:42", "by t5");

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(evalshaCalls()).as("script runs: the write, the newer holder's, the re-send").isEqualTo(3);
            assertThat(redis.get("orders:42")).isEqualTo("by t5");
            assertThat(redis.get("orders:43")).isEqualTo("by t6");
            assertThat(fence.accepted("orders")).isEqualTo(6);
            assertThat(redis.get(ORDERS_LAST_WRITE_KEY)).as("the recent write ids, newest first")
                    .matches("[0-9a-f]{32} [0-9a-f]{32} [0-9a-f]{32}");
        }
        // Control: a new call with the superseded token is a new write, and refused.
        assertThatThrownBy(() -> direct.set(new FencingToken("orders", 5), "orders:42", "again"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(6));
    }

    /** The bound: once 16 newer writes have pushed a write's id out, its re-send is refused as before. */
    @Test
    @Timeout(30)
    void set_strictReplyLostAndSixteenNewerWritesBeforeTheResend_isRefusedThoughApplied() {
        RedisFence direct = new RedisFence(connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
            lossy.proxy.armWith(() -> {
                for (int token = 6; token < 6 + 16; token++) {
                    direct.set(new FencingToken("orders", token), "orders:43", "by t" + token);
                }
            });

            assertThatThrownBy(() -> fence.set(new FencingToken("orders", 5), "orders:42", "by t5"))
                    .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(21));

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(redis.get("orders:42")).as("its first run, applied").isEqualTo("by t5");
            assertThat(redis.get(ORDERS_LAST_WRITE_KEY).split(" ")).as("the ids kept").hasSize(16);
        }
    }

    /** Control: under AT_LEAST the re-sent write is admitted again (the fence admits its own token) and re-applied. */
    @Test
    @Timeout(30)
    void set_atLeastReplyLostAndLettuceResends_succeeds() {
        try (LossyConnection lossy = new LossyConnection()) {
            RedisFence fence = new RedisFence(lossy.connection);
            redis.configResetstat();
            lossy.proxy.arm();

            fence.setLogged(new FencingToken("orders", 5), "orders:42", "by t5", "race:log");

            assertThat(lossy.proxy.answersLost()).as("replies cut by the proxy").isEqualTo(1);
            assertThat(evalshaCalls()).as("script runs: the write and Lettuce's re-send of it").isEqualTo(2);
            assertThat(readLog()).as("tokens admitted and applied: twice").containsExactly(5L, 5L);
            assertThat(redis.get("orders:42")).isEqualTo("by t5");
            assertThat(redis.exists(ORDERS_LAST_WRITE_KEY)).as("no write id kept under AT_LEAST").isZero();
        }
    }

    /** Control: a second call with the admitted token is a new write (a new write id), refused under STRICT. */
    @Test
    void writes_strictNewCallWithTheAdmittedToken_areRefused() {
        RedisFence fence = new RedisFence(connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);
        FencingToken token = new FencingToken("orders", 5);
        fence.set(token, "orders:42", "first");
        String lastWrite = redis.get(ORDERS_LAST_WRITE_KEY);
        assertThat(lastWrite).as("the admitted write's id").matches("[0-9a-f]{32}");

        assertThatThrownBy(() -> fence.set(token, "orders:42", "again"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(5));
        assertThatThrownBy(() -> fence.hset(token, "orders:43", Map.of("f", "v")))
                .isInstanceOf(StaleTokenException.class);
        assertThatThrownBy(() -> fence.del(token, "orders:42")).isInstanceOf(StaleTokenException.class);

        assertThat(redis.get("orders:42")).isEqualTo("first");
        assertThat(redis.exists("orders:43")).isZero();
        assertThat(redis.get("fencer:fence:orders")).isEqualTo("5");
        assertThat(redis.get(ORDERS_LAST_WRITE_KEY)).as("refusals record nothing").isEqualTo(lastWrite);
        assertThat(fence.get(token, "orders:42")).isEqualTo("first");
        assertThat(fence.lastWriteKey("orders")).isEqualTo(ORDERS_LAST_WRITE_KEY);
        assertThatThrownBy(() -> fence.set(new FencingToken("orders", 6), ORDERS_LAST_WRITE_KEY, "forged"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("fence key prefix");
    }

    /** Control: a fence key left by the earlier script (the token alone, no write id kept) fences as before. */
    @Test
    void set_strictFenceKeyWithoutWriteId_admitsAndRefusesAsBefore() {
        redis.set("fencer:fence:orders", "5");
        RedisFence fence = new RedisFence(connection, FencePolicy.STRICT, RedisFence.KEY_PREFIX_DEFAULT);

        assertThatThrownBy(() -> fence.set(new FencingToken("orders", 5), "orders:42", "again"))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(5));
        assertThatThrownBy(() -> fence.del(new FencingToken("orders", 4), "orders:42"))
                .isInstanceOf(StaleTokenException.class);
        assertThat(redis.exists("orders:42", ORDERS_LAST_WRITE_KEY)).isZero();

        fence.set(new FencingToken("orders", 6), "orders:42", "by t6");
        assertThat(redis.get("orders:42")).isEqualTo("by t6");
        assertThat(fence.accepted("orders")).isEqualTo(6);
        new RedisFence(connection).set(new FencingToken("orders", 6), "orders:42", "by t6, AT_LEAST");
        assertThat(redis.get("orders:42")).isEqualTo("by t6, AT_LEAST");
    }

    /**
     * A connection of its own to the test's Redis through a {@link AnswerLosingProxy}: Lettuce's defaults
     * (auto-reconnect on, so at-least-once: a command sent whose reply never came is sent again after the reconnect),
     * and commands that time out after a few seconds, so that a proxy that fails to forward fails the test rather than
     * hangs it.
     */
    private static final class LossyConnection implements AutoCloseable {
        final AnswerLosingProxy proxy = AnswerLosingProxy.start(port);
        final RedisClient client;
        final StatefulRedisConnection<String, String> connection;

        LossyConnection() {
            RedisURI uri = RedisURI.create("127.0.0.1", proxy.port());
            uri.setTimeout(Duration.ofSeconds(3));
            client = RedisClient.create(uri);
            client.setOptions(ClientOptions.builder().autoReconnect(true).build()); // the default, said out loud
            try {
                connection = client.connect();
            } catch (RuntimeException e) {
                client.shutdown();
                proxy.close();
                throw e;
            }
        }

        @Override
        public void close() {
            connection.close();
            client.shutdown();
            proxy.close();
        }
    }

    /** Returns how many EVALSHA commands Redis has run since its statistics were last reset. */
    private static long evalshaCalls() {
        for (String line : redis.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:calls=")) {
                return Long.parseLong(line.substring("cmdstat_evalsha:calls=".length(), line.indexOf(',')));
            }
        }
        return 0;
    }

    /** Returns the newest token issued minus a random 0..31 (at least 1): interleaved, partly stale tokens. */
    private static long interleavedToken(AtomicLong issued) {
        long newest = issued.incrementAndGet();
        return Math.max(1, newest - ThreadLocalRandom.current().nextInt(32));
    }

    private static void runThreads(Runnable write) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Callable<Void>> tasks = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                tasks.add(() -> {
                    for (int i = 0; i < WRITES_PER_THREAD; i++) {
                        write.run();
                    }
                    return null;
                });
            }
            for (Future<Void> done : pool.invokeAll(tasks, 2, TimeUnit.MINUTES)) {
                done.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static List<Long> readLog() {
        return redis.lrange("race:log", 0, -1).stream().map(Long::parseLong).toList();
    }

    /** Returns the index of the first entry smaller than its predecessor, or -1 when the log never decreases. */
    private static int firstDecrease(List<Long> log) {
        for (int i = 1; i < log.size(); i++) {
            if (log.get(i) < log.get(i - 1)) {
                return i;
            }
        }
        return -1;
    }

    private static String scriptText() {
        try (var in = RedisFence.class.getResourceAsStream("fenced-write.lua")) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}

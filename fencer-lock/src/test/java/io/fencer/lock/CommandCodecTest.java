package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.internal.LockName;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.TokenExhaustedException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CommandCodecTest {
    private static final FencingToken TOKEN = new FencingToken("orders/é", 42);
    private static final String IDENTITY = "client-ü";
    private static final SecretHash HASH = SecretHash.of("the codec tests' secret");

    private static final List<Command> COMMANDS = List.of(
            new Command.OpenSession("", 1_000, IDENTITY, HASH),
            new Command.OpenSession("open-ü", Long.MAX_VALUE, IDENTITY, HASH),
            new Command.CloseSession(7, HASH),
            new Command.ExpireSession(8, true),
            new Command.ExpireSession(Long.MIN_VALUE, false),
            new Command.Acquire(9, HASH, "orders/é", "req-1", true),
            new Command.Acquire(-1, HASH, "x", "r", false),
            new Command.CancelWait(10, HASH, "orders", "req-2"),
            new Command.CancelWait(10, HASH, "orders", null),
            new Command.Release(11, HASH, "orders", 42),
            new Command.Release(-2, SecretHash.of("another"), "orders", -5),
            new Command.EndLockDelay("orders/😀"));

    private static final List<Result> PLAIN_RESULTS = List.of(
            new Result.SessionOpened(1, 5_000),
            new Result.SessionEnded(2, List.of()),
            new Result.SessionEnded(3, List.of(TOKEN, new FencingToken("b", FencingToken.VALUE_MAX))),
            new Result.Granted(TOKEN),
            new Result.Queued("orders", 3),
            new Result.Busy("orders", TOKEN),
            new Result.Busy("orders", null),
            new Result.WaitCancelled(true),
            new Result.WaitCancelled(false),
            new Result.Released(TOKEN, new FencingToken("orders/é", 43)),
            new Result.Released(TOKEN, null),
            new Result.DelayEnded("orders", true, TOKEN),
            new Result.DelayEnded("orders", false, null));

    @Test
    void decodeCommands_ofEncodedCommands_returnsEqualCommands() {
        byte[] bytes = CommandCodec.encodeCommands(COMMANDS);

        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(COMMANDS);
        assertThat(bytes[0]).isEqualTo((byte) CommandCodec.VERSION_FOUR);
    }

    @Test
    void encodeCommands_ofSessionCommands_holdsTheSecretHashAndIdentityNeverASecret() {
        String secret = "the secret itself, which only the leader ever sees";
        SecretHash hash = SecretHash.of(secret);
        List<Command> commands = List.of(new Command.OpenSession("open-1", 1_000, "alice", hash),
                new Command.Acquire(1, hash, "orders", "r", false), new Command.Release(1, hash, "orders", 1),
                new Command.CancelWait(1, hash, "orders", "r"), new Command.CloseSession(1, hash));

        byte[] bytes = CommandCodec.encodeCommands(commands);

        assertThat(indexOfOrMinus(bytes, secret.getBytes(StandardCharsets.UTF_8))).isEqualTo(-1);
        assertThat(indexOfOrMinus(bytes, hash.bytes())).isPositive();
        assertThat(indexOfOrMinus(bytes, "alice".getBytes(StandardCharsets.UTF_8))).isPositive();
        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(commands);
        assertThat(commands.get(0).toString()).doesNotContain(secret).contains("SecretHash[not shown]");
    }

    @Test
    void decodeCommands_ofVersionOneCloseSession_carriesNoSecretHashAndCannotBeWrittenAgain() {
        // The previous release's layout (version 1, before session secrets): CloseSession is its tag and session id.
        // VersionOneCompatibilityTest reads bytes the previous release wrote itself.
        byte[] versionOne = ByteBuffer.allocate(1 + 4 + 1 + 8).put((byte) 1).putInt(1).put((byte) 2).putLong(7)
                .array();

        List<Command> decoded = CommandCodec.decodeCommands(versionOne);

        assertThat(decoded).containsExactly(new Command.CloseSession(7, SecretHash.NOT_CARRIED));
        assertThatThrownBy(() -> CommandCodec.encodeCommands(decoded)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("version-1");
    }

    @Test
    void decodeCommands_ofEmptyBatch_returnsEmptyList() {
        assertThat(CommandCodec.decodeCommands(CommandCodec.encodeCommands(List.of()))).isEmpty();
    }

    @Test
    void decodeResults_ofEncodedResults_returnsEqualResults() {
        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(PLAIN_RESULTS))).isEqualTo(PLAIN_RESULTS);
    }

    @Test
    void decodeResults_ofRejected_keepsExceptionTypeAndFields() {
        List<Result> rejected = List.of(
                new Result.Rejected(new InvalidArgumentException("ttl_millis", "5", "session ttl 5 ms is outside")),
                new Result.Rejected(new InvalidArgumentException("lock", "x".repeat(400), "too long")),
                new Result.Rejected(new LimitExceededException("waitersPerLockMax", 10, "10 sessions wait")),
                new Result.Rejected(new SessionExpiredException(12)),
                new Result.Rejected(new SessionExpiredException(13, "custom message")),
                new Result.Rejected(new NotHolderException("orders", 3, 4)),
                new Result.Rejected(new NotHolderException("orders", 3, FencingToken.NONE)),
                new Result.Rejected(new NotHolderException("orders", 3, 4, 14)),
                new Result.Rejected(new SessionUnauthenticatedException(15)),
                new Result.Rejected(new TokenExhaustedException("orders", FencingToken.VALUE_MAX)));

        List<Result> decoded = CommandCodec.decodeResults(CommandCodec.encodeResults(rejected));

        assertThat(decoded).hasSameSizeAs(rejected);
        for (int i = 0; i < rejected.size(); i++) {
            FencerException original = ((Result.Rejected) rejected.get(i)).error();
            FencerException copy = ((Result.Rejected) decoded.get(i)).error();
            assertThat(copy).isExactlyInstanceOf(original.getClass());
            assertThat(copy.getMessage()).isEqualTo(original.getMessage());
            assertThat(copy).usingRecursiveComparison()
                    .ignoringFields("stackTrace", "suppressedExceptions", "cause", "depth")
                    .isEqualTo(original);
        }
        InvalidArgumentException invalid = (InvalidArgumentException) ((Result.Rejected) decoded.get(0)).error();
        assertThat(invalid.field()).isEqualTo("ttl_millis");
        assertThat(invalid.value()).isEqualTo("5");
        LimitExceededException limit = (LimitExceededException) ((Result.Rejected) decoded.get(2)).error();
        assertThat(limit.limit()).isEqualTo("waitersPerLockMax");
        assertThat(limit.limitValue()).isEqualTo(10);
        NotHolderException notHolder = (NotHolderException) ((Result.Rejected) decoded.get(5)).error();
        assertThat(List.of(notHolder.lock(), notHolder.presented(), notHolder.current()))
                .containsExactly("orders", 3L, 4L);
        assertThat(((SessionExpiredException) ((Result.Rejected) decoded.get(3)).error()).sessionId()).isEqualTo(12);
        assertThat(((NotHolderException) ((Result.Rejected) decoded.get(7)).error()).sessionId()).isEqualTo(14);
        assertThat(((SessionUnauthenticatedException) ((Result.Rejected) decoded.get(8)).error()).sessionId())
                .isEqualTo(15);
        assertThat(((TokenExhaustedException) ((Result.Rejected) decoded.get(9)).error()).lock()).isEqualTo("orders");
    }

    @Test
    void encodeResults_ofErrorTheMachineNeverRaises_failsFast() {
        List<Result> results = List.of(
                new Result.Rejected(new StaleTokenException("s", 1, 2, FencePolicy.AT_LEAST)));

        assertThatThrownBy(() -> CommandCodec.encodeResults(results))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("StaleTokenException");
    }

    @ParameterizedTest
    @EnumSource(value = ErrorReason.class, names = {"INVALID_ARGUMENT", "LIMIT_EXCEEDED", "SESSION_EXPIRED",
            "SESSION_UNAUTHENTICATED", "NOT_HOLDER", "TOKEN_EXHAUSTED"})
    void decodeResults_ofEveryReasonTheMachineRejectsWith_keepsTypeAndEveryField(ErrorReason reason) {
        FencerException original = switch (reason) {
            case INVALID_ARGUMENT -> new InvalidArgumentException("field-1", "value-2", "message 3");
            case LIMIT_EXCEEDED -> new LimitExceededException("limit-4", 5, "message 6");
            case SESSION_EXPIRED -> new SessionExpiredException(7, "message 8");
            case SESSION_UNAUTHENTICATED -> new SessionUnauthenticatedException(27, "message 28");
            case NOT_HOLDER -> new NotHolderException("lock-9", 10, 11, 29);
            case TOKEN_EXHAUSTED -> new TokenExhaustedException("lock-12", 13);
            default -> throw new AssertionError("the lock state machine never rejects with " + reason);
        };

        List<Result> decoded = CommandCodec.decodeResults(CommandCodec.encodeResults(
                List.of(new Result.Rejected(original))));

        FencerException copy = ((Result.Rejected) decoded.get(0)).error();
        assertThat(copy).isExactlyInstanceOf(original.getClass()).hasMessage(original.getMessage());
        assertThat(ErrorFields.of(copy)).isEqualTo(ErrorFields.of(original));
        assertThat(copy).usingRecursiveComparison()
                .ignoringFields("stackTrace", "suppressedExceptions", "cause", "depth")
                .isEqualTo(original);
    }

    @ParameterizedTest
    @EnumSource(value = ErrorReason.class, mode = EnumSource.Mode.EXCLUDE, names = {"INVALID_ARGUMENT",
            "LIMIT_EXCEEDED", "SESSION_EXPIRED", "SESSION_UNAUTHENTICATED", "NOT_HOLDER", "TOKEN_EXHAUSTED"})
    void encodeResults_ofEveryReasonTheMachineNeverRejectsWith_failsFast(ErrorReason reason) {
        FencerException error = ErrorFields.builder(reason).message("m").value("orders").lock("payments")
                .presentedToken(3).currentToken(4).policy(FencePolicy.STRICT).why("w").build().toException();
        List<Result> results = List.of(new Result.Rejected(error));

        assertThatThrownBy(() -> CommandCodec.encodeResults(results))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(error.getClass().getName());
    }

    @Test
    void decodeResults_ofAReasonTheMachineNeverRejectsWith_isRejectedAsMalformed() {
        byte[] bytes = CommandCodec.encodeResults(List.of(new Result.Rejected(new NotHolderException("a", 1, 2))));
        byte[] name = "NOT_HOLDER".getBytes(StandardCharsets.US_ASCII);
        int at = indexOf(bytes, name);
        System.arraycopy("NOT_LEADER".getBytes(StandardCharsets.US_ASCII), 0, bytes, at, name.length);

        assertThatThrownBy(() -> CommandCodec.decodeResults(bytes))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed result batch")
                .hasMessageContaining("NOT_LEADER");
    }

    private static int indexOf(byte[] bytes, byte[] part) {
        int at = indexOfOrMinus(bytes, part);
        if (at < 0) {
            throw new AssertionError("not found");
        }
        return at;
    }

    private static int indexOfOrMinus(byte[] bytes, byte[] part) {
        for (int i = 0; i + part.length <= bytes.length; i++) {
            if (Arrays.equals(bytes, i, i + part.length, part, 0, part.length)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void encodeCommands_asciiAndNonAsciiStrings_encodeAsStrictUtf8AndRoundTrip() {
        // ASCII and surrogate-free strings take fast paths; the bytes must be exactly those of strict UTF-8.
        for (String lock : List.of("bench-7", "zámek", "ключ", "lock-😀", "~edge")) {
            Command.Release release = new Command.Release(5, HASH, lock, 3);
            byte[] bytes = CommandCodec.encodeCommands(List.of(release));
            byte[] name = lock.getBytes(StandardCharsets.UTF_8);
            ByteBuffer expected = ByteBuffer.allocate(1 + 4 + 1 + 8 + SecretHash.BYTES + 4 + name.length + 8)
                    .put((byte) CommandCodec.VERSION_FOUR).putInt(1).put((byte) 6).putLong(5).put(HASH.bytes())
                    .putInt(name.length).put(name).putLong(3);

            assertThat(bytes).as(lock).isEqualTo(expected.array());
            assertThat(CommandCodec.decodeCommands(bytes)).as(lock).containsExactly(release);
        }
    }

    @Test
    void encodeCommands_ofRequestIdWithUnpairedSurrogate_failsFast() {
        List<Command> commands = List.of(new Command.OpenSession("bad\uD800", 1_000, IDENTITY, HASH));

        assertThatThrownBy(() -> CommandCodec.encodeCommands(commands))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-8");
    }

    @Test
    void decode_ofEveryTruncation_isRejectedWithIllegalArgument() {
        byte[] commands = CommandCodec.encodeCommands(COMMANDS);
        byte[] results = CommandCodec.encodeResults(PLAIN_RESULTS);

        for (int length = 0; length < commands.length; length++) {
            byte[] truncated = Arrays.copyOf(commands, length);
            assertThatThrownBy(() -> CommandCodec.decodeCommands(truncated))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed command batch");
        }
        for (int length = 0; length < results.length; length++) {
            byte[] truncated = Arrays.copyOf(results, length);
            assertThatThrownBy(() -> CommandCodec.decodeResults(truncated))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed result batch");
        }
    }

    @Test
    void decode_ofTrailingBytesUnknownVersionOrTag_isRejectedWithReason() {
        byte[] valid = CommandCodec.encodeCommands(List.of(new Command.CloseSession(1, HASH)));
        byte[] trailing = Arrays.copyOf(valid, valid.length + 1);
        byte[] version = valid.clone();
        version[0] = 6;
        byte[] tag = valid.clone();
        tag[5] = 99;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(trailing)).hasMessageContaining("trailing");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(version)).hasMessageContaining("version 6");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(tag)).hasMessageContaining("tag 99");
        assertThatThrownBy(() -> CommandCodec.decodeResults(tag)).hasMessageContaining("tag 99");
    }

    @Test
    void decode_ofHugeCountOrLength_isRejectedWithoutAllocating() {
        byte[] hugeCount = ByteBuffer.allocate(5).put((byte) CommandCodec.VERSION_FOUR).putInt(Integer.MAX_VALUE).array();
        byte[] negativeCount = ByteBuffer.allocate(5).put((byte) CommandCodec.VERSION_FOUR).putInt(-1).array();
        byte[] hugeString = ByteBuffer.allocate(10).put((byte) CommandCodec.VERSION_FOUR).putInt(1).put((byte) 7)
                .putInt(1 << 30).array();

        assertThatThrownBy(() -> CommandCodec.decodeCommands(hugeCount))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("count");
        assertThatThrownBy(() -> CommandCodec.decodeResults(negativeCount))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("count -1");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(hugeString))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("length");
    }

    @Test
    void decodeCommands_ofInvalidFields_isRejectedWithIllegalArgument() {
        byte[] emptyLock = ByteBuffer.allocate(10).put((byte) CommandCodec.VERSION_FOUR).putInt(1).put((byte) 7)
                .putInt(0).array();
        byte[] badUtf8 = ByteBuffer.allocate(11).put((byte) CommandCodec.VERSION_FOUR).putInt(1).put((byte) 7).putInt(1)
                .put((byte) 0xff)
                .array();
        byte[] badBoolean = ByteBuffer.allocate(15).put((byte) CommandCodec.VERSION_FOUR).putInt(1).put((byte) 3).putLong(1)
                .put((byte) 2)
                .array();

        assertThatThrownBy(() -> CommandCodec.decodeCommands(emptyLock))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lock name must not be empty");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(badUtf8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-8");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(badBoolean))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("boolean");
    }

    @Test
    void decodeCommands_ofLockNamesBreakingTheRules_isRejectedWithTheNameCheckMessage() {
        // The decode's one check of a name: the same rules, and messages, as LockName.of at the server's edge.
        assertThatThrownBy(() -> CommandCodec.decodeCommands(endLockDelay("a\nb".getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("command 0 at byte 5")
                .hasMessageContaining("lock name must not contain control characters: 'a\\u000ab'");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(endLockDelay("é\u0085".getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("control characters");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(endLockDelay("x".repeat(257).getBytes(
                StandardCharsets.UTF_8)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lock name is 257 bytes of UTF-8, more than the 256 allowed");
        assertThatThrownBy(() -> CommandCodec.decodeCommands(endLockDelay(new byte[] {'a', (byte) 0xc3})))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not valid UTF-8");
    }

    @Test
    void decodeCommands_ofNamedCommands_carriesCheckedNamesEqualToTheEncodedOnes() {
        List<Command> commands = List.of(new Command.Acquire(1, HASH, LockName.of("zámek"), "r", true),
                new Command.CancelWait(1, HASH, LockName.of("zámek"), null),
                new Command.Release(1, HASH, LockName.of("b"), 2),
                new Command.EndLockDelay(LockName.of("lock-😀")));

        List<Command> decoded = CommandCodec.decodeCommands(CommandCodec.encodeCommands(commands));

        assertThat(decoded).isEqualTo(commands);
        assertThat(((Command.Acquire) decoded.get(0)).lockName()).isEqualTo(LockName.of("zámek"));
        assertThat(((Command.Acquire) decoded.get(0)).lock()).isEqualTo("zámek");
        assertThat(commands.get(0)).isEqualTo(new Command.Acquire(1, HASH, "zámek", "r", true));
    }

    @Test
    void decodeResults_ofTokenWithInvalidLockName_isRejectedWithTheNameCheckMessage() {
        byte[] name = "a\u007f".getBytes(StandardCharsets.UTF_8);
        byte[] granted = ByteBuffer.allocate(1 + 4 + 1 + 4 + name.length + 8).put((byte) CommandCodec.VERSION_FOUR)
                .putInt(1).put((byte) 3).putInt(name.length).put(name).putLong(1).array();

        assertThatThrownBy(() -> CommandCodec.decodeResults(granted)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("malformed result batch").hasMessageContaining("control characters");
    }

    /** Returns a batch of one EndLockDelay whose lock name is {@code name}, as bytes. */
    private static byte[] endLockDelay(byte[] name) {
        return ByteBuffer.allocate(1 + 4 + 1 + 4 + name.length).put((byte) CommandCodec.VERSION_FOUR).putInt(1)
                .put((byte) 7).putInt(name.length).put(name).array();
    }

    @Test
    void decode_ofRandomGarbageAndBitFlips_eitherDecodesOrThrowsIllegalArgument() {
        Random random = new Random(20_240_229L);
        byte[] valid = CommandCodec.encodeCommands(COMMANDS);
        byte[] validResults = CommandCodec.encodeResults(PLAIN_RESULTS);
        int rejected = 0;
        for (int i = 0; i < 5_000; i++) {
            byte[] garbage = new byte[random.nextInt(64)];
            random.nextBytes(garbage);
            if (i % 2 == 0 && garbage.length > 0) {
                garbage[0] = (byte) CommandCodec.VERSION_FOUR;
            }
            rejected += decodesOrRejects(garbage);
            byte[] flipped = (i % 2 == 0 ? valid : validResults).clone();
            flipped[random.nextInt(flipped.length)] ^= (byte) (1 << random.nextInt(8));
            rejected += decodesOrRejects(flipped);
        }
        assertThat(rejected).isGreaterThan(5_000);
    }

    /** Decodes as commands and as results; returns how many of the two were rejected. */
    private static int decodesOrRejects(byte[] bytes) {
        int rejected = 0;
        try {
            CommandCodec.decodeCommands(bytes);
        } catch (IllegalArgumentException expected) {
            rejected++;
        }
        try {
            CommandCodec.decodeResults(bytes);
        } catch (IllegalArgumentException expected) {
            rejected++;
        }
        return rejected;
    }
}

package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.TokenKeys;
import io.fencer.core.UnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every refused request is a typed error naming the value, and leaves the store as it was. */
class StoreEngineValidationTest {
    private static final TokenKeys KEYS = TokenKeys.generate("k1");

    @TempDir
    Path dir;
    private StoreEngine store;

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir, StoreOptions.defaults().withKeyBytesMax(8).withValueBytesMax(16)
                .withOpsPerWriteMax(3).withBatchBytesMax(40));
        store.write("orders", sequencer("orders", 5), put("k", "original"), null);
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    void write_tokenOfAnotherLock_isScopeMismatchNeverCompared() {
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("payments", 999), put("k", "x"), null))
                .isInstanceOfSatisfying(ScopeMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.tokenLock()).isEqualTo("payments");
                })
                .hasMessageContaining("payments#999"));
    }

    @Test
    void write_oversizedKey_isInvalidArgumentNamingKeyAndLimit() {
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("orders", 6), put("123456789", "x"), null))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("key");
                    assertThat(e.value()).isEqualTo("'123456789'");
                })
                .hasMessageContaining("9 bytes, more than the keyBytesMax of 8"));
    }

    @Test
    void write_emptyOrBinaryKey_isRefusedNamingIt() {
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("orders", 6), List.of(Op.put(new byte[0], bytes("x"))), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("must not be empty"));
        byte[] binary = {0, 1, 2, (byte) 0xff, 4, 5, 6, 7, 8};
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("orders", 6), List.of(Op.delete(binary)), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("0x000102ff0405060708"));
    }

    @Test
    void write_oversizedValue_isInvalidArgumentNamingSizeAndLimit() {
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("orders", 6), put("k", "x".repeat(17)), null))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("value");
                    assertThat(e.value()).isEqualTo("17 bytes");
                })
                .hasMessageContaining("more than the valueBytesMax of 16"));
    }

    @Test
    void write_oversizedBatch_isInvalidArgumentAndNoOpApplies() {
        List<Op> ops = List.of(Op.put(bytes("a"), bytes("x".repeat(16))), Op.put(bytes("k"), bytes("y".repeat(16))),
                Op.put(bytes("c"), bytes("z".repeat(16))));
        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", sequencer("orders", 6), ops, null))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.value()).isEqualTo("51 bytes"))
                .hasMessageContaining("more than the batchBytesMax of 40"));
        assertThat(store.get("orders", bytes("a"), null).present()).isFalse();
    }

    @Test
    void write_tooManyOrNoOps_isInvalidArgument() {
        List<Op> four = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            four.add(Op.delete(bytes("k" + i)));
        }
        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", sequencer("orders", 6), four, null))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("4"))
                .hasMessageContaining("4 ops, more than the opsPerWriteMax of 3"));
        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", sequencer("orders", 6), List.of(), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("at least one op"));
    }

    @Test
    void write_malformedSequencer_isInvalidArgumentNamingText() {
        for (String malformed : List.of("", "fencer1.b3JkZXJz", "fencer1.b3JkZXJz.0", "fencer2.b3JkZXJz.6",
                "fencer1.b3JkZXJz.6.k1", "orders#6")) {
            assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", malformed, put("k", "x"), null))
                    .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                        assertThat(e.field()).isEqualTo("sequencer");
                        assertThat(e.value()).isEqualTo(malformed);
                    }));
        }
        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", null, put("k", "x"), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("empty"));
    }

    @Test
    void write_badScopeOrIdempotencyKey_isInvalidArgumentNamingField() {
        assertThatThrownBy(() -> store.write("", sequencer("orders", 6), put("k", "x"), null))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.field()).isEqualTo("scope"));
        assertThatThrownBy(() -> store.write("x".repeat(257), sequencer("orders", 6), put("k", "x"), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("257 bytes");
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", sequencer("orders", 6), put("k", "x"), "bad\nkey"))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.field()).isEqualTo("idempotencyKey")));
        assertThat(store.scope("x".repeat(256)).exists()).isFalse();
    }

    @Test
    void begin_timeoutOutOfRange_isInvalidArgumentNamingTimeout() {
        assertThatThrownBy(() -> store.begin("orders", sequencer("orders", 6), Duration.ofSeconds(61)))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("PT1M1S"))
                .hasMessageContaining("unitDurationMax of PT1M");
        assertThatThrownBy(() -> store.begin("orders", sequencer("orders", 6), Duration.ZERO))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("must be positive");
        assertThat(store.unitsOpen()).isZero();
        assertThat(store.accepted("orders")).isEqualTo(5);
    }

    @Test
    void write_withKeysRequired_refusesUnsignedUnknownKeyAndForgedTokens() {
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults().withKeys(KEYS));
        FencingToken six = new FencingToken("orders", 6);

        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", six.sequencer(), put("k", "x"), null))
                .isInstanceOfSatisfying(BadTokenSignatureException.class, e -> {
                    assertThat(e.lock()).isEqualTo("orders");
                    assertThat(e.value()).isEqualTo(6);
                })
                .hasMessageContaining("unsigned"));
        assertUnchanged(() -> assertThatThrownBy(
                () -> store.write("orders", six.sequencer(TokenKeys.generate("k9")), put("k", "x"), null))
                .isInstanceOf(BadTokenSignatureException.class).hasMessageContaining("key id 'k9'"));
        String forged = new FencingToken("orders", 1_000_000).sequencer(TokenKeys.generate("k1"));
        assertUnchanged(() -> assertThatThrownBy(() -> store.write("orders", forged, put("k", "x"), null))
                .isInstanceOf(BadTokenSignatureException.class).hasMessageContaining("does not verify"));
        assertUnchanged(() -> assertThatThrownBy(() -> store.begin("orders", forged, Duration.ofSeconds(1)))
                .isInstanceOf(BadTokenSignatureException.class));
        assertThatThrownBy(() -> store.get("orders", bytes("k"), six.sequencer()))
                .isInstanceOf(BadTokenSignatureException.class);

        WriteResult signed = store.write("orders", six.sequencer(KEYS), put("k", "signed"), null);
        assertThat(signed.accepted()).isEqualTo(6);
        assertThat(text(store.get("orders", bytes("k"), six.sequencer(KEYS)).value())).isEqualTo("signed");
    }

    @Test
    void write_withoutKeys_acceptsSignedSequencerIgnoringSignature() {
        WriteResult result = store.write("orders", new FencingToken("orders", 6).sequencer(KEYS), put("k", "x"), null);
        assertThat(result.accepted()).isEqualTo(6);
    }

    @Test
    void operations_afterClose_areUnavailable() {
        store.close();
        assertThatThrownBy(() -> store.write("orders", sequencer("orders", 6), put("k", "x"), null))
                .isInstanceOf(UnavailableException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> store.get("orders", bytes("k"), null)).isInstanceOf(UnavailableException.class);
        store.close(); // idempotent
    }

    @Test
    void open_directoryHeldByAnotherEngine_isUnavailable() {
        assertThatThrownBy(() -> StoreEngine.open(dir, StoreOptions.defaults()))
                .isInstanceOf(UnavailableException.class).hasMessageContaining(dir.toString());
    }

    /** Runs {@code refusal} and checks that the scope's value, writer, accepted token and revision did not move. */
    private void assertUnchanged(ThrowingCallable refusal) {
        ScopeInfo before = store.scope("orders");
        ReadResult readBefore = store.get("orders", bytes("k"), null);
        try {
            refusal.call();
        } catch (Throwable e) {
            throw new AssertionError(e);
        }
        assertThat(store.scope("orders")).isEqualTo(before);
        ReadResult readAfter = store.get("orders", bytes("k"), null);
        assertThat(text(readAfter.value())).isEqualTo(text(readBefore.value()));
        assertThat(readAfter.writtenBy()).isEqualTo(readBefore.writtenBy());
        assertThat(readAfter.accepted()).isEqualTo(readBefore.accepted());
    }
}

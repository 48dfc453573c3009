package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SignedSequencerTest {
    private final TokenKeys keys = TokenKeys.generate("k1");
    private final FencingToken token = new FencingToken("orders/eu ✓", 42);

    @Test
    void format_signed_hasFiveParts_andRoundTrips() {
        String signed = Sequencer.format(token, keys);
        assertThat(signed.split("\\.", -1)).hasSize(5);
        assertThat(signed).startsWith(token.sequencer() + ".k1.");
        assertThat(Sequencer.parse(signed, keys)).isEqualTo(token);
        assertThat(token.sequencer(keys)).isEqualTo(signed);
    }

    @Test
    void parse_withoutKeys_acceptsSignedFormIgnoringSignature() {
        String forged = Sequencer.format(new FencingToken("orders", 99), TokenKeys.generate("k1"));
        assertThat(Sequencer.parse(forged)).isEqualTo(new FencingToken("orders", 99));
        assertThat(Sequencer.parse(forged, null)).isEqualTo(new FencingToken("orders", 99));
    }

    @Test
    void parse_unsignedWhenKeysRequired_isBadSignatureNamingToken() {
        assertThatThrownBy(() -> Sequencer.parse(token.sequencer(), keys))
                .isInstanceOfSatisfying(BadTokenSignatureException.class, e -> {
                    assertThat(e.reason()).isEqualTo(ErrorReason.BAD_TOKEN_SIGNATURE);
                    assertThat(e.lock()).isEqualTo(token.lock());
                    assertThat(e.value()).isEqualTo(42);
                })
                .hasMessageContaining("orders/eu ✓#42").hasMessageContaining("unsigned");
    }

    @Test
    void parse_unknownKeyId_isBadSignatureNamingKeyId() {
        String signed = Sequencer.format(token, TokenKeys.generate("k9"));
        assertThatThrownBy(() -> Sequencer.parse(signed, keys))
                .isInstanceOf(BadTokenSignatureException.class).hasMessageContaining("key id 'k9'");
    }

    @Test
    void parse_forgedValueOrWrongKey_isBadSignature() {
        String signed = Sequencer.format(token, keys);
        String raisedValue = signed.replace(".42.", ".43.");
        assertThatThrownBy(() -> Sequencer.parse(raisedValue, keys))
                .isInstanceOfSatisfying(BadTokenSignatureException.class, e -> assertThat(e.value()).isEqualTo(43))
                .hasMessageContaining("does not verify with key 'k1'");
        String sameIdOtherKey = Sequencer.format(token, TokenKeys.generate("k1"));
        assertThatThrownBy(() -> Sequencer.parse(sameIdOtherKey, keys))
                .isInstanceOf(BadTokenSignatureException.class);
        String otherLock = Sequencer.format(new FencingToken("payments", 42), keys);
        String swappedLock = signed.substring(0, signed.indexOf(".42.")).replaceFirst("^fencer1\\.[^.]*",
                otherLock.substring(0, otherLock.indexOf(".42."))) + signed.substring(signed.indexOf(".42."));
        assertThat(Sequencer.parse(swappedLock).lock()).isEqualTo("payments");
        assertThatThrownBy(() -> Sequencer.parse(swappedLock, keys)).isInstanceOf(BadTokenSignatureException.class);
    }

    @Test
    void parse_afterRotation_verifiesOldAndNewSignatures() {
        TokenKeys old = keys;
        TokenKeys rotated = TokenKeys.generate("k2").plus(old);
        String before = Sequencer.format(token, old);
        String after = Sequencer.format(new FencingToken(token.lock(), 43), rotated);
        assertThat(after).contains(".k2.");
        assertThat(Sequencer.parse(before, rotated)).isEqualTo(token);
        assertThat(Sequencer.parse(after, rotated).value()).isEqualTo(43);
        assertThatThrownBy(() -> Sequencer.parse(after, old)).isInstanceOf(BadTokenSignatureException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "fencer1.b3JkZXJz.5.k1", "fencer1.b3JkZXJz.5.k1.",
        "fencer1.b3JkZXJz.5..AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "fencer1.b3JkZXJz.5.k!.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "fencer1.b3JkZXJz.5.k1.AAAA", "fencer1.b3JkZXJz.5.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "fencer1.b3JkZXJz.5.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+",
        "fencer1.b3JkZXJz.5.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.x",
        "fencer1.b3JkZXJz.0.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "fencer1.b3JkZXJz.5.kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    })
    void parse_malformedSignedShapes_areInvalidArgumentWithOrWithoutKeys(String text) {
        assertThatThrownBy(() -> Sequencer.parse(text))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo(text))
                .hasMessageContaining("malformed sequencer");
        assertThatThrownBy(() -> Sequencer.parse(text, keys))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("malformed sequencer");
    }

    @Test
    void format_longestLock_staysWithinLengthMax() {
        FencingToken longest = new FencingToken("x".repeat(LockNames.BYTES_MAX), FencingToken.VALUE_MAX);
        String signed = Sequencer.format(longest, TokenKeys.generate("k".repeat(TokenKeys.KEY_ID_CHARS_MAX)));
        assertThat(signed.length()).isLessThanOrEqualTo(Sequencer.LENGTH_MAX);
        assertThat(Sequencer.parse(signed)).isEqualTo(longest);
    }

    @Test
    void parse_signatureOfWrongLength_isMalformed() {
        String mac31 = Base64.getUrlEncoder().withoutPadding().encodeToString(new byte[31]);
        assertThatThrownBy(() -> Sequencer.parse("fencer1.b3JkZXJz.5.k1." + mac31))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("43 characters");
    }
}

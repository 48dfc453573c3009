package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SequencerTest {

    @ParameterizedTest
    @ValueSource(strings = {
        "", "fencer1", "fencer1.b3JkZXJz", "fencer2.b3JkZXJz.5", "fencer1.b3JkZXJz.5.extra",
        "fencer1.b3JkZXJz.0", "fencer1.b3JkZXJz.-1", "fencer1.b3JkZXJz.+1", "fencer1.b3JkZXJz.1e3",
        "fencer1.b3JkZXJz.9223372036854775807", "fencer1.b3JkZXJz.99999999999999999999",
        "fencer1..5", "fencer1.!!!.5", "fencer1.b3JkZXJz.", "fencer1.b3JkZXJz. 5"
    })
    void parse_malformed_isInvalidArgumentNamingText(String text) {
        assertThatThrownBy(() -> Sequencer.parse(text))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    org.assertj.core.api.Assertions.assertThat(e.field()).isEqualTo("sequencer");
                    org.assertj.core.api.Assertions.assertThat(e.value()).isEqualTo(text);
                })
                .hasMessageContaining("malformed sequencer");
    }

    @Test
    void parse_invalidUtf8Lock_isRefused() {
        String lock = Base64.getUrlEncoder().withoutPadding().encodeToString(new byte[] {(byte) 0xc3, (byte) 0x28});
        assertThatThrownBy(() -> Sequencer.parse("fencer1." + lock + ".3"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("not valid UTF-8");
    }

    @Test
    void parse_overlongLock_isRefused() {
        String lock = Base64.getUrlEncoder().withoutPadding()
                .encodeToString("x".repeat(257).getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> Sequencer.parse("fencer1." + lock + ".3"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("257 bytes");
    }

    @Test
    void parse_hugeInput_isRefusedWithoutDecoding() {
        assertThatThrownBy(() -> Sequencer.parse("fencer1." + "A".repeat(100_000) + ".1"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("more than 512");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "fencer1|1", "fencer1.b3JkZXJz|2", "fencer1.b3JkZXJz.5.shared.k.mac.more|7", "......|7", "........|9"
    })
    void parse_partCountOutsideThreeToSix_namesTheCount(String text, int parts) {
        assertThatThrownBy(() -> Sequencer.parse(text))
                .isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("found " + parts);
    }

    @Test
    void parse_trailingDot_isAnEmptyPartNotDropped() {
        // "fencer1.<lock>.5." has four parts, the last empty: an unknown mode, not the exclusive token 5.
        assertThatThrownBy(() -> Sequencer.parse("fencer1.b3JkZXJz.5."))
                .isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("unknown mode ''");
    }

    @Test
    void parse_formattedTokens_roundTrip() {
        for (FencingToken token : new FencingToken[] {new FencingToken("orders", 1, LockMode.EXCLUSIVE),
            new FencingToken("a.b.c", FencingToken.VALUE_MAX, LockMode.EXCLUSIVE),
            new FencingToken("orders", 42, LockMode.SHARED)}) {
            org.assertj.core.api.Assertions.assertThat(Sequencer.parse(token.sequencer())).isEqualTo(token);
        }
    }
}

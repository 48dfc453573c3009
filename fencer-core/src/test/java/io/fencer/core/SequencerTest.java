package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
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
}

package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LockNamesTest {

    @Test
    void check_acceptsUpTo256Utf8Bytes() {
        assertThat(LockNames.check("a".repeat(256))).hasSize(256);
        assertThat(LockNames.check("é".repeat(128))).hasSize(128); // 2 bytes each
    }

    @Test
    void check_countsSurrogatePairsAsFourBytes_andRefusesC1Controls() {
        assertThat(LockNames.check("\ud83d\ude00".repeat(64))).hasSize(128); // 64 emoji = 256 bytes
        assertThatThrownBy(() -> LockNames.check("\ud83d\ude00".repeat(65))).hasMessageContaining("260 bytes");
        assertThatThrownBy(() -> LockNames.check("a\u0085b")).hasMessageContaining("control characters");
        assertThatThrownBy(() -> LockNames.check("a\udc00")).hasMessageContaining("unpaired surrogate");
        assertThat(LockNames.check("日本語")).isEqualTo("日本語");
    }

    @Test
    void check_refusesEmptyOverlongControlAndLoneSurrogates() {
        assertThatThrownBy(() -> LockNames.check("")).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("must not be empty");
        assertThatThrownBy(() -> LockNames.check("a".repeat(257))).hasMessageContaining("257 bytes");
        assertThatThrownBy(() -> LockNames.check("é".repeat(129))).hasMessageContaining("258 bytes");
        assertThatThrownBy(() -> LockNames.check("a\nb")).hasMessageContaining("control characters");
        assertThatThrownBy(() -> LockNames.check("a\ud800b")).hasMessageContaining("not valid UTF-8");
    }

    @Test
    void decode_invalidUtf8_namesBytesInHex() {
        assertThatThrownBy(() -> LockNames.decode("lock", new byte[] {'a', (byte) 0xff}))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.value()).isEqualTo("61ff"));
    }
}

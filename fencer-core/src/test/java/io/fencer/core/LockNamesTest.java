package io.fencer.core;

import io.fencer.core.internal.LockName;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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

    @ParameterizedTest(name = "U+{0}")
    @ValueSource(strings = {"202A", "202B", "202C", "202D", "202E", "2066", "2067", "2068", "2069", "200E", "200F",
            "061C"})
    void checkNew_bidiControl_refusedNamingCodePointAndPosition(String hex) {
        String name = "jobs/a" + Character.toString(Integer.parseInt(hex, 16)) + "b";
        assertThatThrownBy(() -> LockNames.checkNew(name)).isInstanceOfSatisfying(InvalidArgumentException.class,
                e -> {
                    assertThat(e.field()).isEqualTo("lock");
                    assertThat(e.getMessage()).contains("U+" + hex, "a bidirectional control", "at position 6");
                });
        assertThat(LockNames.check(name)).as("names already kept still pass the plain check").isEqualTo(name);
    }

    @ParameterizedTest(name = "U+{0}")
    @ValueSource(strings = {"200B", "200C", "200D", "2060", "FEFF"})
    void checkNew_zeroWidth_refusedNamingCodePointAndPosition(String hex) {
        String name = Character.toString(Integer.parseInt(hex, 16)) + "orders";
        assertThatThrownBy(() -> LockNames.checkNew("scope", name)).isInstanceOfSatisfying(
                InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("scope");
                    assertThat(e.getMessage()).contains("U+" + hex, "a zero-width character", "at position 0");
                });
        assertThat(LockNames.check("scope", name)).isEqualTo(name);
    }

    @Test
    void checkNew_otherFormatCharacters_refused() {
        // Soft hyphen, Arabic number sign, Mongolian vowel separator, a tag character beyond the BMP (a pair).
        for (int codePoint : new int[] {0x00AD, 0x0600, 0x180E, 0xE0041}) {
            String name = "\ud83d\ude00x" + Character.toString(codePoint);
            assertThat(Character.getType(codePoint)).isEqualTo(Character.FORMAT);
            assertThatThrownBy(() -> LockNames.checkNew(name))
                    .hasMessageContaining(String.format("U+%04X", codePoint))
                    .hasMessageContaining("at position 2"); // the emoji is one code point, two chars
        }
    }

    @Test
    void checkNew_controlAndSeparatorCharacters_refused() {
        assertThatThrownBy(() -> LockNames.checkNew("a\tb")).hasMessageContaining("control characters");
        assertThatThrownBy(() -> LockNames.checkNew("a\u2028b")).hasMessageContaining("U+2028")
                .hasMessageContaining("a line or paragraph separator");
        assertThatThrownBy(() -> LockNames.checkNew("a\u2029b")).hasMessageContaining("U+2029");
        assertThat(LockNames.hiddenKind(0x7f)).isEqualTo("a control character");
        assertThat(LockNames.hiddenKind(0x9f)).isEqualTo("a control character");
    }

    @Test
    void checkNew_visibleNames_accepted() {
        for (String name : new String[] {"jobs/nightly", "日本語/ロック", "orders-ü", "\ud83d\ude00", "a b", "שלום",
                "مرحبا"}) {
            assertThat(LockNames.checkNew(name)).isEqualTo(name);
            assertThat(LockName.ofNew("lock", name).value()).isEqualTo(name);
        }
    }

    @Test
    void printable_formatCharacters_escapedSoTheMessageShowsThem() {
        assertThat(InvalidArgumentException.printable("a\u202Eb\u200Bc")).isEqualTo("a\\u202eb\\u200bc");
    }

    @Test
    void decode_invalidUtf8_namesBytesInHex() {
        assertThatThrownBy(() -> LockNames.decode("lock", new byte[] {'a', (byte) 0xff}))
                .isInstanceOfSatisfying(InvalidArgumentException.class,
                        e -> assertThat(e.value()).isEqualTo("61ff"));
    }
}

package io.fencer.core.internal;

import io.fencer.core.LockNames;
import io.fencer.core.InvalidArgumentException;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class LockNameTest {

    @Test
    void of_invalidNames_isRefusedNamingFieldAndValue() {
        assertThatThrownBy(() -> LockName.of("")).isInstanceOfSatisfying(InvalidArgumentException.class,
                e -> assertThat(e.field()).isEqualTo("lock")).hasMessage("lock name must not be empty");
        assertThatThrownBy(() -> LockName.of(null)).hasMessage("lock name must not be empty");
        assertThatThrownBy(() -> LockName.of("a".repeat(257))).isInstanceOfSatisfying(InvalidArgumentException.class,
                e -> assertThat(e.value()).isEqualTo("a".repeat(257))).hasMessageContaining("257 bytes");
        assertThatThrownBy(() -> LockName.of("a\ud800b")).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("not valid UTF-8 (unpaired surrogate)");
        assertThatThrownBy(() -> LockName.of("a\tb")).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("control characters");
        assertThatThrownBy(() -> LockName.of("token.lock", "")).isInstanceOfSatisfying(
                InvalidArgumentException.class, e -> assertThat(e.field()).isEqualTo("token.lock"))
                .hasMessage("token.lock name must not be empty");
    }

    @Test
    void of_invalidName_hasTheMessageOfLockNamesCheck() {
        for (String bad : new String[] {"", "x".repeat(300), "é".repeat(129), "a\u0085", "\udc00", "a\u007f"}) {
            Throwable expected = catchThrowable(() -> LockNames.check("scope", bad));
            assertThatThrownBy(() -> LockName.of("scope", bad)).as(bad)
                    .isInstanceOf(InvalidArgumentException.class).hasMessage(expected.getMessage());
        }
    }

    @Test
    void of_equalNames_areEqualWithEqualHashes() {
        LockName one = LockName.of("orders/é");
        LockName two = LockName.of(new String("orders/é".toCharArray()));

        assertThat(one).isEqualTo(two).hasSameHashCodeAs(two).isNotEqualTo(LockName.of("orders"));
        assertThat(one.hashCode()).isEqualTo("orders/é".hashCode());
        assertThat(one.value()).isEqualTo("orders/é");
        assertThat(one).hasToString("orders/é");
        assertThat(one).isNotEqualTo("orders/é");
    }

    @Test
    void fromUtf8_validAsciiAndNonAscii_decodesTheName() {
        byte[] framed = "[orders]".getBytes(StandardCharsets.UTF_8);
        byte[] unicode = "zámek-😀".getBytes(StandardCharsets.UTF_8);

        assertThat(LockName.fromUtf8("lock", framed, 1, 6)).isEqualTo(LockName.of("orders"));
        assertThat(LockName.fromUtf8("lock", unicode, 0, unicode.length)).isEqualTo(LockName.of("zámek-😀"));
        byte[] longest = "a".repeat(LockNames.BYTES_MAX).getBytes(StandardCharsets.UTF_8);
        assertThat(LockName.fromUtf8("lock", longest, 0, longest.length).value()).hasSize(LockNames.BYTES_MAX);
    }

    @Test
    void fromUtf8_invalidNames_isRefusedWithTheMessagesOfCheckAndDecode() {
        for (String bad : new String[] {"", "x".repeat(257), "a\nb", "a\u007fb", "a\u0085b"}) {
            byte[] bytes = bad.getBytes(StandardCharsets.UTF_8);
            Throwable expected = catchThrowable(() -> LockNames.check("lock", bad));
            assertThatThrownBy(() -> LockName.fromUtf8("lock", bytes, 0, bytes.length)).as(bad)
                    .isInstanceOf(InvalidArgumentException.class).hasMessage(expected.getMessage());
        }
        byte[] invalidUtf8 = {'a', (byte) 0xff, 'b'};
        assertThatThrownBy(() -> LockName.fromUtf8("lock", invalidUtf8, 1, 1))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("ff"))
                .hasMessage("lock name is not valid UTF-8: bytes ff");
        assertThatThrownBy(() -> LockName.fromUtf8("lock", invalidUtf8, 2, 2))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }
}

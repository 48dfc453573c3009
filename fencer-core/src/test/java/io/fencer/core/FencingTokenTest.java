package io.fencer.core;

import io.fencer.core.internal.LockName;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import org.junit.jupiter.api.Test;

class FencingTokenTest {

    @Test
    void sequencer_roundTrips_lockAndValue() {
        FencingToken token = new FencingToken("orders/eu-1 ✓", 32);
        assertThat(token.sequencer()).startsWith("fencer1.").endsWith(".32");
        assertThat(FencingToken.parse(token.sequencer())).isEqualTo(token);
    }

    @Test
    void toString_isDisplayForm() {
        assertThat(new FencingToken("orders", 32)).hasToString("orders#32");
    }

    @Test
    void new_withZeroOrNegativeOrAboveMax_isRefusedNamingValue() {
        assertThatThrownBy(() -> new FencingToken("orders", 0))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("got 0");
        assertThatThrownBy(() -> new FencingToken("orders", -5))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("-5");
        assertThatThrownBy(() -> new FencingToken("orders", Long.MAX_VALUE))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining(Long.toString(Long.MAX_VALUE));
        assertThat(new FencingToken("orders", FencingToken.VALUE_MAX).value()).isEqualTo(Long.MAX_VALUE - 1);
    }

    @Test
    void compareTo_acrossLocks_isScopeMismatch() {
        FencingToken a = new FencingToken("a", 1);
        FencingToken b = new FencingToken("b", 2);
        assertThatThrownBy(() -> a.compareTo(b)).isInstanceOf(ScopeMismatchException.class);
        assertThat(a.isNewerThan(b)).isFalse();
        assertThat(new FencingToken("a", 2).isNewerThan(a)).isTrue();
        assertThat(a.compareTo(new FencingToken("a", 2))).isNegative();
    }

    @Test
    void of_checkedName_equalsTheTokenMadeFromTheString() {
        FencingToken token = FencingToken.of(LockName.of("orders/é"), 32);
        FencingToken fromString = new FencingToken("orders/é", 32);

        assertThat(token).isEqualTo(fromString).hasSameHashCodeAs(fromString).hasToString("orders/é#32");
        assertThat(token.lock()).isEqualTo("orders/é");
        assertThat(token.value()).isEqualTo(32);
        assertThat(token).isNotEqualTo(new FencingToken("orders/é", 33)).isNotEqualTo(new FencingToken("orders", 32));
    }

    @Test
    void of_valueOutOfRange_isRefusedAsByTheConstructor() {
        LockName orders = LockName.of("orders");
        for (long bad : new long[] {0, -5, Long.MAX_VALUE}) {
            Throwable expected = catchThrowable(() -> new FencingToken("orders", bad));
            assertThatThrownBy(() -> FencingToken.of(orders, bad)).isInstanceOf(InvalidArgumentException.class)
                    .hasMessage(expected.getMessage());
        }
        assertThatThrownBy(() -> FencingToken.of(null, 1)).isInstanceOf(NullPointerException.class);
    }
}

package io.fencer.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TokenValuesTest {
    @Test
    void encode_tokens_orderAsBytesAsTheyDoAsNumbers() {
        long[] tokens = {0, 1, 9, 10, 99, 100, 12_345, 1L << 40, Long.MAX_VALUE - 1, Long.MAX_VALUE};
        for (int i = 1; i < tokens.length; i++) {
            byte[] lower = TokenValues.encode(tokens[i - 1]).getBytes();
            byte[] higher = TokenValues.encode(tokens[i]).getBytes();
            // etcd compares values as unsigned bytes, lexicographically
            assertThat(Arrays.compareUnsigned(lower, higher)).as("%d < %d", tokens[i - 1], tokens[i]).isNegative();
        }
        // the control: plain decimals would order 10 before 9
        assertThat(Arrays.compareUnsigned("10".getBytes(StandardCharsets.US_ASCII),
                "9".getBytes(StandardCharsets.US_ASCII))).isNegative();
    }

    @Test
    void decode_encodedToken_returnsIt() {
        assertThat(TokenValues.encode(42).toString(StandardCharsets.US_ASCII)).isEqualTo("0000000000000000042");
        assertThat(TokenValues.decode(TokenValues.encode(42))).isEqualTo(42);
        assertThat(TokenValues.decode(TokenValues.encode(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void encodeAndDecode_invalid_failNamingTheValue() {
        assertThatThrownBy(() -> TokenValues.encode(-1)).hasMessage("token -1 is negative");
        assertThatThrownBy(() -> TokenValues.decode(ByteSequence.from("42", StandardCharsets.US_ASCII)))
                .hasMessageContaining("'42'");
    }
}

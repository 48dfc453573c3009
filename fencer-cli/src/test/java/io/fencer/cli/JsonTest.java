package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class JsonTest {

    @Test
    void object_mixedValues_writesThemInOrder() {
        String json = Json.object().add("lock", "orders").add("token", 32L).add("delayed", false)
                .add("rate", 1234.5678).add("end", (String) null).addLongs("waiters", List.of(3L, 4L))
                .add("nested", Json.object().add("p50", 1.0)).toString();

        assertThat(json).isEqualTo("{\"lock\":\"orders\",\"token\":32,\"delayed\":false,\"rate\":1234.568,"
                + "\"end\":null,\"waiters\":[3,4],\"nested\":{\"p50\":1.000}}");
    }

    @Test
    void quote_specialCharacters_areEscaped() {
        assertThat(Json.quote("a\"b\\c\nd\u0001e")).isEqualTo("\"a\\\"b\\\\c\\nd\\u0001e\"");
    }

    @Test
    void add_nanOrInfinity_writesNull() {
        assertThat(Json.object().add("a", Double.NaN).add("b", Double.POSITIVE_INFINITY).toString())
                .isEqualTo("{\"a\":null,\"b\":null}");
    }

    @Test
    void array_values_joinsThem() {
        assertThat(Json.array(List.of())).isEqualTo("[]");
        assertThat(Json.array(List.of(Json.object().add("a", 1L), Json.object()))).isEqualTo("[{\"a\":1},{}]");
    }
}

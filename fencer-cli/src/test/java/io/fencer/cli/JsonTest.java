package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.List;
import org.junit.jupiter.api.Test;

class JsonTest {

    @Test
    void object_mixedValues_writesThemInOrder() {
        String json = Json.object().add("lock", "orders").add("token", 32L).add("delayed", false)
                .add("rate", 1234.5678).add("end", (String) null).addLongs("waiters", List.of(3L, 4L))
                .add("nested", Json.object().add("p50", 1.0)).toString();

        assertThat(json).isEqualTo("{\"format\":1,\"lock\":\"orders\",\"token\":32,\"delayed\":false,\"rate\":1234.568,"
                + "\"end\":null,\"waiters\":[3,4],\"nested\":{\"p50\":1.000}}");
    }

    @Test
    void toString_anyObject_writesTheFormatVersionFirstAndOnlyAtTheTop() {
        String json = Json.object().add("lock", "orders").add("nested", Json.object().add("p50", 1.0)).toString();

        JsonObject read = JsonParser.parseString(json).getAsJsonObject();
        assertThat(read.keySet()).containsExactly(Json.FORMAT_MEMBER, "lock", "nested");
        assertThat(read.get(Json.FORMAT_MEMBER).getAsInt()).isEqualTo(Json.FORMAT).isEqualTo(1);
        assertThat(read.getAsJsonObject("nested").keySet()).containsExactly("p50");
    }

    @Test
    void array_objects_eachWritesTheFormatVersionFirst() {
        String json = Json.array(List.of(Json.object().add("lock", "a"), Json.object()));

        assertThat(json).isEqualTo("[{\"format\":1,\"lock\":\"a\"},{\"format\":1}]");
    }

    @Test
    void toString_memberNamedAsTheVersion_isRefused() {
        Json clashing = Json.object().add(Json.FORMAT_MEMBER, "text");

        assertThatThrownBy(clashing::toString).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'format'");
    }

    @Test
    void quote_specialCharacters_areEscaped() {
        assertThat(Json.quote("a\"b\\c\nd\u0001e")).isEqualTo("\"a\\\"b\\\\c\\nd\\u0001e\"");
    }

    @Test
    void add_nanOrInfinity_writesNull() {
        assertThat(Json.object().add("a", Double.NaN).add("b", Double.POSITIVE_INFINITY).toString())
                .isEqualTo("{\"format\":1,\"a\":null,\"b\":null}");
    }

    @Test
    void array_values_joinsThem() {
        assertThat(Json.array(List.of())).isEqualTo("[]");
        assertThat(Json.array(List.of(Json.object().add("a", 1L), Json.object())))
                .isEqualTo("[{\"format\":1,\"a\":1},{\"format\":1}]");
    }

    @Test
    void add_hardStrings_areEscapedByJsonRulesAndReadBackUnchanged() {
        String hard = "q\"b\\s/c\u0000\u001f\t\n\u2028 <&> \u00e9\u4e2d\ud83d\ude00";

        String json = Json.object().add("s", hard).toString();

        assertThat(json).isEqualTo("{\"format\":1,"
                + "\"s\":\"q\\\"b\\\\s/c\\u0000\\u001f\\t\\n\\u2028 <&> \u00e9\u4e2d\ud83d\ude00\"}");
        assertThat(JsonParser.parseString(json).getAsJsonObject().get("s").getAsString()).isEqualTo(hard);
    }

    @Test
    void add_longExtremes_areWrittenExactly() {
        String json = Json.object().add("max", Long.MAX_VALUE).add("min", Long.MIN_VALUE)
                .add("boxed", Long.valueOf(Long.MAX_VALUE)).add("absent", (Long) null)
                .addUnsigned("unsigned", -1L).addUnsigned("none", null)
                .addLongs("list", List.of(Long.MAX_VALUE)).toString();

        assertThat(json).isEqualTo("{\"format\":1,\"max\":9223372036854775807,\"min\":-9223372036854775808,"
                + "\"boxed\":9223372036854775807,\"absent\":null,\"unsigned\":18446744073709551615,\"none\":null,"
                + "\"list\":[9223372036854775807]}");
        JsonObject read = JsonParser.parseString(json).getAsJsonObject();
        assertThat(read.get("max").getAsLong()).isEqualTo(Long.MAX_VALUE);
        assertThat(read.get("min").getAsLong()).isEqualTo(Long.MIN_VALUE);
        assertThat(read.get("unsigned").getAsBigInteger()).hasToString("18446744073709551615");
    }
}

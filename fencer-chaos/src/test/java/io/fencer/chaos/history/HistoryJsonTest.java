package io.fencer.chaos.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The JSON-lines form of a history: one object per line, the same bytes out as were read in. */
class HistoryJsonTest {
    private static final String HARD = "q\"b\\s/c\u0000\u001f\t\r\n\u2028 <&> \u00e9\u4e2d\ud83d\ude00";

    @Test
    void format_hardStringsAndLargestLongs_pinsTheLineAndRoundTrips() {
        HistoryEvent event = new HistoryEvent(Long.MAX_VALUE, "w1", Type.UNKNOWN, Op.WRITE, Long.MAX_VALUE, HARD,
                Long.MAX_VALUE, "lock-n1", HARD, "UNAVAILABLE");

        String line = HistoryJson.format(event);

        String quoted = "\"q\\\"b\\\\s/c\\u0000\\u001f\\t\\r\\n\\u2028 <&> \u00e9\u4e2d\ud83d\ude00\"";
        assertThat(line).isEqualTo("{\"time_us\":9223372036854775807,\"process\":\"w1\",\"type\":\"unknown\","
                + "\"op\":\"write\",\"token\":9223372036854775807,\"value\":" + quoted + ","
                + "\"revision\":9223372036854775807,\"target\":\"lock-n1\",\"error\":" + quoted
                + ",\"reason\":\"UNAVAILABLE\"}");
        assertThat(HistoryJson.parse(line)).isEqualTo(event);
    }

    /** A refusal's catalogue reason is a member of its own, kept through a round trip. */
    @Test
    void parse_refusalWithItsReason_formatsBackTheSameLine() {
        String line = "{\"time_us\":5,\"process\":\"w1\",\"type\":\"fail\",\"op\":\"write\",\"token\":3,"
                + "\"value\":\"4\",\"error\":\"refused\",\"reason\":\"STALE_TOKEN\"}";

        assertThat(HistoryJson.format(HistoryJson.parse(line))).isEqualTo(line);
    }

    /** A line of a release before refusals carried their reason still reads, with no reason. */
    @Test
    void parse_refusalWrittenBeforeReasons_readsWithAnEmptyReason() {
        HistoryEvent event = HistoryJson.parse("{\"time_us\":5,\"process\":\"w1\",\"type\":\"fail\","
                + "\"op\":\"write\",\"token\":3,\"value\":\"4\",\"error\":\"stale token counter#3 refused\"}");

        assertThat(event.error()).isEqualTo("stale token counter#3 refused");
        assertThat(event.reason()).isEmpty();
    }

    @Test
    void parse_spacesAndEscapesTheWriterDoesNotUse_readsTheSameEvent() {
        HistoryEvent event = HistoryJson.parse(" { \"op\" : \"read\", \"type\":\"ok\", \"process\":\"w\\u0032\","
                + " \"time_us\":0, \"value\":\"\\/\\b\\f\", \"unknown\":\"ignored\" } ");

        assertThat(event).isEqualTo(HistoryEvent.of(0, "w2", Type.OK, Op.READ).withValue("/\b\f"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "{", "{\"time_us\":1}", "{\"time_us\":1,\"process\":\"w1\",\"type\":\"ok\"}",
        "{\"time_us\":1.5,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\"}",
        "{\"time_us\":9223372036854775808,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\"}",
        "{\"time_us\":\"1\",\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\"}",
        "{\"time_us\":1,\"process\":2,\"type\":\"ok\",\"op\":\"read\"}",
        "{\"time_us\":1,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"jump\"}",
        "{\"time_us\":1,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\"} {}",
        "{time_us:1,'process':'w1',\"type\":\"ok\",\"op\":\"read\"}",
        "{\"time_us\":1,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\",\"value\":null}"})
    void parse_malformedLine_throwsNamingTheLine(String line) {
        assertThatThrownBy(() -> HistoryJson.parse(line))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bad history line: ")
                .hasMessageEndingWith(": " + line);
    }

    @Test
    void parse_overlongLine_isRefused() {
        String line = "{\"time_us\":1,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\",\"value\":\""
                + "x".repeat(HistoryJson.LINE_CHARS_MAX) + "\"}";

        assertThatThrownBy(() -> HistoryJson.parse(line)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds " + HistoryJson.LINE_CHARS_MAX);
    }

    @Test
    void write_events_oneObjectPerLineAndReadBack(@TempDir Path directory) throws IOException {
        List<HistoryEvent> events = List.of(HistoryEvent.of(1, "w1", Type.INVOKE, Op.ACQUIRE),
                HistoryEvent.of(2, "nemesis", Type.INFO, Op.KILL).withTarget(HARD));
        Path file = directory.resolve("history.jsonl");

        HistoryJson.write(file, events);

        assertThat(Files.readAllLines(file, StandardCharsets.UTF_8))
                .containsExactly(HistoryJson.format(events.get(0)), HistoryJson.format(events.get(1)));
        assertThat(HistoryJson.read(file)).isEqualTo(events);
    }
}

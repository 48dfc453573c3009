package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

class DurationsTest {

    @ParameterizedTest
    @CsvSource({"500ms, 500", "10s, 10000", "2m, 120000", "1h, 3600000", "0s, 0", "0ms, 0", "0, 0",
        "168h, 604800000"})
    void parse_wholeNumberAndUnit_returnsThatDuration(String text, long millis) {
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "10", "ms", "-1s", "1.5s", "10x", "1d", "5 s", "s10", "10S", "1h30m",
        "99999999999999s"})
    void parse_malformedText_failsNamingTheText(String text) {
        assertThatThrownBy(() -> Durations.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + text + "'")
                .hasMessageContaining("300us, 500ms, 10s, 2m or 1h");
    }

    @ParameterizedTest
    @ValueSource(strings = {"169h", "10081m", "604801s", "9999999h"})
    void parse_longerThanTheMaximum_failsNamingTheLimit(String text) {
        assertThatThrownBy(() -> Durations.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("'" + text + "' is longer than the 7 days allowed");
    }

    @Test
    void parse_null_failsAsMalformed() {
        assertThatThrownBy(() -> Durations.parse(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'null' is not a duration");
    }

    @Test
    void converter_malformedText_throwsTypeConversionWithTheMessage() {
        assertThatThrownBy(() -> new Durations.Converter().convert("3 weeks"))
                .isInstanceOf(TypeConversionException.class)
                .hasMessageContaining("'3 weeks' is not a duration");
    }

    @ParameterizedTest
    @CsvSource({"1500, 1500ms", "0, 0s", "10000, 10s", "120000, 2m", "7200000, 2h", "90000, 90s"})
    void format_duration_usesTheLargestExactUnit(long millis, String text) {
        assertThat(Durations.format(Duration.ofMillis(millis))).isEqualTo(text);
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @CsvSource({"300us, 300", "1us, 1", "0us, 0", "1500us, 1500"})
    void parse_microseconds_returnsThatDuration(String text, long micros) {
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofNanos(micros * 1_000));
    }

    @ParameterizedTest
    @CsvSource({"300, 300us", "1500, 1500us", "1, 1us"})
    void format_subMillisecondDuration_usesMicroseconds(long micros, String text) {
        assertThat(Durations.format(Duration.ofNanos(micros * 1_000))).isEqualTo(text);
        assertThat(Durations.parse(text)).isEqualTo(Duration.ofNanos(micros * 1_000));
    }
}

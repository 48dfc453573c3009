package io.fencer.cli;

import io.fencer.core.FuzzBudget;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.code_intelligence.jazzer.mutation.annotation.NotNull;
import java.time.Duration;

/**
 * Fuzzes the command line's duration syntax: any text parses to a duration in [0, {@link Durations#DURATION_MAX}]
 * that formats back to an equal one, or is refused with {@link IllegalArgumentException}; any other throwable (an
 * overflow's {@link ArithmeticException}, say) or a hang is a finding.
 */
class DurationsFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void parse_anyText_parsesOrRefuses(@NotNull String text) throws Exception {
        FuzzBudget.check(text.length() * 3, () -> {
            Duration parsed;
            try {
                parsed = Durations.parse(text);
            } catch (IllegalArgumentException refused) {
                return; // the typed refusal
            }
            if (parsed.isNegative() || parsed.compareTo(Durations.DURATION_MAX) > 0) {
                throw new AssertionError("'" + text + "' parsed to " + parsed + ", outside [0, 7 days]");
            }
            if (!Durations.parse(Durations.format(parsed)).equals(parsed)) {
                throw new AssertionError("'" + text + "' parsed to " + parsed + ", which formats to "
                        + Durations.format(parsed) + ", another duration");
            }
        });
    }
}

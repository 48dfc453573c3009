package io.fencer.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.workload.Workload;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Saved runs checked again. The fixtures are real runs of {@code fencer chaos} (seed 1, pauses past the lease and a
 * store kill): two controls with fencing off, whose violations the checkers must keep finding, and one fenced run
 * that must stay clean. Each fixture's run.json holds the verdict the run printed; checking again must give the same.
 */
class ChaosCheckTest {
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @ParameterizedTest
    @ValueSource(strings = {"counter-control", "set-control", "counter-fenced"})
    void check_savedRun_findsWhatTheRunFound(String name) throws IOException {
        Path run = fixture(name);

        CheckResult result = ChaosCheck.check(run, null, out);

        assertThat(result.violationsByCheck()).isEqualTo(recordedChecks(run));
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("checks:")
                .contains("verdict: " + (result.valid() ? "0 violations" : result.violationCount() + " violation(s)"));
    }

    @Test
    void check_controlRuns_findViolations() throws IOException {
        CheckResult counter = ChaosCheck.check(fixture("counter-control"), null, out);
        CheckResult set = ChaosCheck.check(fixture("set-control"), null, out);

        assertThat(counter.violationsByCheck().get(CheckResult.NO_LOST_UPDATE)).isPositive();
        assertThat(counter.violationsByCheck().get(CheckResult.TOKENS_MONOTONIC)).isPositive();
        assertThat(set.violationsByCheck().get(CheckResult.SET_COMPLETE)).isPositive();
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("expected: fencing was off");
    }

    @Test
    void check_fencedRun_isCleanAndExercisedTheFaults() throws IOException {
        CheckResult result = ChaosCheck.check(fixture("counter-fenced"), null, out);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts().get("pauses")).isPositive();
        assertThat(result.counts().get("writes_stale")).as("stale writes refused").isPositive();
    }

    @Test
    void check_historyFileAloneWithWorkloadGiven_checksAsThatWorkload() throws IOException {
        Path history = fixture("set-control").resolve(ChaosCheck.HISTORY_FILE);

        CheckResult result = ChaosCheck.check(history, new ChaosCheck.Settings(Workload.SET, 1, true), out);

        assertThat(result.workload()).isEqualTo(Workload.SET);
        assertThat(result.valid()).isFalse();
    }

    @Test
    void check_noHistory_failsNamingThePath(@TempDir Path empty) {
        assertThatThrownBy(() -> ChaosCheck.check(empty, null, out)).isInstanceOf(IOException.class)
                .hasMessageContaining(empty.resolve(ChaosCheck.HISTORY_FILE).toString());
    }

    @Test
    void check_historyNotJson_failsNamingTheFile(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve(ChaosCheck.HISTORY_FILE), "not a history\n");

        assertThatThrownBy(() -> ChaosCheck.check(dir, null, out)).isInstanceOf(IOException.class)
                .hasMessageContaining("is not a chaos history");
    }

    @Test
    void check_runFileOfAnUnknownWorkload_failsNamingTheFile(@TempDir Path dir) throws IOException {
        Files.copy(fixture("counter-fenced").resolve(ChaosCheck.HISTORY_FILE), dir.resolve(ChaosCheck.HISTORY_FILE));
        Files.writeString(dir.resolve(ChaosCheck.RUN_FILE), "{\"workload\": \"queue\"}");

        assertThatThrownBy(() -> ChaosCheck.check(dir, null, out)).isInstanceOf(IOException.class)
                .hasMessageContaining(ChaosCheck.RUN_FILE).hasMessageContaining("QUEUE");
    }

    @Test
    void check_runFileOfAnotherFormat_failsNamingTheFileAndTheFormat(@TempDir Path dir) throws IOException {
        Files.copy(fixture("counter-fenced").resolve(ChaosCheck.HISTORY_FILE), dir.resolve(ChaosCheck.HISTORY_FILE));
        Files.writeString(dir.resolve(ChaosCheck.RUN_FILE), "{\"format\": 2, \"workload\": \"counter\"}");

        assertThatThrownBy(() -> ChaosCheck.check(dir, null, out)).isInstanceOf(IOException.class)
                .hasMessageContaining(ChaosCheck.RUN_FILE).hasMessageContaining("format is 2")
                .hasMessageContaining("reads format 1");
    }

    private static Path fixture(String name) {
        try {
            return Path.of(ChaosCheckTest.class.getResource("histories/" + name).toURI());
        } catch (URISyntaxException e) {
            throw new AssertionError(e);
        }
    }

    private static Map<String, Integer> recordedChecks(Path run) throws IOException {
        JsonObject checks = JsonParser.parseString(Files.readString(run.resolve(ChaosCheck.RUN_FILE)))
                .getAsJsonObject().getAsJsonObject("checks");
        Map<String, Integer> recorded = new LinkedHashMap<>();
        checks.entrySet().forEach(entry -> recorded.put(entry.getKey(), entry.getValue().getAsInt()));
        return recorded;
    }
}

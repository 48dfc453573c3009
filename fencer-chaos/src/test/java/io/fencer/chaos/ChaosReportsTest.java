package io.fencer.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Violation;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The summary JSON of a chaos run ({@code --summary}), laid out as {@code docs/chaos-summary.json} shows. */
class ChaosReportsTest {
    private static final Path HARD_HISTORY = Path.of("/tmp/run \"q\" \\ \u00e9\u4e2d\ud83d\ude00/history.jsonl");

    @Test
    void summaryJson_faultsAndViolations_pinsTheLayout() {
        Map<String, Integer> checks = new LinkedHashMap<>();
        checks.put(CheckResult.TOKENS_MONOTONIC, 1);
        checks.put(CheckResult.NO_LOST_UPDATE, 0);
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("grants", Long.MAX_VALUE);
        counts.put("final_value", 7L);
        CheckResult result = new CheckResult(Workload.COUNTER, checks,
                List.of(new Violation(CheckResult.TOKENS_MONOTONIC, 5, "w1", 3, "token 3 after 4")), counts);
        List<Fault> schedule = List.of(new Fault(5025, Fault.Kind.KILL_LOCK, 0, 867),
                new Fault(Long.MAX_VALUE, Fault.Kind.PAUSE, 4, 3971));

        String json = ChaosReports.summaryJson(options(Long.MAX_VALUE), schedule, result, HARD_HISTORY);

        assertThat(json).isEqualTo("{\n"
                + "  \"format\": 1,\n"
                + "  \"seed\": 9223372036854775807,\n"
                + "  \"fencing\": true,\n"
                + "  \"workload\": \"counter\",\n"
                + "  \"workers\": 5,\n"
                + "  \"peers\": 3,\n"
                + "  \"duration_ms\": 300000,\n"
                + "  \"ttl_ms\": 2000,\n"
                + "  \"valid\": false,\n"
                + "  \"violations\": 1,\n"
                + "  \"checks\": {\"tokens-monotonic\": 1, \"no-lost-update\": 0},\n"
                + "  \"counts\": {\"grants\": 9223372036854775807, \"final_value\": 7},\n"
                + "  \"faults\": [\n"
                + "    {\"at_ms\": 5025, \"kind\": \"kill-lock\", \"worker\": 0, \"duration_ms\": 867},\n"
                + "    {\"at_ms\": 9223372036854775807, \"kind\": \"pause\", \"worker\": 4, \"duration_ms\": 3971}\n"
                + "  ],\n"
                + "  \"history\": \"/tmp/run \\\"q\\\" \\\\ \u00e9\u4e2d\ud83d\ude00/history.jsonl\"\n"
                + "}\n");
        JsonObject read = JsonParser.parseString(json).getAsJsonObject();
        assertThat(read.get("seed").getAsLong()).isEqualTo(Long.MAX_VALUE);
        assertThat(read.get("history").getAsString()).isEqualTo(HARD_HISTORY.toAbsolutePath().toString());
    }

    @Test
    void summaryJson_noFaultsNoChecks_writesEmptyBrackets() {
        CheckResult result = new CheckResult(Workload.SET, Map.of(), List.of(), Map.of());

        String json = ChaosReports.summaryJson(options(-3), List.of(), result, HARD_HISTORY);

        assertThat(json).startsWith("{\n  \"format\": 1,\n  \"seed\": -3,\n").contains(",\n  \"valid\": true,\n  \"violations\": 0,\n"
                + "  \"checks\": {},\n  \"counts\": {},\n  \"faults\": [],\n  \"history\": ").endsWith("\"\n}\n");
    }

    @Test
    void summaryJson_semaphoreWorkload_namesThePermitsAfterTheWorkers() {
        ChaosOptions semaphore = new ChaosOptions(3, Workload.SEMAPHORE, Duration.ofSeconds(8), 3, Set.of(), 1,
                Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(5), true, Path.of("/tmp/run"), null,
                null, null, Set.of(Fault.Partition.values()), false, 2);
        CheckResult result = new CheckResult(Workload.SEMAPHORE, Map.of(), List.of(), Map.of());

        String json = ChaosReports.summaryJson(semaphore, List.of(), result, HARD_HISTORY);

        assertThat(json).contains("  \"workload\": \"semaphore\",\n  \"workers\": 3,\n  \"permits\": 2,\n");
        assertThat(ChaosReports.facts(semaphore, List.of())).contains("3 workers, semaphore of 2 permits, 8 s");
        assertThat(summaryJsonOfCounter()).doesNotContain("permits");
    }

    @Test
    void write_summaryFileAndRunFile_parseAndCarryTheFormatVersionFirst(@TempDir Path dir) throws IOException {
        Path summary = dir.resolve("summary.json");
        ChaosOptions options = new ChaosOptions(5, Workload.COUNTER, Duration.ofMinutes(5), 7,
                Set.of(Fault.Kind.PAUSE), 3, Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(5),
                true, dir, null, null, summary);
        CheckResult result = new CheckResult(Workload.COUNTER, Map.of(), List.of(), Map.of("grants", 3L));
        Path history = dir.resolve(ChaosCheck.HISTORY_FILE);

        ChaosReports.write(options, List.of(), List.of(), result, history);

        for (Path file : List.of(summary, dir.resolve(ChaosCheck.RUN_FILE))) {
            JsonObject read = JsonParser.parseString(Files.readString(file)).getAsJsonObject();
            assertThat(read.keySet().iterator().next()).as(file.toString()).isEqualTo("format");
            assertThat(read.get("format").getAsInt()).as(file.toString()).isEqualTo(1);
            assertThat(read.get("seed").getAsLong()).as(file.toString()).isEqualTo(7);
        }
    }

    private static String summaryJsonOfCounter() {
        CheckResult result = new CheckResult(Workload.COUNTER, Map.of(), List.of(), Map.of());
        return ChaosReports.summaryJson(options(1), List.of(), result, HARD_HISTORY);
    }

    private static ChaosOptions options(long seed) {
        return new ChaosOptions(5, Workload.COUNTER, Duration.ofMinutes(5), seed, Set.of(Fault.Kind.PAUSE), 3,
                Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(5), true, Path.of("/tmp/run"), null,
                null, null);
    }
}

package io.fencer.chaos.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A worker's command line, written and read back by the one class that owns it. */
class WorkerArgumentsTest {
    /** Every option away from the command's old defaults (counter, 100 ms, 2 s, seed 0, fenced). */
    static final WorkerOptions UNUSUAL = new WorkerOptions("w 7", List.of("127.0.0.1:7001", "[::1]:7002",
            "lock.example:7003"), "store.example:7004", "ledger, the odd one", Workload.SET,
            Duration.ofNanos(1_234_567_891), Duration.ofMillis(3_500), false, Path.of("/tmp/fencer run/w 7.jsonl"),
            -9_876_543_210L, Long.MIN_VALUE);

    @Test
    void parse_toArgumentsOfEveryOptionChanged_givesEqualOptions() {
        List<String> arguments = WorkerArguments.toArguments(UNUSUAL);

        assertThat(WorkerArguments.parse(arguments)).isEqualTo(UNUSUAL);
        assertThat(arguments).contains("--workload=set", "--no-fencing", "--lock-server=[::1]:7002");
    }

    @Test
    void parse_toArgumentsOfSemaphoreWorker_givesEqualOptionsWithPermits() {
        WorkerOptions semaphore = new WorkerOptions("w2", List.of("127.0.0.1:7001"), "127.0.0.1:7003", "chaos",
                Workload.SEMAPHORE, Duration.ofMillis(100), Duration.ofSeconds(2), true, Path.of("/tmp/w2.jsonl"), 7,
                11, 3);

        List<String> arguments = WorkerArguments.toArguments(semaphore);

        assertThat(arguments).contains("--workload=semaphore", "--permits=3");
        assertThat(WorkerArguments.parse(arguments)).isEqualTo(semaphore);
    }

    @Test
    void parse_toArgumentsOfReplicatedStoreWorker_givesEqualOptionsWithTheFlagOnce() {
        WorkerOptions replicated = new WorkerOptions("w3", List.of("127.0.0.1:7001", "127.0.0.1:7002"),
                "127.0.0.1:7001,127.0.0.1:7002", "chaos", Workload.COUNTER, Duration.ofMillis(100),
                Duration.ofSeconds(2), true, Path.of("/tmp/w3.jsonl"), 7, 11, 1, true);

        List<String> arguments = WorkerArguments.toArguments(replicated);

        assertThat(arguments).containsOnlyOnce("--replicated-store");
        assertThat(WorkerArguments.parse(arguments)).isEqualTo(replicated);
        assertThat(WorkerArguments.toArguments(UNUSUAL)).doesNotContain("--replicated-store");
        List<String> twice = new ArrayList<>(arguments);
        twice.add("--replicated-store");
        assertThatThrownBy(() -> WorkerArguments.parse(twice)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--replicated-store given twice");
    }

    @Test
    void parse_whenPermitsOutOfRange_throwsNamingTheValue() {
        List<String> arguments = new ArrayList<>(WorkerArguments.toArguments(UNUSUAL));
        arguments.add("--permits=0");

        assertThatThrownBy(() -> WorkerArguments.parse(arguments)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--permits is 0");
    }

    @Test
    void parse_toArgumentsFenced_givesEqualOptions() {
        WorkerOptions fenced = withStrings(UNUSUAL, "w1", "ledger", "/tmp/h.jsonl", true);

        assertThat(WorkerArguments.toArguments(fenced)).doesNotContain("--no-fencing");
        assertThat(WorkerArguments.parse(WorkerArguments.toArguments(fenced))).isEqualTo(fenced);
    }

    @ParameterizedTest(name = "[{0}]")
    @ValueSource(strings = {"", " ", "--", "-", "@file", "@", "--id=w2", "--no-fencing", "a=b=c", "x,y", "--help",
        "--verbose", "-h", "ünï cödé ✓", "tab\there", "'quoted' \"twice\"", "$HOME `ls` ; rm"})
    void parse_toArgumentsOfOddStrings_givesEqualOptions(String odd) {
        WorkerOptions options = withStrings(UNUSUAL, odd, odd, "/tmp/" + odd + "/h.jsonl", true);
        WorkerOptions oddEndpoints = new WorkerOptions(odd, List.of(odd, odd + "2"), odd, odd, Workload.COUNTER,
                Duration.ZERO, Duration.ofSeconds(2), true, Path.of("/tmp/" + odd), 0, 0);

        assertThat(WorkerArguments.parse(WorkerArguments.toArguments(options))).isEqualTo(options);
        assertThat(WorkerArguments.parse(WorkerArguments.toArguments(oddEndpoints))).isEqualTo(oddEndpoints);
    }

    @Test
    void workerCommandAndClientCommand_prefixTheSubcommand() {
        List<String> arguments = WorkerArguments.toArguments(UNUSUAL);

        assertThat(WorkerArguments.workerCommand(UNUSUAL)).startsWith("chaos", "worker").endsWith(
                arguments.toArray(String[]::new)).hasSize(arguments.size() + 2);
        assertThat(WorkerArguments.clientCommand(UNUSUAL)).startsWith("chaos", "client").endsWith(
                arguments.toArray(String[]::new)).hasSize(arguments.size() + 2);
    }

    @Test
    void parse_unknownArgument_failsNamingIt() {
        List<String> arguments = new ArrayList<>(WorkerArguments.toArguments(UNUSUAL));
        arguments.add("--colour=red");

        assertThatThrownBy(() -> WorkerArguments.parse(arguments)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown worker argument '--colour=red'");
        assertThatThrownBy(() -> WorkerArguments.parse(List.of("--id"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown worker argument '--id'");
    }

    @Test
    void parse_missingOrRepeatedArgument_failsNamingIt() {
        List<String> arguments = new ArrayList<>(WorkerArguments.toArguments(UNUSUAL));
        List<String> withoutStore = arguments.stream().filter(a -> !a.startsWith("--store=")).toList();
        List<String> twoSeeds = new ArrayList<>(arguments);
        twoSeeds.add("--seed=4");
        List<String> twoNoFencing = new ArrayList<>(arguments);
        twoNoFencing.add("--no-fencing");

        assertThatThrownBy(() -> WorkerArguments.parse(withoutStore)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --store is missing");
        assertThatThrownBy(() -> WorkerArguments.parse(twoSeeds)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --seed given 2 times");
        assertThatThrownBy(() -> WorkerArguments.parse(twoNoFencing)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --no-fencing given twice");
    }

    @Test
    void parse_malformedValues_failNamingTheValue() {
        assertThatThrownBy(() -> WorkerArguments.parse(replaced("--seed=", "--seed=12x")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --seed is '12x', not a number");
        assertThatThrownBy(() -> WorkerArguments.parse(replaced("--ttl=", "--ttl=2s")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --ttl is '2s', not an ISO-8601 duration");
        assertThatThrownBy(() -> WorkerArguments.parse(replaced("--workload=", "--workload=queue")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("worker argument --workload is 'queue', not a workload");
        assertThatThrownBy(() -> WorkerArguments.parse(replaced("--think-max=", "--think-max=PT-1S")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative think");
    }

    @Test
    void parse_moreArgumentsThanTheLimit_fails() {
        List<String> arguments = Collections.nCopies(WorkerArguments.ARGUMENTS_MAX + 1, "--lock-server=a:1");

        assertThatThrownBy(() -> WorkerArguments.parse(arguments)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("65 worker arguments, more than the 64 allowed");
    }

    private static List<String> replaced(String prefix, String argument) {
        return WorkerArguments.toArguments(UNUSUAL).stream().map(a -> a.startsWith(prefix) ? argument : a).toList();
    }

    private static WorkerOptions withStrings(WorkerOptions options, String id, String lock, String history,
            boolean fencing) {
        return new WorkerOptions(id, options.lockEndpoints(), options.storeEndpoint(), lock, options.workload(),
                options.thinkMax(), options.ttl(), fencing, Path.of(history), options.originNanos(), options.seed());
    }
}

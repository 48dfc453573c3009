package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencer chaos check}: exit codes and verdicts on the saved runs the chaos module keeps as fixtures. */
class ChaosCheckCommandTest {
    /** The chaos module's saved runs; tests run in this module's directory. */
    private static final Path HISTORIES = Path.of("..", "fencer-chaos", "src", "test", "resources", "io", "fencer",
            "chaos", "histories");

    @Test
    void check_savedControlRun_exitsSevenListingTheViolations() {
        CommandRun run = CommandRun.run("chaos", "check", HISTORIES.resolve("counter-control").toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_VIOLATIONS);
        assertThat(run.out()).contains("VIOLATION no-lost-update", "fencing OFF")
                .contains("-- expected: fencing was off");
    }

    @Test
    void check_savedFencedRun_exitsZero() {
        CommandRun run = CommandRun.run("chaos", "check", HISTORIES.resolve("counter-fenced").toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_OK);
        assertThat(run.out()).contains("verdict: 0 violations").doesNotContain("VIOLATION");
    }

    @Test
    void check_noHistoryThere_exitsOneNamingThePath(@TempDir Path empty) {
        CommandRun run = CommandRun.run("chaos", "check", empty.toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).contains("no chaos history at " + empty.resolve("history.jsonl"));
    }

    @Test
    void check_unknownWorkload_isAUsageErrorNamingIt() {
        CommandRun run = CommandRun.run("chaos", "check", HISTORIES.resolve("counter-fenced").toString(),
                "--workload", "queue");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--workload must be counter, set or semaphore, not 'queue'");
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Usage of {@code chaos} and {@code demo}, checked before any process is started. */
class ChaosUsageTest {

    @Test
    void help_topLevel_listsDemoChaosAndTheViolationsExitCode() {
        CommandRun run = CommandRun.run("--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("demo", "chaos", "7   chaos: the checker found violations");
        assertThat(run.out()).doesNotContain("chaos worker").doesNotContain("chaos client");
    }

    @Test
    void help_chaos_describesFaultsSeedAndControl() {
        CommandRun run = CommandRun.run("chaos", "--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("--seed", "--faults", "--no-fencing", "--peers", "--html", "--svg",
                "--summary", "--permits", "semaphore", "kill-store", "kill-lock", "partition", "flaky", "--partitions", "leader-minority",
                "root", "clock", "--clock-drift", "--clock-jump");
        assertThat(run.out()).as("the test-only switch stays hidden").doesNotContain("unsafe");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "chaos --workers 0 | workers 0 is outside [1, 32]",
        "chaos --workers 33 | workers 33 is outside [1, 32]",
        "chaos --workload queue | --workload must be counter, set or semaphore, not 'queue'",
        "chaos --workload semaphore --workers 3 --permits 3 | permits 3 is outside [1, workers - 1 = 2]",
        "chaos --workload semaphore --permits 0 | permits 0 is outside [1, workers - 1 = 4]",
        "chaos --workload counter --permits 2 | --permits applies to --workload semaphore only",
        "chaos --faults pause,reboot | unknown fault 'reboot'",
        "chaos --faults partition --partitions split | unknown partition 'split'",
        "chaos --peers 2 | peers must be 1, 3 or 5, not 2",
        "chaos --faults membership,kill-lock | the membership fault needs --peers 3 or 5, not 1",
        "chaos --ttl 500ms | ttl PT0.5S is outside [1 s, 60 s]",
        "chaos --duration 0s | duration PT0S is outside [1 s, PT24H]",
        "chaos --think-max 11s | think PT11S is outside [0, 10 s]",
        "chaos --duration soon | 'soon' is not a duration",
        "chaos --faults clock --clock-drift fast | --clock-drift must be a percentage such as 0.5% or a fraction",
        "chaos --faults clock --clock-drift 95% | clock drift 0.95 is outside [0, 0.9]",
        "chaos --faults clock --clock-jump 2m | clock jump PT2M is outside [0, PT1M]",
        "demo --ttl forever | 'forever' is not a duration",
    })
    void execute_badArguments_exitsTwoWithAMessageNamingTheProblem(String arguments, String message) {
        CommandRun run = CommandRun.run(arguments.trim().split(" +"));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).startsWith("fencer: ").contains(message).contains("--help' for more information");
        assertThat(run.out()).isEmpty();
    }
}

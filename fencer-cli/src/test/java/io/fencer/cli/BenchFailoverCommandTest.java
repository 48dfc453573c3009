package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.bench.FailoverBench;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Usage and output of {@code bench failover}, checked without starting a process (see BenchFailoverProcessTest). */
class BenchFailoverCommandTest {

    @Test
    void help_bench_listsFailoverBesideLockAndStore() {
        CommandRun run = CommandRun.run("bench", "--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("lock", "store", "failover");
    }

    @Test
    void help_benchFailover_describesItsOptions() {
        CommandRun run = CommandRun.run("bench", "failover", "--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("--peers", "--kills", "--ttl", "--json", "SIGKILL");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "bench failover --peers 1 | --peers must be 3 or 5, not 1",
        "bench failover --peers 4 | --peers must be 3 or 5, not 4",
        "bench failover --kills 0 | --kills 0 is outside [1, 100]",
        "bench failover --kills 101 | --kills 101 is outside [1, 100]",
        "bench failover --ttl 500ms | --ttl 500ms is outside [1s, 1h]",
        "bench failover --ttl 2h | --ttl 2h is outside [1s, 1h]",
        "bench failover --ttl soon | 'soon' is not a duration",
    })
    void execute_badArguments_exitsTwoWithAMessageNamingTheLimit(String arguments, String message) {
        CommandRun run = CommandRun.run(arguments.trim().split(" +"));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).startsWith("fencer: ").contains(message);
        assertThat(run.out()).isEmpty();
    }

    @Test
    void toJson_twoRounds_hasTheSummaryMembers() {
        FailoverBench.Result result = new FailoverBench.Result(new FailoverBench.Settings(3, 2, Duration.ofSeconds(10)),
                List.of(new FailoverBench.Round(1, "lock-n1", 420, 900, 3, 0, true),
                        new FailoverBench.Round(2, "lock-n3", 380, 1_100, 1, 0, true)), List.of(7L, 8L, 9L, 10L, 11L));

        String json = BenchFailoverCommand.toJson(result).toString();

        assertThat(json).startsWith("{\"format\":1,\"peers\":3,\"kills\":2,\"ttlMillis\":10000,"
                + "\"pausesMillis\":[900,1100],"
                + "\"medianPauseMillis\":1000,\"minPauseMillis\":900,\"maxPauseMillis\":1100,"
                + "\"leaderKnownMillis\":[420,380],\"failedCalls\":4,\"sessionsLost\":0,\"rounds\":[")
                .endsWith("\"processIds\":[7,8,9,10,11]}");
    }

    @Test
    void roundLine_lostSessionAndNoGrant_saysSoLoudly() {
        String line = BenchFailoverCommand.roundLine(new FailoverBench.Round(2, "lock-n2", 500, -1, 9, 1, false));

        assertThat(line).isEqualTo("kill 2 (lock-n2): kill -> new leader 500 ms, kill -> next grant none (timed out),"
                + " failed calls 9, SESSION LOST x1, restarted peer DID NOT CATCH UP");
    }
}

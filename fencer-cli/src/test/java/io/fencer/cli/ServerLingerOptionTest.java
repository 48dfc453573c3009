package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.server.ServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code fencer server --linger} and {@code --grants-ahead}, the proposer's switches, arrive in the server's settings,
 * and are refused beyond their maximum.
 */
class ServerLingerOptionTest {
    @TempDir
    Path directory;

    @Test
    void linger_defaultGivenOrZero_arrivesInTheConfig() {
        assertThat(config().linger()).isEqualTo(ServerConfig.LINGER_DEFAULT).isEqualTo(Duration.ofMillis(1));
        assertThat(config("--linger", "0").linger()).isZero();
        assertThat(config("--linger", "0us").linger()).isZero();
        assertThat(config("--linger", "2500us").linger()).isEqualTo(Duration.ofNanos(2_500_000));
    }

    @Test
    void execute_lingerAboveTheMaximum_isAUsageErrorNamingBoth() {
        CommandRun run = CommandRun.run("server", "--data", directory.toString(), "--port", "0", "--linger", "11ms");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--linger 11ms is longer than the 10ms allowed");
    }

    @Test
    void execute_lingerNotADuration_isAUsageErrorNamingTheValue() {
        CommandRun run = CommandRun.run("server", "--data", directory.toString(), "--port", "0", "--linger", "-1ms");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("'-1ms' is not a duration");
    }

    @Test
    void help_server_describesLinger() {
        CommandRun run = CommandRun.run("server", "--help");

        assertThat(run.out().replaceAll("\\s+", " ")).contains("--linger=DURATION").contains("0 = off, at most 10ms");
    }

    @Test
    void grantsAhead_defaultGivenOrZero_arrivesInTheConfig() {
        assertThat(config().grantsAhead()).isEqualTo(ServerConfig.GRANTS_AHEAD_DEFAULT).isEqualTo(8);
        assertThat(config("--grants-ahead", "0").grantsAhead()).isZero();
        assertThat(config("--grants-ahead", "64").grantsAhead()).isEqualTo(64);
    }

    @Test
    void execute_grantsAheadOutsideItsRange_isAUsageErrorNamingTheValueAndTheRange() {
        for (String value : new String[] {"65", "-1"}) {
            CommandRun run = CommandRun.run("server", "--data", directory.toString(), "--port", "0",
                    "--grants-ahead", value);

            assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
            assertThat(run.err()).contains("--grants-ahead " + value + " must lie in [0, 64]");
        }
    }

    private ServerConfig config(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        String[] arguments = new String[options.length + 4];
        arguments[0] = "server";
        arguments[1] = "--data";
        arguments[2] = directory.toString();
        arguments[3] = "--port=0";
        System.arraycopy(options, 0, arguments, 4, options.length);
        commandLine.parseArgs(arguments);
        return commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config();
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Usage of {@code fencer peers} and {@code fencer server --join}, checked before anything connects. */
class PeersUsageTest {

    @Test
    void help_peersAndEachSubcommand_fitEightyColumnsAndNameTheOrderOfSteps() {
        for (List<String> command : List.of(List.of("peers"), List.of("peers", "list"), List.of("peers", "add"),
                List.of("peers", "promote"), List.of("peers", "remove"), List.of("server"))) {
            String[] arguments = java.util.stream.Stream.concat(command.stream(), java.util.stream.Stream.of("--help"))
                    .toArray(String[]::new);
            CommandRun run = CommandRun.run(arguments);

            assertThat(run.exitCode()).as("%s", command).isZero();
            assertThat(run.out().lines()).as("%s", command).allSatisfy(line -> assertThat(line.length())
                    .as(line).isLessThanOrEqualTo(80));
        }
        // picocli wraps a description at any space: compare with the line breaks folded
        assertThat(CommandRun.run("peers", "--help").out().replaceAll("\\s+", " ")).contains("--join",
                "fencer peers add ID --raft",
                "list", "add", "promote", "remove");
        assertThat(CommandRun.run("server", "--help").out()).contains("--join", "--join-wait");
    }

    @Test
    void add_withoutTheRaftAddress_isAUsageError() {
        CommandRun run = CommandRun.run("peers", "add", "n4", "--client", "127.0.0.1:7070");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--raft");
    }

    @Test
    void server_joinWithPeers_isAUsageErrorNamingBoth() {
        CommandRun run = CommandRun.run("server", "--id", "n4", "--join", "127.0.0.1:7070", "--peers",
                "n4=127.0.0.1:7170:7172");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--join and --peers contradict each other");
    }

    @Test
    void peers_withoutSubcommand_namesTheChoices() {
        CommandRun run = CommandRun.run("peers");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("choose list, add, promote or remove");
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.server.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * {@code fencer server} and {@code fencer store-server} refuse, as usage errors naming the value, what they used to
 * accept and fail on later, or refuse naming something the user never gave: odd peer ids, a lock delay beyond the
 * longest session, a port derived past 65535, a data directory that is a file.
 */
class ServerOptionChecksTest {
    @TempDir
    Path directory;

    @Test
    void config_oddId_isAUsageErrorNamingTheId() {
        String tooLong = "n".repeat(65);
        for (String odd : List.of("", "a b/../c", "..", ".", "n\u00011", tooLong, "n1/", "é")) {
            String shown = odd.replace("\u0001", "\\u0001");
            assertThatThrownBy(() -> server("--id", odd)).as("--id '%s'", shown)
                    .isInstanceOf(ParameterException.class)
                    .hasMessageContaining("--id")
                    .hasMessageContaining("'" + shown + "'")
                    .hasMessageContaining("1 to 64 characters of letters, digits, '-', '_' and '.'");
        }
    }

    @Test
    void config_oddIdInPeers_isAUsageErrorNamingTheId() {
        for (String odd : List.of("..", "a b", "x/y")) {
            assertThatThrownBy(() -> server("--id", "n1", "--raft-secret-file", directory.resolve("s").toString(),
                    "--peers", "n1=127.0.0.1:7070," + odd + "=127.0.0.1:7170")).as("peer id '%s'", odd)
                    .isInstanceOf(ParameterException.class)
                    .hasMessageContaining("'" + odd + "'")
                    .hasMessageContaining("1 to 64 characters");
        }
    }

    @Test
    void config_idsOfTheDocsAndTests_areAccepted() {
        // The control: every id the documentation, the harnesses and the tests use is valid.
        for (String id : List.of("n1", "r1", "w2", "m12-n3", "c4-n1", "s17", "node_a.example", "n".repeat(64))) {
            assertThat(server("--id", id).id()).isEqualTo(id);
        }
        ServerConfig group = server("--id", "n2", "--raft-secret-file", directory.resolve("s").toString(), "--peers",
                "n1=127.0.0.1:7070,n2=127.0.0.1:7170,n3=127.0.0.1:7270");
        assertThat(group.peers()).extracting(ServerConfig.Peer::id).containsExactly("n1", "n2", "n3");
    }

    @Test
    void config_lockDelayLongerThanTheLongestSession_isAUsageErrorNamingBoth() {
        assertThatThrownBy(() -> server("--lock-delay", "2h")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("--lock-delay 2h is longer than the 1h allowed");
        assertThatThrownBy(() -> server("--lock-delay", "3601s")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("--lock-delay 3601s is longer than the 1h allowed");
        // The control: the longest session's TTL itself is accepted.
        assertThat(server("--lock-delay", "1h").lockDelay()).isEqualTo(Duration.ofHours(1));
    }

    @Test
    void config_portWhoseDefaultRaftPortPasses65535_namesTheDerivedPortAndTheOptionToGive() {
        assertThatThrownBy(() -> server("--port", "65535")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the Raft port 65537 (--port + 2, as --raft-port was not given) is outside "
                        + "[0, 65535]: give --raft-port")
                .hasMessageNotContaining("--raft-port 65537");
        assertThatThrownBy(() -> server("--port", "65535", "--raft-port", "7002")).isInstanceOf(
                ParameterException.class).hasMessageContaining("the admin port 65536 (--port + 1, as --admin-port "
                        + "was not given) is outside [0, 65535]: give --admin-port");
        assertThatThrownBy(() -> server("--port", "65533")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the HTTP port 65536 (--port + 3, as --http-port was not given) is outside "
                        + "[0, 65535]: give --http-port");
        // The control: ports given near the top are accepted.
        assertThat(server("--port", "65535", "--raft-port", "7002", "--admin-port", "-1", "--http-port", "0")
                .raftPort()).isEqualTo(7002);
    }

    @Test
    void config_peerWhoseDefaultRaftPortPasses65535_namesTheDerivedPort() {
        assertThatThrownBy(() -> server("--id", "n1", "--raft-secret-file", directory.resolve("s").toString(),
                "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:65534")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("'n2=127.0.0.1:65534' has a Raft port 65536 (port + 2, as none was given)"
                        + " outside [1, 65535]: give it, as ID=HOST:PORT:RAFTPORT");
    }

    @Test
    void storeServerConfig_portWhoseDefaultHttpPortPasses65535_namesTheDerivedPort() {
        assertThatThrownBy(() -> storeServer("--port", "65535")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the HTTP port 65538 (--port + 3, as --http-port was not given) is outside "
                        + "[0, 65535]: give --http-port");
    }

    @Test
    void config_dataThatIsAFile_isAUsageErrorSayingItIsAFile() throws Exception {
        Path file = Files.writeString(directory.resolve("data"), "not a directory");

        assertThatThrownBy(() -> server("--data", file.toString())).isInstanceOf(ParameterException.class)
                .hasMessageContaining("--data " + file + " is a file, not a directory");
        assertThatThrownBy(() -> storeServer("--data", file.toString())).isInstanceOf(ParameterException.class)
                .hasMessageContaining("--data " + file + " is a file, not a directory");
        assertThatThrownBy(() -> server("--data", file.resolve("n1").toString()))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--data " + file.resolve("n1") + ": " + file + " is a file, not a directory");
        assertThat(file).hasContent("not a directory");
        // The control: a directory that exists, and one still to be made, are accepted.
        assertThat(server("--data", directory.toString()).dataDir()).isEqualTo(directory.toAbsolutePath());
        assertThat(storeServer("--data", directory.resolve("a/b").toString()).dataDir())
                .isEqualTo(directory.resolve("a/b").toAbsolutePath());
    }

    private ServerConfig server(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs(arguments("server", options));
        return commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config();
    }

    private io.fencer.server.StoreServerConfig storeServer(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs(arguments("store-server", options));
        return commandLine.getSubcommands().get("store-server").<StoreServerCommand>getCommand().config();
    }

    /** Returns {@code command} and {@code options}, with a --data of its own unless they give one. */
    private String[] arguments(String command, String... options) {
        List<String> arguments = new java.util.ArrayList<>(List.of(command));
        if (!List.of(options).contains("--data")) {
            arguments.addAll(List.of("--data", directory.resolve("data-" + command).toString()));
        }
        arguments.addAll(List.of(options));
        return arguments.toArray(String[]::new);
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.server.ServerConfig;
import io.fencer.server.StoreServerConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * {@code fencer server} and {@code fencer store-server} refuse one port given twice, as a usage error naming both:
 * before, the start failed binding it with the JDK's bare "fencer: Address already in use", and a --peers list with
 * one address twice was accepted, founding a group whose quorum no start could reach.
 */
class ServerPortCollisionTest {
    @TempDir
    Path directory;

    @Test
    void config_adminPortEqualToPort_isAUsageErrorNamingBoth() {
        assertThatThrownBy(() -> server("--port", "7070", "--admin-port", "7070"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--admin-port is 127.0.0.1:7070, the same as --port");
    }

    @Test
    void config_raftPortOnTheDefaultAdminPort_isAUsageErrorNamingBoth() {
        assertThatThrownBy(() -> server("--port", "7070", "--raft-port", "7071"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--raft-port is 127.0.0.1:7071, the same as --admin-port");
    }

    @Test
    void config_peersWithOneAddressTwice_isAUsageErrorNamingBothPeers() {
        assertThatThrownBy(() -> server("--id", "n1", "--raft-secret-file", directory.resolve("s").toString(),
                "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:7070")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the client port of peer n2 in --peers is 127.0.0.1:7070, the same as --port "
                        + "of peer n1");
    }

    @Test
    void config_peerClientPortOnAnotherPeersRaftPort_isAUsageError() {
        assertThatThrownBy(() -> server("--id", "n1", "--raft-secret-file", directory.resolve("s").toString(),
                "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:7072")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the client port of peer n2 in --peers is 127.0.0.1:7072, the same as "
                        + "--raft-port of peer n1");
    }

    @Test
    void config_defaultHttpPortPast65535_isAUsageErrorNamingItsDerivation() {
        assertThatThrownBy(() -> server("--port", "65533")).isInstanceOf(ParameterException.class)
                .hasMessageContaining("the HTTP port 65536 (--port + 3, as --http-port was not given) is outside "
                        + "[0, 65535]");
    }

    @Test
    void config_theReadmePeersOnOneHostAndFreePorts_areAccepted() {
        // The control: peers 100 ports apart on one host, and "any free port" everywhere, take no port twice.
        String peers = "n1=127.0.0.1:7070,n2=127.0.0.1:7170,n3=127.0.0.1:7270";
        for (String id : new String[] {"n1", "n2", "n3"}) {
            ServerConfig config = server("--id", id, "--raft-secret-file", directory.resolve("s").toString(),
                    "--peers", peers);
            assertThat(config.peers()).hasSize(3);
        }
        assertThat(server("--port", "0").adminPort()).isZero();
        assertThat(server("--port", "7070", "--admin-port", "-1", "--http-port", "0").httpPort()).isEqualTo(-1);
        assertThat(server("--id", "n1", "--raft-secret-file", directory.resolve("s").toString(), "--peers",
                "n1=10.0.0.1:7070,n2=10.0.0.2:7070,n3=10.0.0.3:7070", "--insecure").peers()).hasSize(3);
    }

    @Test
    void storeServerConfig_httpPortEqualToAdminPort_isAUsageErrorNamingBoth() {
        assertThatThrownBy(() -> storeServer("--port", "7080", "--http-port", "7081"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--http-port 7081 is the same port as --admin-port");
        assertThat(storeServer("--port", "7080").port()).isEqualTo(7080);
    }

    private ServerConfig server(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs(arguments("server", options));
        return commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config();
    }

    private StoreServerConfig storeServer(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs(arguments("store-server", options));
        return commandLine.getSubcommands().get("store-server").<StoreServerCommand>getCommand().config();
    }

    private String[] arguments(String command, String... options) {
        String[] arguments = new String[options.length + 3];
        arguments[0] = command;
        arguments[1] = "--data";
        arguments[2] = directory.toString();
        System.arraycopy(options, 0, arguments, 3, options.length);
        return arguments;
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.process.ServerArguments;
import io.fencer.chaos.process.StoreServerArguments;
import io.fencer.chaos.workload.WorkerArguments;
import io.fencer.chaos.workload.WorkerOptions;
import io.fencer.chaos.workload.Workload;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.StoreServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import picocli.CommandLine.ParseResult;

/**
 * The command lines the chaos harness writes (servers, workers, demo clients), read by the real picocli commands:
 * every option must arrive with the value the harness meant.
 */
class HarnessCommandLinesTest {
    @TempDir
    Path directory;

    @Test
    void serverArguments_peerOfAGroup_arriveInTheServerConfig() throws Exception {
        Path data = directory.resolve("data of n2 @odd=dir");
        List<ServerArguments.Peer> peers = List.of(new ServerArguments.Peer("n1", "127.0.0.1", 7401, 7403),
                new ServerArguments.Peer("n2", "127.0.0.1", 7411, 7413),
                new ServerArguments.Peer("n3", "127.0.0.1", 7421, 7423));
        Path secret = directory.resolve("group @odd=dir").resolve("raft.secret");
        Files.createDirectories(secret.getParent());
        ServerArguments arguments = new ServerArguments(data, 7411, 7419, 7413, "n2", peers, secret);

        ServerConfig config = this.<ServerCommand>parse(arguments.toArguments()).config();

        assertThat(config.dataDir()).isEqualTo(data);
        assertThat(config.id()).isEqualTo("n2");
        assertThat(config.host()).isEqualTo("127.0.0.1");
        assertThat(config.port()).isEqualTo(7411);
        assertThat(config.adminPort()).isEqualTo(7419);
        assertThat(config.raftPort()).isEqualTo(7413);
        assertThat(config.peers()).containsExactly(new ServerConfig.Peer("n1", "127.0.0.1", 7401, 7403),
                new ServerConfig.Peer("n2", "127.0.0.1", 7411, 7413),
                new ServerConfig.Peer("n3", "127.0.0.1", 7421, 7423));
        assertThat(config.peerAuth()).isEqualTo(PeerAuth.secretFile(secret));
    }

    @Test
    void serverArguments_alone_arriveInTheServerConfig() {
        Path data = directory.resolve("--port=1 @n1");
        ServerArguments arguments = new ServerArguments(data, 7431, 7439, 7435, "solo", List.of(), null);

        ServerConfig config = this.<ServerCommand>parse(arguments.toArguments()).config();

        assertThat(config.dataDir()).isEqualTo(data);
        assertThat(config.id()).isEqualTo("solo");
        assertThat(config.port()).isEqualTo(7431);
        assertThat(config.adminPort()).isEqualTo(7439);
        assertThat(config.raftPort()).isEqualTo(7435);
        assertThat(config.peers()).isEmpty();
        assertThat(config.peerAuth()).isEqualTo(PeerAuth.defaultFor(data));
    }

    @Test
    void storeServerArguments_arriveInTheStoreServerConfig() {
        Path data = directory.resolve("store data @odd=dir");
        StoreServerArguments arguments = new StoreServerArguments(data, 7441, 7449);

        StoreServerConfig config = this.<StoreServerCommand>parse(arguments.toArguments()).config();

        assertThat(config.dataDir()).isEqualTo(data);
        assertThat(config.port()).isEqualTo(7441);
        assertThat(config.adminPort()).isEqualTo(7449);
    }

    @Test
    void serverArgumentsOnANetworkHost_bindThatAddressInPlaintext() {
        List<ServerArguments.Peer> peers = List.of(new ServerArguments.Peer("n1", "10.77.3.2", 7401, 7403),
                new ServerArguments.Peer("n2", "10.77.3.3", 7411, 7413));
        ServerArguments arguments = new ServerArguments(directory.resolve("n2"), 7411, 7419, 7413, "n2", peers,
                "10.77.3.3", directory.resolve("raft.secret"));

        ServerConfig config = this.<ServerCommand>parse(arguments.toArguments()).config();

        assertThat(config.host()).isEqualTo("10.77.3.3");
        assertThat(config.tls()).isNull();
        assertThat(config.peers()).contains(new ServerConfig.Peer("n1", "10.77.3.2", 7401, 7403));
        StoreServerConfig store = this.<StoreServerCommand>parse(new StoreServerArguments(directory.resolve("s"),
                7441, 7449, "10.77.3.4").toArguments()).config();
        assertThat(store.host()).isEqualTo("10.77.3.4");
        assertThat(store.tls()).isNull();
    }

    @ParameterizedTest(name = "[{0}]")
    @ValueSource(strings = {"w 7", "", "--", "@file", "--id=w2", "--verbose", "--help", "-h", "a=b,c", "ünï ✓"})
    void workerCommand_oddStrings_arriveInTheWorkerAndClientCommands(String odd) {
        WorkerOptions options = new WorkerOptions(odd, List.of("127.0.0.1:7451", "[::1]:7452"), "127.0.0.1:7453",
                "ledger " + odd, Workload.SET, Duration.ofMillis(1_234), Duration.ofMillis(3_500), false,
                directory.resolve(odd + ".jsonl"), -9_876_543_210L, Long.MIN_VALUE);

        ChaosWorkerCommand worker = parse(WorkerArguments.workerCommand(options));
        ChaosClientCommand client = parse(WorkerArguments.clientCommand(options));

        assertThat(worker.options()).isEqualTo(options);
        assertThat(client.options()).isEqualTo(options);
    }

    /** Parses {@code arguments} with the whole {@code fencer} command and returns the subcommand it chose. */
    private <T> T parse(List<String> arguments) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        ParseResult result = commandLine.parseArgs(arguments.toArray(String[]::new));
        while (result.hasSubcommand()) {
            result = result.subcommand();
        }
        return result.commandSpec().commandLine().getCommand();
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.TokenKeys;
import io.fencer.server.FencerStoreServer;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.StoreServerConfig;
import io.fencer.server.net.PortLimits;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** Usage of the command, checked before it connects anywhere: help, version, and usage errors (exit 2). */
class MainUsageTest {

    @Test
    void help_topLevel_listsCommandsAndExitCodes() {
        CommandRun run = CommandRun.run("--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("server", "store-server", "keygen", "lock", "bench", "Exit codes:",
                "lease lost");
        assertThat(run.err()).isEmpty();
    }

    @Test
    void help_everySubcommand_rendersWithoutPicocliWarnings() {
        // Regression: a bare '%' in a description ("bench-<i % N>") made picocli warn on stderr at every --help.
        PrintStream stderr = System.err;
        ByteArrayOutputStream warnings = new ByteArrayOutputStream();
        List<String> rendered = new ArrayList<>();
        try {
            System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8));
            renderUsage(Main.newCommandLine(new Main()), rendered);
        } finally {
            System.setErr(stderr);
        }

        assertThat(rendered).contains("fencer bench lock", "fencer bench store", "fencer lock exec");
        assertThat(warnings.toString(StandardCharsets.UTF_8)).isEmpty();
    }

    private static void renderUsage(CommandLine command, List<String> rendered) {
        String usage = command.getUsageMessage();
        assertThat(usage).as("usage of %s", command.getCommandSpec().qualifiedName())
                .doesNotContain("%n");
        rendered.add(command.getCommandSpec().qualifiedName());
        for (CommandLine subcommand : command.getSubcommands().values()) {
            renderUsage(subcommand, rendered);
        }
    }

    @Test
    void help_lockExec_describesTheEnvironment() {
        CommandRun run = CommandRun.run("lock", "exec", "--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("FENCER_TOKEN", "--kill-after", "--server");
    }

    @Test
    void version_printsTheProjectVersion() {
        CommandRun run = CommandRun.run("--version");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).startsWith("fencer 0.").doesNotContain("${");
    }

    @Test
    void execute_noCommand_isUsageErrorNamingTheChoices() {
        CommandRun run = CommandRun.run();

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("fencer: Missing command: choose server, store-server, lock, kv, peers, bench, demo or chaos")
                .contains("Try 'fencer --help'");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "lock acquire orders --ttl 10x | '10x' is not a duration",
        "lock acquire orders --wait 5 | '5' is not a duration",
        "lock exec orders --kill-after 1.5s -- true | '1.5s' is not a duration",
        "server --lock-delay 200h | '200h' is longer than the 7 days allowed",
        "server --peers n1=localhost | peer 'n1=localhost' is not id=host:port[:raftPort]",
        "server --peers n1=127.0.0.1:abc | peer 'n1=127.0.0.1:abc' has a port that is not a number",
        "server --peers =127.0.0.1:7070 | peer '=127.0.0.1:7070' is not id=host:port[:raftPort]",
        "server --peers n1=127.0.0.1:70000 | 'n1=127.0.0.1:70000' has port 70000, outside [1, 65535]",
        "server --id n4 --peers n1=127.0.0.1:7070,n2=127.0.0.1:7170 | --id n4 is not among --peers n1, n2",
        "server --peers n1=127.0.0.1:7070,n1=127.0.0.1:7170 | --peers names a peer id twice: n1, n1",
        "server --port 7071 --peers n1=127.0.0.1:7070 | --port 7071 disagrees with peer n1's entry",
        "server --insecure-raft --raft-secret-file /tmp/x | --insecure-raft and --raft-secret-file contradict each "
                + "other",
        "server --port 70000 | --port 70000 is outside [0, 65535]",
        "server --admin-port -2 | --admin-port -2 is outside [-1, 65535]",
        "server --http-port -1 | --http-port -1 is outside [0, 65535]",
        "server --http-port 70000 | --http-port 70000 is outside [0, 65535]",
        "lock status --server nohost | 'nohost' is not host:port",
        "lock status --server 127.0.0.1:0 | '127.0.0.1:0' has port 0, outside [1, 65535]",
        "lock status --server 127.0.0.1:7070,::1:7070 | '::1:7070' is not host:port (write IPv6 hosts in brackets)",
        "lock exec orders | Missing required parameter: 'CMD'",
        "lock acquire | Missing required parameter: 'NAME'",
        "bench lock --clients 0 | --clients 0 is outside [1, 4096]",
        "bench lock --locks 100001 | --locks 100001 is outside [1, 100000]",
        "bench lock --duration 0s | --duration must be positive",
        "bench | Missing command: choose lock",
        "lock | Missing command: choose acquire, exec, status, watch or revoke",
        "frobnicate | Unmatched argument at index 0: 'frobnicate'",
        "store-server --port 70000 | --port 70000 is outside [0, 65535]",
        "store-server --admin-port -2 | --admin-port -2 is outside [-1, 65535]",
        "store-server --http-port -1 | --http-port -1 is outside [0, 65535]",
        "store-server --token-key /nonexistent/keys | --token-key /nonexistent/keys cannot be read",
        "server --token-key /nonexistent/keys | --token-key /nonexistent/keys cannot be read",
        "keygen --kid bad.id | --kid: key id 'bad.id' is not 1 to",
        "server --http-connections-per-address-max 2000 | --http-connections-per-address-max 2000 must lie in [1, "
                + "--http-connections-max 1024]",
        "store-server --grpc-connections-max 0 | --grpc-connections-max 0 must lie in [1, 1000000]",
        "server --header-read-timeout 0s | --header-read-timeout PT0S must lie in [1ms, PT24H]",
        "server --backup-stall-timeout 0s | --backup-stall-timeout PT0S must lie in [1ms, PT24H]",
    })
    void execute_badArguments_exitsTwoWithAMessageNamingTheProblem(String arguments, String message) {
        CommandRun run = CommandRun.run(arguments.trim().split(" +"));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).startsWith("fencer: ").contains(message).contains("--help' for more information");
        assertThat(run.out()).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "lock acquire orders --ttl banana | option '--ttl': 'banana' is not a duration",
        "lock acquire orders --ttl -5s | option '--ttl': '-5s' is not a duration",
        "lock acquire orders --ttl 0s | option '--ttl': '0s' is outside [1s, 1h]",
        "lock acquire orders --ttl 500ms | option '--ttl': '500ms' is outside [1s, 1h]",
        "lock acquire orders --ttl 2h | option '--ttl': '2h' is outside [1s, 1h]",
        "lock acquire orders --wait 2h | option '--wait': '2h' is outside [0s, 1h]",
        "lock exec orders --ttl 0s -- true | option '--ttl': '0s' is outside [1s, 1h]",
        "lock exec orders --wait 61m -- true | option '--wait': '61m' is outside [0s, 1h]",
        "sem exec jobs --permits 2 --ttl 0 -- true | option '--ttl': '0' is outside [1s, 1h]",
        "sem exec jobs --permits 2 --wait 2h -- true | option '--wait': '2h' is outside [0s, 1h]",
        "sem exec jobs --permits 0 -- true | --permits 0 is outside [1, 1000]",
        "sem exec jobs --permits 1001 -- true | --permits 1001 is outside [1, 1000]",
        "bench lock --warmup 0s --duration 1s --ttl 0s | option '--ttl': '0s' is outside [1s, 1h]",
        "demo --ttl 0s | option '--ttl': '0s' is outside [1s, 1m]",
        "demo --ttl 61s | option '--ttl': '61s' is outside [1s, 1m]",
        "lock status --timeout 0s | option '--timeout': '0s' is outside (0s, 1h]",
        "lock status --timeout 2h | option '--timeout': '2h' is outside (0s, 1h]",
        "kv get k --store 127.0.0.1:1 --timeout 0s | option '--timeout': '0s' is outside (0s, 1h]",
        "lock exec orders --conflict-exit-code 256 -- true | option '--conflict-exit-code': '256' is outside [0, 255]",
        "lock exec orders --lost-exit-code -1 -- true | option '--lost-exit-code': '-1' is outside [0, 255]",
        "sem exec jobs --permits 2 --lost-exit-code x -- true | option '--lost-exit-code': 'x' is not a number",
    })
    void execute_optionValueOutOfRange_exitsTwoNamingTheOptionAndTheValue(String arguments, String message) {
        // A closed port for the client commands: one that got as far as running fails at once, reaching no server.
        List<String> args = new ArrayList<>(List.of(arguments.trim().split(" +")));
        if (!args.get(0).equals("demo")) {
            args.add(2, "--server=127.0.0.1:1");
        }

        CommandRun run = CommandRun.run(args.toArray(String[]::new));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).startsWith("fencer: ").contains(message).contains("--help' for more information");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void execute_lockNameTooLong_isUsageError() {
        CommandRun run = CommandRun.run("lock", "acquire", "x".repeat(257));

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("lock name is 257 bytes of UTF-8, more than the 256 allowed");
    }

    @Test
    void execute_verboseAfterTheSubcommand_isAccepted() {
        CommandRun run = CommandRun.run("lock", "status", "--verbose", "--server", "nohost");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("'nohost' is not host:port").doesNotContain("Unknown option");
    }

    @Test
    void serverConfig_defaults_bindLoopbackWithAdjacentPorts() {
        ServerConfig config = serverCommand("server").config();

        assertThat(config.id()).isEqualTo("n1");
        assertThat(config.host()).isEqualTo("127.0.0.1");
        assertThat(config.port()).isEqualTo(7070);
        assertThat(config.adminPort()).isEqualTo(7071);
        assertThat(config.raftPort()).isEqualTo(7072);
        assertThat(config.peers()).isEmpty();
        assertThat(config.lockDelay()).isEqualTo(Duration.ZERO);
        assertThat(config.dataDir()).isEqualTo(Path.of("fencer-data").toAbsolutePath());
    }

    @Test
    void serverConfig_portLimits_defaultToPortLimitsDefaultAndEachOptionSetsOne() {
        ServerConfig defaults = serverCommand("server").config();
        ServerConfig set = serverCommand("server", "--handshake-timeout", "3s", "--header-read-timeout", "2s",
                "--body-read-timeout", "4s", "--http-idle-timeout", "1m", "--http-connections-max", "100",
                "--http-connections-per-address-max", "10", "--grpc-idle-timeout", "1h", "--grpc-connections-max",
                "200", "--grpc-connections-per-address-max", "20", "--backup-stall-timeout", "5m").config();
        StoreServerConfig store = storeServerCommand("store-server", "--grpc-connections-per-address-max", "7")
                .config();

        assertThat(defaults.ports()).isEqualTo(PortLimits.DEFAULT);
        assertThat(set.ports()).isEqualTo(new PortLimits(Duration.ofSeconds(3), Duration.ofSeconds(2),
                Duration.ofSeconds(4), Duration.ofMinutes(1), 100, 10, Duration.ofHours(1), 200, 20,
                Duration.ofMinutes(5)));
        assertThat(store.ports().grpcConnectionsPerAddressMax()).isEqualTo(7);
        assertThat(storeServerCommand("store-server").config().ports()).isEqualTo(PortLimits.DEFAULT);
    }

    @Test
    void serverConfig_peerEntry_givesHostAndPorts(@TempDir Path dir) {
        ServerConfig config = serverCommand("server", "--id", "n2", "--data", "/tmp/d2", "--lock-delay", "2s",
                "--peers", "n1=127.0.0.1:7070,n2=127.0.0.2:7170:7199,n3=127.0.0.1:7270",
                "--raft-secret-file", dir.resolve("raft.secret").toString()).config();

        assertThat(config.id()).isEqualTo("n2");
        assertThat(config.host()).isEqualTo("127.0.0.2");
        assertThat(config.port()).isEqualTo(7170);
        assertThat(config.adminPort()).isEqualTo(7171);
        assertThat(config.raftPort()).isEqualTo(7199);
        assertThat(config.peers()).extracting(ServerConfig.Peer::id).containsExactly("n1", "n2", "n3");
        assertThat(config.lockDelay()).isEqualTo(Duration.ofSeconds(2));
        assertThat(config.dataDir()).isEqualTo(Path.of("/tmp/d2"));
    }

    @Test
    void serverConfig_alone_keepsItsOwnSecretInTheDataDirectoryWithoutAnOption() {
        ServerConfig config = serverCommand("server", "--data", "/tmp/alone").config();

        assertThat(config.peerAuth()).isEqualTo(PeerAuth.secretFile(Path.of("/tmp/alone/raft.secret")));
        assertThat(Path.of("/tmp/alone/raft.secret")).as("made by the server at its start, not by the options")
                .doesNotExist();
    }

    @Test
    void serverConfig_raftSecretFile_isMadeOwnerOnlyAtTheFirstStartAndReusedAfter(@TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("group.secret");
        String[] arguments = {"server", "--id", "n2", "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:7170",
            "--raft-secret-file", file.toString()};
        StringWriter firstErr = new StringWriter();
        StringWriter secondErr = new StringWriter();

        ServerConfig first = serverCommand(firstErr, arguments).config();
        String made = Files.readString(file);
        ServerConfig second = serverCommand(secondErr, arguments).config();

        assertThat(first.peerAuth()).isEqualTo(PeerAuth.secretFile(file)).isEqualTo(second.peerAuth());
        assertThat(firstErr.toString()).isEqualTo("fencer: created the group secret " + file + ": give every peer of "
                + "the group this same file" + System.lineSeparator());
        assertThat(secondErr.toString()).as("the second start reads it").isEmpty();
        assertThat(Files.readString(file)).isEqualTo(made).startsWith("fencer-raft-secret v1\n");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        String secretLine = made.split("\n")[1];
        assertThat(firstErr.toString()).doesNotContain(secretLine);
    }

    @Test
    void execute_malformedRaftSecretFile_isAUsageErrorNamingTheFileNeverTheSecret(@TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("bad.secret");
        String notBase64 = "s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t!!";
        Files.writeString(file, "fencer-raft-secret v1\n" + notBase64 + "\n");
        Path shortFile = dir.resolve("short.secret");
        Files.writeString(shortFile, "fencer-raft-secret v1\n" + "c2hvcnQtc2VjcmV0" + "\n");

        CommandRun malformed = CommandRun.run("server", "--id", "n1", "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:7170",
                "--raft-secret-file", file.toString());
        CommandRun tooShort = CommandRun.run("server", "--id", "n1", "--peers",
                "n1=127.0.0.1:7070,n2=127.0.0.1:7170", "--raft-secret-file", shortFile.toString());

        assertThat(malformed.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(malformed.err()).contains("--raft-secret-file: the group secret file " + file
                + " has a second line that is not base64").doesNotContain(notBase64);
        assertThat(tooShort.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(tooShort.err()).contains("the secret in " + shortFile + " has 12 bytes, outside [32, 1024]")
                .doesNotContain("c2hvcnQtc2VjcmV0");
        assertThat(malformed.out() + tooShort.out()).isEmpty();
    }

    @Test
    void serverConfig_groupWithoutSecretOption_sharesTheFileBesideTheDataDirectories(@TempDir Path dir)
            throws Exception {
        String peers = "n1=127.0.0.1:7070,n2=127.0.0.1:7170";
        StringWriter firstErr = new StringWriter();
        StringWriter secondErr = new StringWriter();

        ServerConfig first = serverCommand(firstErr, "server", "--id", "n1", "--peers", peers, "--data",
                dir.resolve("n1").toString()).config();
        ServerConfig second = serverCommand(secondErr, "server", "--id", "n2", "--peers", peers, "--data",
                dir.resolve("n2").toString()).config();

        Path shared = dir.resolve(PeerAuth.GROUP_SECRET_FILE);
        assertThat(first.peerAuth()).isEqualTo(PeerAuth.secretFile(shared)).isEqualTo(second.peerAuth());
        assertThat(firstErr.toString()).contains("created the group secret " + shared)
                .contains("peers on other hosts need a copy of it, or --raft-secret-file");
        assertThat(secondErr.toString()).as("the second peer reads the first's").isEmpty();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(shared))).isEqualTo("rw-------");
    }

    @Test
    void execute_groupSecretFileWritableByOthers_isAUsageErrorNamingTheFix(@TempDir Path dir) throws Exception {
        Path planted = dir.resolve(PeerAuth.GROUP_SECRET_FILE);
        Files.writeString(planted, "fencer-raft-secret v1\n" + Base64.getEncoder().encodeToString(new byte[32]) + "\n");
        Files.setPosixFilePermissions(planted, PosixFilePermissions.fromString("rw-rw-rw-"));

        CommandRun run = CommandRun.run("server", "--id", "n1", "--peers", "n1=127.0.0.1:7070,n2=127.0.0.1:7170",
                "--data", dir.resolve("n1").toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("the group secret file " + planted + " may be written by others (rw-rw-rw-)")
                .contains("chmod 600");
    }

    @Test
    void serverConfig_insecureRaftOrTlsWithACa_needsNoSecretFile(@TempDir Path dir) {
        CommandRun certs = CommandRun.run("certs", "--out", dir.toString());
        assertThat(certs.exitCode()).as(certs.err()).isZero();
        String peers = "n1=127.0.0.1:7070,n2=127.0.0.1:7170,n3=127.0.0.1:7270";

        ServerConfig insecure = serverCommand("server", "--peers", peers, "--insecure-raft").config();
        ServerConfig tls = serverCommand("server", "--peers", peers, "--tls-cert", dir.resolve("server.pem").toString(),
                "--tls-key", dir.resolve("server-key.pem").toString(), "--tls-ca", dir.resolve("ca.pem").toString())
                .config();

        assertThat(insecure.peerAuth()).isEqualTo(PeerAuth.insecure());
        assertThat(tls.peerAuth()).isEqualTo(PeerAuth.tlsOnly());
    }

    @Test
    void serverConfig_portZero_makesEveryPortFree() {
        ServerConfig config = serverCommand("server", "--port", "0", "--admin-port", "-1").config();

        assertThat(config.port()).isZero();
        assertThat(config.raftPort()).isZero();
        assertThat(config.adminPort()).isEqualTo(-1);
    }

    @Test
    void serverConfig_httpPort_defaultsToPortPlusThreeAndZeroTurnsItOff() {
        assertThat(serverCommand("server").config().httpPort()).isEqualTo(7073);
        assertThat(serverCommand("server", "--port", "9000").config().httpPort()).isEqualTo(9003);
        assertThat(serverCommand("server", "--port", "0").config().httpPort()).as("any free port").isZero();
        assertThat(serverCommand("server", "--http-port", "0").config().httpPort()).as("off").isEqualTo(-1);
        assertThat(serverCommand("server", "--http-port", "8443").config().httpPort()).isEqualTo(8443);
    }

    @Test
    void serverConfig_replySpin_defaultsTo300MicrosecondsAndZeroTurnsItOff() {
        assertThat(serverCommand("server").config().replySpin()).isEqualTo(Duration.ofNanos(300_000));
        assertThat(serverCommand("server", "--reply-spin", "0us").config().replySpin()).isZero();
        assertThat(serverCommand("server", "--reply-spin", "2ms").config().replySpin()).isEqualTo(Duration.ofMillis(2));
    }

    @Test
    void execute_replySpinAboveTheMaximum_isAUsageErrorNamingBoth() {
        CommandRun run = CommandRun.run("server", "--reply-spin", "11ms", "--port", "0");

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--reply-spin 11ms is longer than the 10ms allowed");
    }

    @Test
    void storeServerConfig_httpPort_defaultsToPortPlusThreeAndZeroTurnsItOff() {
        assertThat(storeServerCommand("store-server").config().httpPort()).isEqualTo(7083);
        assertThat(storeServerCommand("store-server", "--port", "0").config().httpPort()).isZero();
        assertThat(storeServerCommand("store-server", "--http-port", "0").config().httpPort()).isEqualTo(-1);
    }

    @Test
    void serverConfig_storeAndKeys_hostTheStoreByDefaultAndLoadTheKeyFile(@TempDir Path dir) throws Exception {
        Path keyFile = dir.resolve("keys");
        Files.writeString(keyFile, TokenKeys.generate("k7").toKeyFile());

        ServerConfig plain = serverCommand("server").config();
        ServerConfig signedNoStore = serverCommand("server", "--token-key", keyFile.toString(), "--no-store").config();

        assertThat(plain.store()).isNotNull();
        assertThat(plain.tokenKeys()).isNull();
        assertThat(signedNoStore.store()).isNull();
        assertThat(signedNoStore.tokenKeys().signingKeyId()).isEqualTo("k7");
    }

    @Test
    void storeServerConfig_defaults_bindLoopbackOn7080() {
        StoreServerConfig config = storeServerCommand("store-server").config();

        assertThat(config.host()).isEqualTo("127.0.0.1");
        assertThat(config.port()).isEqualTo(7080);
        assertThat(config.adminPort()).isEqualTo(7081);
        assertThat(config.tokenKeys()).isNull();
        assertThat(config.dataDir()).isEqualTo(Path.of("fencer-store-data").toAbsolutePath());
    }

    @Test
    void storeServer_startedOnFreePorts_printsOneServingLine(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("store");
        StoreServerCommand command = storeServerCommand("store-server", "--data", data.toString(), "--port", "0",
                "--admin-port", "-1");
        try (FencerStoreServer server = FencerStoreServer.start(command.config())) {
            assertThat(server.port()).isPositive();
            assertThat(server.adminPort()).isEqualTo(-1);
        }
        assertThat(data).isNotEmptyDirectory();
    }

    @Test
    void keygen_out_writesAnOwnerOnlyKeyFileAndRefusesToOverwriteIt(@TempDir Path dir) throws Exception {
        Path keyFile = dir.resolve("fencer.key");

        CommandRun first = CommandRun.run("keygen", "--kid", "k2", "--out", keyFile.toString());
        CommandRun again = CommandRun.run("keygen", "--out", keyFile.toString());
        CommandRun printed = CommandRun.run("keygen");

        assertThat(first.exitCode()).as(first.err()).isZero();
        assertThat(first.out()).contains("wrote key 'k2' to " + keyFile);
        assertThat(TokenKeys.load(keyFile).signingKeyId()).isEqualTo("k2");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(keyFile))).isEqualTo("rw-------");
        assertThat(again.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(again.err()).contains("already exists");
        assertThat(TokenKeys.parse(printed.out(), "stdout").signingKeyId()).isEqualTo("k1");
    }

    private static StoreServerCommand storeServerCommand(String... args) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs(args);
        return commandLine.getSubcommands().get("store-server").getCommand();
    }

    private static ServerCommand serverCommand(String... args) {
        return serverCommand(new StringWriter(), args);
    }

    /** Parses {@code args} with the real command; what it writes to its standard error goes to {@code err}. */
    private static ServerCommand serverCommand(StringWriter err, String... args) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.setErr(new PrintWriter(err, true));
        commandLine.parseArgs(args);
        return commandLine.getSubcommands().get("server").getCommand();
    }
}

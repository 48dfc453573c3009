package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.fencer.chaos.process.Launcher;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.UnavailableException;
import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsFiles;
import io.fencer.testing.FencerTestServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * TLS from the user's side: certificates made by {@code fencer certs}, a real TLS server requiring client
 * certificates, and the Java client and the CLI's client commands connecting with them (options and environment
 * variables); and the rule that a plaintext server stays on loopback unless told {@code --insecure}.
 */
class TlsEndToEndTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path directory;
    private static Path certs;
    private static FencerTestServer server;
    private static String endpoint;

    @BeforeAll
    static void startTlsServer() throws Exception {
        certs = directory.resolve("certs");
        CommandRun made = CommandRun.run("certs", "--out", certs.toString(), "--client", "alice");
        assertThat(made.exitCode()).as(made.err()).isZero();
        server = FencerTestServer.builder(directory.resolve("data")).tls(new TlsFiles(certs.resolve("server.pem"),
                certs.resolve("server-key.pem"), certs.resolve("ca.pem"))).start();
        endpoint = server.endpoint();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void javaClient_withClientCertificate_locksAndWritesTheStore() {
        try (FencerClient fencer = aliceClient();
             FencedStore store = Fencer.newStoreBuilder().endpoint(endpoint).lockService(fencer)
                     .tls(certs.resolve("ca.pem"), certs.resolve("alice.pem"), certs.resolve("alice-key.pem"))
                     .build();
             Session session = fencer.openSession(Duration.ofSeconds(30));
             Grant grant = session.lock("tls-orders").acquire(GENEROUS)) {
            assertThat(store.put("tls-orders", "order-17", "paid", grant).accepted()).isEqualTo(grant.token().value());
        }
    }

    @Test
    void javaClient_withoutClientCertificate_isRefused() {
        try (FencerClient anonymous = Fencer.newBuilder().endpoints(endpoint).callTimeout(Duration.ofSeconds(3))
                .tls(certs.resolve("ca.pem")).build()) {
            Throwable refused = catchThrowable(() -> anonymous.openSession(Duration.ofSeconds(30)));

            assertThat(refused).isInstanceOf(UnavailableException.class);
        }
    }

    @Test
    void clientCommands_withTlsOptions_reachTheTlsServer() {
        try (FencerClient fencer = aliceClient();
             Session session = fencer.openSession(Duration.ofSeconds(30));
             Grant grant = session.lock("tls-status").acquire(GENEROUS)) {
            List<String> tls = List.of("--tls-ca", certs.resolve("ca.pem").toString(), "--tls-cert",
                    certs.resolve("alice.pem").toString(), "--tls-key", certs.resolve("alice-key.pem").toString());

            CommandRun status = CommandRun.run(arguments(List.of("lock", "status", "tls-status", "--json",
                    "--server", endpoint), tls));
            CommandRun put = CommandRun.run(arguments(List.of("kv", "put", "tls-status", "k", "v", "--token",
                    grant.sequencer(), "--store", endpoint), tls));
            // A plaintext client retries until its call timeout: 2 s, not the default 10 s, says as much.
            CommandRun plaintext = CommandRun.run("lock", "status", "tls-status", "--server", endpoint, "--timeout",
                    "2s");

            assertThat(status.exitCode()).as(status.err()).isZero();
            assertThat(status.out()).contains("\"lock\":\"tls-status\"", "\"holderToken\":" + grant.token().value());
            assertThat(put.exitCode()).as(put.err()).isZero();
            assertThat(put.out()).contains("ok: put 'k' in scope 'tls-status'");
            assertThat(plaintext.exitCode()).isEqualTo(Main.EXIT_ERROR);
            assertThat(plaintext.err()).startsWith("fencer: ").contains("UNAVAILABLE");
        }
    }

    @Test
    void clientCommand_tlsCertificateWithoutCa_isUsageError() {
        CommandRun run = CommandRun.run("lock", "status", "--server", endpoint, "--tls-cert",
                certs.resolve("alice.pem").toString(), "--tls-key", certs.resolve("alice-key.pem").toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--tls-cert and --tls-key need --tls-ca (or FENCER_TLS_CA)");
    }

    @Test
    void clientCommand_tlsFromEnvironmentVariables_reachesTheTlsServer() throws Exception {
        Path log = directory.resolve("status.log");
        ProcessBuilder builder = new ProcessBuilder(arguments(Launcher.ofCurrentJvm(Main.class.getName())
                .commandPrefix(), List.of("lock", "status", "--json", "--server", endpoint)))
                .redirectError(log.toFile());
        builder.environment().put("FENCER_TLS_CA", certs.resolve("ca.pem").toString());
        builder.environment().put("FENCER_TLS_CERT", certs.resolve("alice.pem").toString());
        builder.environment().put("FENCER_TLS_KEY", certs.resolve("alice-key.pem").toString());
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("%s; stderr in %s", output, log).isZero();
        assertThat(output.strip()).startsWith("[").endsWith("]");
    }

    @ParameterizedTest
    @ValueSource(strings = {"server", "store-server"})
    void server_nonLoopbackHostWithoutTls_refusesNamingTheHostAndTheWaysOut(String command) {
        CommandRun run = CommandRun.run(command, "--host", "0.0.0.0", "--port", "0", "--admin-port", "-1", "--data",
                directory.resolve("refused-" + command).toString());

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--host 0.0.0.0 is not a loopback address and TLS is off",
                "Give --tls-cert and --tls-key (see 'fencer certs'), or --insecure to serve plaintext anyway");
        assertThat(directory.resolve("refused-" + command)).doesNotExist();
    }

    @Test
    void server_nonLoopbackHostWithTls_isAccepted() {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs("server", "--host", "0.0.0.0", "--tls-cert", certs.resolve("server.pem").toString(),
                "--tls-key", certs.resolve("server-key.pem").toString());
        ServerCommand command = commandLine.getSubcommands().get("server").getCommand();

        ServerConfig config = command.config();

        assertThat(config.host()).isEqualTo("0.0.0.0");
        assertThat(config.tls().certificate()).isEqualTo(certs.resolve("server.pem"));
        assertThat(config.tls().clientCertificatesRequired()).isFalse();
    }

    @Test
    void server_nonLoopbackHostWithInsecure_starts() throws Exception {
        String[] command = arguments(Launcher.ofCurrentJvm(Main.class.getName()).commandPrefix(),
                List.of("server", "--host", "0.0.0.0", "--insecure", "--port", "0", "--admin-port", "-1",
                        "--raft-port", "0", "--data", directory.resolve("insecure").toString()));
        Path log = directory.resolve("insecure.log");
        // Standard output alone: its one line is the start-up line, which log lines on stderr cannot cut into.
        Process process = new ProcessBuilder(command).redirectError(log.toFile()).start();
        try {
            CompletableFuture<String> firstLine = CompletableFuture.supplyAsync(() -> {
                try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    return lines.readLine();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });

            String serving = firstLine.get(GENEROUS.toSeconds(), TimeUnit.SECONDS);

            assertThat(serving).as("the server's log: %s", log).startsWith("fencer server n1 serving on 0.0.0.0:")
                    .contains("plaintext");
        } finally {
            process.destroyForcibly(); // it only had to start; how it stops is not what this test is about
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"})
    void isLoopback_loopbackAddresses_areTrue(String host) {
        assertThat(ServerTlsOptions.isLoopback(host)).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"0.0.0.0", "10.0.0.5", "::", "[::]", "fencer-1.example.com", "localhost.evil.com",
        "127.0.0.1.nip.io"})
    void isLoopback_otherHosts_areFalse(String host) {
        assertThat(ServerTlsOptions.isLoopback(host)).isFalse();
    }

    private static FencerClient aliceClient() {
        return Fencer.newBuilder().endpoints(endpoint)
                .tls(certs.resolve("ca.pem"), certs.resolve("alice.pem"), certs.resolve("alice-key.pem")).build();
    }

    private static String[] arguments(List<String> first, List<String> second) {
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        return all.toArray(String[]::new);
    }
}

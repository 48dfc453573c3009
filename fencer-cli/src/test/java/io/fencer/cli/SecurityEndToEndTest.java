package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The security quick start end to end, as docs/security.md tells it: {@code fencer certs} makes a CA and two clients,
 * {@code fencer server --tls-… --acl …} serves with client certificates required and an ACL naming their CNs, and
 * {@code fencer lock exec} runs as the allowed identity and is refused, exit 6, as the other.
 */
class SecurityEndToEndTest {
    @TempDir
    static Path directory;
    private static Path certs;
    private static FencerServer server;
    private static String endpoint;

    @BeforeAll
    static void startServerWithTlsAndAcl() throws Exception {
        certs = directory.resolve("certs");
        CommandRun made = CommandRun.run("certs", "--out", certs.toString(), "--client", "alice", "--client",
                "mallory");
        assertThat(made.exitCode()).as(made.err()).isZero();
        Path acl = Files.writeString(directory.resolve("fencer.acl"), """
                # alice runs the nightly jobs; mallory may only look
                alice   lock  jobs/
                *       read  *
                """);
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.parseArgs("server", "--port", "0", "--admin-port", "-1", "--raft-port", "0",
                "--data", directory.resolve("data").toString(),
                "--tls-cert", certs.resolve("server.pem").toString(),
                "--tls-key", certs.resolve("server-key.pem").toString(),
                "--tls-ca", certs.resolve("ca.pem").toString(), "--acl", acl.toString());
        ServerCommand command = commandLine.getSubcommands().get("server").getCommand();
        ServerConfig config = command.config();
        server = FencerServer.start(config);
        endpoint = "127.0.0.1:" + server.port();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockExec_asTheAllowedIdentity_runsTheCommandWithItsToken() throws Exception {
        Path ran = directory.resolve("alice-ran");
        CommandRun run = CommandRun.run(as("alice", "lock", "exec", "jobs/nightly", "--server", endpoint, "--",
                "sh", "-c", "test -n \"$FENCER_TOKEN\" && echo \"$FENCER_LOCK#$FENCER_TOKEN_VALUE\" > " + ran));

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(Files.readString(ran)).startsWith("jobs/nightly#");
    }

    @Test
    void lockExec_asAnIdentityTheAclDoesNotGrantLock_exitsSixNamingIdentityPermissionAndName() {
        Path ran = directory.resolve("mallory-ran");
        CommandRun run = CommandRun.run(as("mallory", "lock", "exec", "jobs/nightly", "--server", endpoint, "--",
                "sh", "-c", "touch " + ran));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_PERMISSION_DENIED).isEqualTo(6);
        assertThat(run.err()).contains("permission denied", "'mallory'", "'lock'");
        assertThat(ran).as("the command must not have run").doesNotExist();
    }

    @Test
    void lockStatus_asAReader_isServedOverTls() {
        CommandRun run = CommandRun.run(as("mallory", "lock", "status", "--json", "--server", endpoint));

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out().strip()).startsWith("[");
    }

    private static String[] as(String identity, String... arguments) {
        List<String> all = new ArrayList<>(List.of(arguments));
        int end = all.indexOf("--");
        List<String> tls = List.of("--tls-ca", certs.resolve("ca.pem").toString(),
                "--tls-cert", certs.resolve(identity + ".pem").toString(),
                "--tls-key", certs.resolve(identity + "-key.pem").toString());
        all.addAll(end < 0 ? all.size() : end, tls);
        return all.toArray(String[]::new);
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.server.tls.TlsFiles;
import io.fencer.server.tls.TlsMaterial;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencer certs} through the CLI: what it writes parses, matches, names the server and is kept private. */
class TlsCertsCommandTest {
    private static final String SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
    private static final String CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
    private static final int SAN_DNS = 2;
    private static final int SAN_IP = 7;

    @TempDir
    Path directory;

    @Test
    void certs_namesAddressesAndClients_writesAValidCaServerAndClientCertificates() throws Exception {
        Path out = directory.resolve("certs");

        CommandRun run = CommandRun.run("certs", "--out", out.toString(), "--server-name", "localhost",
                "--server-name", "fencer-1.example.com", "--server-ip", "127.0.0.1,10.0.0.5", "--client", "alice",
                "--client", "billing-worker", "--days", "30");

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("fencer certs wrote 8 files to " + out);
        X509Certificate ca = certificate(out.resolve("ca.pem"));
        X509Certificate server = certificate(out.resolve("server.pem"));
        assertThat(ca.getBasicConstraints()).as("the CA is a CA").isGreaterThanOrEqualTo(0);
        assertThat(server.getBasicConstraints()).as("the server is not a CA").isEqualTo(-1);
        server.verify(ca.getPublicKey());
        assertThat(alternativeNames(server)).containsExactlyInAnyOrder("2:localhost", "2:fencer-1.example.com",
                "7:127.0.0.1", "7:10.0.0.5");
        assertThat(server.getExtendedKeyUsage()).as("peers use it as client and server").contains(SERVER_AUTH,
                CLIENT_AUTH);
        assertThat(server.getNotAfter().toInstant()).isBetween(Instant.now().plus(Duration.ofDays(29)),
                Instant.now().plus(Duration.ofDays(31)));
        TlsMaterial checked = new TlsFiles(out.resolve("server.pem"), out.resolve("server-key.pem"),
                out.resolve("ca.pem")).load();
        assertThat(checked.clientCertificatesRequired()).isTrue();
        for (String client : List.of("alice", "billing-worker")) {
            X509Certificate certificate = certificate(out.resolve(client + ".pem"));
            certificate.verify(ca.getPublicKey());
            assertThat(certificate.getSubjectX500Principal().getName()).isEqualTo("CN=" + client);
            assertThat(certificate.getExtendedKeyUsage()).containsExactly(CLIENT_AUTH);
            new TlsFiles(out.resolve(client + ".pem"), out.resolve(client + "-key.pem"), null).load(); // key matches
        }
        for (String key : List.of("ca-key.pem", "server-key.pem", "alice-key.pem", "billing-worker-key.pem")) {
            assertThat(Files.getPosixFilePermissions(out.resolve(key))).as(key)
                    .isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
            assertThat(Files.readString(out.resolve(key))).as(key).startsWith("-----BEGIN PRIVATE KEY-----");
        }
    }

    @Test
    void certs_noNames_defaultsToLocalhostAnd127001() throws Exception {
        CommandRun run = CommandRun.run("certs", "--out", directory.toString());

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(alternativeNames(certificate(directory.resolve("server.pem"))))
                .containsExactlyInAnyOrder("2:localhost", "7:127.0.0.1");
    }

    @Test
    void certs_filesExist_refusesUnlessForce() throws Exception {
        assertThat(CommandRun.run("certs", "--out", directory.toString()).exitCode()).isZero();
        String firstCa = Files.readString(directory.resolve("ca.pem"));

        CommandRun again = CommandRun.run("certs", "--out", directory.toString());
        String afterRefusal = Files.readString(directory.resolve("ca.pem"));
        CommandRun forced = CommandRun.run("certs", "--out", directory.toString(), "--force");

        assertThat(again.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(again.err()).contains(directory.resolve("ca.pem") + " exists; not overwriting it (--force");
        assertThat(afterRefusal).isEqualTo(firstCa);
        assertThat(forced.exitCode()).as(forced.err()).isZero();
        assertThat(Files.readString(directory.resolve("ca.pem"))).isNotEqualTo(firstCa);
        assertThat(Files.getPosixFilePermissions(directory.resolve("server-key.pem")))
                .isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
    }

    @Test
    void certs_badArguments_areUsageErrorsNamingThem() {
        CommandRun client = CommandRun.run("certs", "--out", directory.toString(), "--client", "../etc/passwd");
        CommandRun days = CommandRun.run("certs", "--out", directory.toString(), "--days", "0");
        CommandRun address = CommandRun.run("certs", "--out", directory.toString(), "--server-ip", "fencer.example");

        assertThat(client.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(client.err()).contains("--client '../etc/passwd' is not 1 to 64 characters");
        assertThat(days.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(days.err()).contains("--days 0 is outside [1, 3650]");
        assertThat(address.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(address.err()).contains("'fencer.example' is not an IPv4 or IPv6 address");
        assertThat(directory).isEmptyDirectory();
    }

    private static X509Certificate certificate(Path file) throws Exception {
        try (InputStream in = Files.newInputStream(file)) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    private static List<String> alternativeNames(X509Certificate certificate) throws Exception {
        List<String> names = new ArrayList<>();
        for (List<?> name : certificate.getSubjectAlternativeNames()) {
            int type = (Integer) name.get(0);
            assertThat(type).isIn(SAN_DNS, SAN_IP);
            names.add(type + ":" + name.get(1));
        }
        return names;
    }
}

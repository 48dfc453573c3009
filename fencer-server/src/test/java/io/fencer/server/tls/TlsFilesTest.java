package io.fencer.server.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.testing.TestTls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checks {@link TlsFiles#load} makes at start: each names the file and what is wrong with it. */
class TlsFilesTest {
    @TempDir
    Path directory;
    private TestTls fixture;

    @BeforeEach
    void makeCertificates() {
        fixture = TestTls.create(directory);
    }

    @Test
    void load_goodFilesWithClientCa_returnsTheCheckedMaterial() {
        TlsMaterial material = fixture.serverFiles(true).load();

        assertThat(material.certificateChain()).hasSize(1);
        assertThat(material.certificateChain().get(0).getSubjectX500Principal().getName()).isEqualTo("CN=localhost");
        assertThat(material.clientCertificatesRequired()).isTrue();
        assertThat(material.clientCa()).containsExactly(fixture.ca().ca().certificate());
        assertThat(material.peerTrust()).as("peers present certificates of the client CA")
                .containsExactly(fixture.ca().ca().certificate());
        assertThat(material.toString()).doesNotContain("PRIVATE").contains("server.pem");
    }

    @Test
    void load_withoutClientCa_peersTrustExactlyTheServerCertificate() {
        TlsMaterial material = fixture.serverFiles(false).load();

        assertThat(material.clientCertificatesRequired()).isFalse();
        assertThat(material.peerTrust()).containsExactly(material.certificateChain().get(0));
    }

    @Test
    void load_missingCertificate_namesTheFile() {
        Path missing = directory.resolve("nope.pem");

        assertThatThrownBy(() -> new TlsFiles(missing, fixture.serverKeyFile(), null).load())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("TLS certificate " + missing + " does not exist");
    }

    @Test
    void load_missingKey_namesTheFile() {
        Path missing = directory.resolve("nope-key.pem");

        assertThatThrownBy(() -> new TlsFiles(fixture.serverCertificateFile(), missing, null).load())
                .hasMessage("TLS private key " + missing + " does not exist");
    }

    @Test
    void load_missingClientCa_namesTheFile() {
        Path missing = directory.resolve("no-ca.pem");

        assertThatThrownBy(() -> new TlsFiles(fixture.serverCertificateFile(), fixture.serverKeyFile(), missing)
                .load()).hasMessage("client CA " + missing + " does not exist");
    }

    @Test
    void load_directoryAsCertificate_isUnreadableNamingIt() throws Exception {
        Path folder = Files.createDirectory(directory.resolve("folder.pem"));

        assertThatThrownBy(() -> new TlsFiles(folder, fixture.serverKeyFile(), null).load())
                .hasMessageStartingWith("TLS certificate " + folder + " cannot be read");
    }

    @Test
    void load_keyFileAsCertificate_isNotACertificate() {
        assertThatThrownBy(() -> new TlsFiles(fixture.serverKeyFile(), fixture.serverKeyFile(), null).load())
                .hasMessageStartingWith("TLS certificate " + fixture.serverKeyFile() + " ")
                .hasMessageContaining("certificate");
    }

    @Test
    void load_garbageCertificate_isNotACertificate() throws Exception {
        Path garbage = Files.writeString(directory.resolve("garbage.pem"), "hello\n");

        assertThatThrownBy(() -> new TlsFiles(garbage, fixture.serverKeyFile(), null).load())
                .hasMessageStartingWith("TLS certificate " + garbage + " is not a PEM X.509 certificate");
    }

    @Test
    void load_certificateAsKey_isNotAPkcs8Key() {
        Path certificate = fixture.serverCertificateFile();

        assertThatThrownBy(() -> new TlsFiles(certificate, certificate, null).load())
                .hasMessage("TLS private key " + certificate + " is not an unencrypted PKCS#8 key (BEGIN PRIVATE KEY)"
                        + " but a certificate; convert it with 'openssl pkcs8 -topk8 -nocrypt'");
    }

    @Test
    void load_traditionalOpenSslKey_isRefusedWithTheWayToConvertIt() throws Exception {
        Path traditional = directory.resolve("traditional-key.pem");
        try (JcaPEMWriter writer = new JcaPEMWriter(Files.newBufferedWriter(traditional))) {
            writer.writeObject(fixture.ca().ca().privateKey()); // JcaPEMWriter writes BEGIN EC PRIVATE KEY
        }

        assertThatThrownBy(() -> new TlsFiles(fixture.serverCertificateFile(), traditional, null).load())
                .hasMessageContaining("TLS private key " + traditional + " is not an unencrypted PKCS#8 key")
                .hasMessageContaining("BEGIN EC/RSA PRIVATE KEY").hasMessageContaining("openssl pkcs8");
    }

    @Test
    void load_keyOfAnotherCertificate_doesNotMatch() {
        Path caKey = directory.resolve("ca-key.pem");

        assertThatThrownBy(() -> new TlsFiles(fixture.serverCertificateFile(), caKey, null).load())
                .hasMessage("TLS private key " + caKey + " does not match the TLS certificate "
                        + fixture.serverCertificateFile() + " (CN=localhost)");
    }

    @Test
    void load_expiredCertificate_saysUntilWhen() {
        Instant now = Instant.now();
        CertificateAuthority.Issued expired = fixture.ca().issueServer(List.of("localhost"), List.of(),
                now.minus(Duration.ofDays(2)), now.minus(Duration.ofDays(1)));
        Path certificate = fixture.write("expired", expired);

        assertThatThrownBy(() -> new TlsFiles(certificate, directory.resolve("expired-key.pem"), null).load())
                .hasMessageStartingWith("TLS certificate " + certificate
                        + " has expired: CN=localhost was valid until ");
    }

    @Test
    void load_beforeTheCertificateIsValid_saysFromWhen() {
        Clock yesterday = Clock.fixed(Instant.now().minus(Duration.ofDays(1)), ZoneOffset.UTC);

        assertThatThrownBy(() -> fixture.serverFiles(false).load(yesterday))
                .hasMessageStartingWith("TLS certificate " + fixture.serverCertificateFile() + " is not valid yet");
    }

    @Test
    void load_expiredClientCa_namesTheClientCa() {
        Instant now = Instant.now();
        CertificateAuthority old = CertificateAuthority.create("old CA", now.minus(Duration.ofDays(9)),
                now.minus(Duration.ofDays(8)));
        Path oldCa = fixture.write("old-ca", old.ca());
        TlsFiles files = new TlsFiles(fixture.serverCertificateFile(), fixture.serverKeyFile(), oldCa);

        assertThatThrownBy(files::load).hasMessageStartingWith("client CA " + oldCa + " has expired: CN=old CA");
    }

    @Test
    void load_leafCertificateAsClientCa_isNotACa() {
        Path leaf = fixture.serverCertificateFile();

        assertThatThrownBy(() -> new TlsFiles(leaf, fixture.serverKeyFile(), leaf).load())
                .hasMessage("client CA " + leaf + " holds a certificate that is not a CA (CN=localhost)");
    }
}

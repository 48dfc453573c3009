package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TLS settings of the client builders: mistakes fail where they are made and name the file. The TLS
 * connections themselves are tested against real TLS servers in the CLI's module, which has both sides.
 */
class ClientTlsOptionsTest {
    @TempDir
    Path directory;

    @Test
    void tls_missingCaFile_throwsNamingIt() {
        Path missing = directory.resolve("ca.pem");

        assertThatThrownBy(() -> Fencer.newBuilder().tls(missing)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("TLS CA file " + missing + " does not exist or is not a file");
        assertThatThrownBy(() -> Fencer.newStoreBuilder().tls(missing)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("TLS CA file " + missing + " does not exist or is not a file");
    }

    @Test
    void tls_certificateWithoutKey_throwsNamingBoth() throws Exception {
        Path ca = Files.writeString(directory.resolve("ca.pem"), "x");
        Path certificate = Files.writeString(directory.resolve("alice.pem"), "x");

        assertThatThrownBy(() -> Fencer.newBuilder().tls(ca, certificate, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a client certificate needs its key and a key its certificate: certificate " + certificate
                        + ", key null");
    }

    @Test
    void tls_missingKeyFile_throwsNamingIt() throws Exception {
        Path ca = Files.writeString(directory.resolve("ca.pem"), "x");
        Path certificate = Files.writeString(directory.resolve("alice.pem"), "x");
        Path key = directory.resolve("alice-key.pem");

        assertThatThrownBy(() -> Fencer.newBuilder().tls(ca, certificate, key))
                .hasMessage("TLS key file " + key + " does not exist or is not a file");
    }

    @Test
    void build_caFileWithoutCertificate_throwsNamingTheFiles() throws Exception {
        Path ca = Files.writeString(directory.resolve("ca.pem"), "not a certificate\n");

        assertThatThrownBy(() -> Fencer.newBuilder().endpoints("127.0.0.1:7070").tls(ca).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("the TLS files cannot be used: TLS (CA " + ca + "): ");
        assertThatThrownBy(() -> Fencer.newStoreBuilder().endpoint("127.0.0.1:7070").tls(ca).build())
                .hasMessageStartingWith("the TLS files cannot be used: TLS (CA " + ca + "): ");
    }
}

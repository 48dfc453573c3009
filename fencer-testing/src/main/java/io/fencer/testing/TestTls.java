package io.fencer.testing;

import io.fencer.server.tls.CertificateAuthority;
import io.fencer.server.tls.TlsFiles;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * The certificates of a TLS test, made on the spot in a directory: a CA, a server certificate for 127.0.0.1 and
 * localhost (which the peers of a group share), and client certificates of this CA or of another, valid or expired.
 * Give {@link #serverFiles} to {@link FencerTestServer.Builder#tls} or {@link FencerTestCluster.Builder#tls}; give a
 * client {@link #caFile()} to trust and, for mutual TLS, a certificate {@link #write written} from {@link #client}.
 *
 * <pre>{@code
 * TestTls tls = TestTls.create(dir.resolve("tls"));
 * FencerTestServer server = FencerTestServer.builder(dir.resolve("data")).tls(tls.serverFiles(true)).start();
 * Path aliceCertificate = tls.write("alice", tls.client("alice"));   // and alice-key.pem beside it
 * }</pre>
 *
 * <p>Keys are EC P-256, made by the server's own {@link CertificateAuthority} (what {@code fencer certs} uses); every
 * certificate is valid for {@link #VALIDITY}, which is long enough for a test and short enough to be useless later.
 */
public final class TestTls {
    /** How long the certificates made here are valid, from a few minutes before now. */
    public static final Duration VALIDITY = Duration.ofDays(1);

    private final Path directory;
    private final CertificateAuthority ca;
    private final CertificateAuthority.Issued server;
    private final Path caFile;
    private final Path serverCertificateFile;
    private final Path serverKeyFile;

    private TestTls(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
        this.ca = CertificateAuthority.create("fencer test CA", VALIDITY);
        this.server = ca.issueServer(List.of("localhost"), List.of("127.0.0.1"), VALIDITY);
        this.caFile = directory.resolve("ca.pem");
        this.serverCertificateFile = directory.resolve("server.pem");
        this.serverKeyFile = directory.resolve("server-key.pem");
        ca.ca().write(caFile, directory.resolve("ca-key.pem"), false);
        server.write(serverCertificateFile, serverKeyFile, false);
    }

    /**
     * Makes a CA and a server certificate and writes them in {@code directory} (made when absent): {@code ca.pem},
     * {@code ca-key.pem}, {@code server.pem} and {@code server-key.pem}.
     *
     * @throws UncheckedIOException when the directory cannot be written
     */
    public static TestTls create(Path directory) {
        try {
            return new TestTls(directory);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the CA, to issue certificates of other kinds (other names, other validity) with. */
    public CertificateAuthority ca() {
        return ca;
    }

    /** Returns the server's certificate and key, which every peer presents. */
    public CertificateAuthority.Issued server() {
        return server;
    }

    /** Returns the CA's certificate file, which clients trust and servers check client certificates against. */
    public Path caFile() {
        return caFile;
    }

    /** Returns the server's certificate file (for 127.0.0.1 and localhost). */
    public Path serverCertificateFile() {
        return serverCertificateFile;
    }

    /** Returns the server's private key file. */
    public Path serverKeyFile() {
        return serverKeyFile;
    }

    /** Returns the server's files: with client certificates of this CA required, or none asked for. */
    public TlsFiles serverFiles(boolean clientCertificatesRequired) {
        return new TlsFiles(serverCertificateFile, serverKeyFile, clientCertificatesRequired ? caFile : null);
    }

    /** Issues a client certificate of this CA named {@code name}, valid now. */
    public CertificateAuthority.Issued client(String name) {
        return ca.issueClient(name, VALIDITY);
    }

    /** Issues a client certificate of this CA named {@code name} that expired an hour ago. */
    public CertificateAuthority.Issued expiredClient(String name) {
        Instant now = Instant.now();
        return ca.issueClient(name, now.minus(Duration.ofDays(2)), now.minus(Duration.ofHours(1)));
    }

    /** Issues a client certificate named {@code name} by a CA of its own, which this server does not trust. */
    public static CertificateAuthority.Issued foreignClient(String name) {
        return CertificateAuthority.create("another CA", VALIDITY).issueClient(name, VALIDITY);
    }

    /** Writes {@code issued} as {@code name.pem} and {@code name-key.pem} here; returns the certificate's path. */
    public Path write(String name, CertificateAuthority.Issued issued) {
        Path certificate = directory.resolve(name + ".pem");
        try {
            issued.write(certificate, directory.resolve(name + "-key.pem"), true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return certificate;
    }

    /** Returns a TLS channel to 127.0.0.1:{@code port} trusting this CA, presenting {@code client} (null = none). */
    public ManagedChannel channel(int port, CertificateAuthority.Issued client) {
        return NettyChannelBuilder.forAddress("127.0.0.1", port).sslContext(grpcContext(client)).build();
    }

    /** Returns a Netty client TLS context trusting this CA, presenting {@code client} (null = none). */
    public SslContext grpcContext(CertificateAuthority.Issued client) {
        SslContextBuilder builder = GrpcSslContexts.forClient().trustManager(ca.ca().certificate());
        if (client != null) {
            builder.keyManager(client.privateKey(), client.certificate());
        }
        try {
            return builder.build();
        } catch (SSLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Returns a JDK client TLS context trusting this CA, presenting {@code client} (null = none). */
    public SSLContext jdkContext(CertificateAuthority.Issued client) {
        try {
            KeyStore trusted = KeyStore.getInstance("PKCS12");
            trusted.load(null, null);
            trusted.setCertificateEntry("ca", ca.ca().certificate());
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(trusted);
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            KeyStore own = KeyStore.getInstance("PKCS12");
            own.load(null, null);
            char[] password = "test".toCharArray();
            if (client != null) {
                own.setKeyEntry("client", client.privateKey(), password, new X509Certificate[] {client.certificate()});
            }
            keys.init(own, password);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException(e);
        }
    }
}

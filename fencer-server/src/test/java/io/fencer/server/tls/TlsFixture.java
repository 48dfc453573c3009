package io.fencer.server.tls;

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
 * localhost (which peers share), and client certificates of this CA or of another, valid or expired.
 */
public final class TlsFixture {
    public static final Duration VALIDITY = Duration.ofDays(1);

    private final Path directory;
    private final CertificateAuthority ca;
    private final CertificateAuthority.Issued server;
    private final Path caFile;
    private final Path serverCertificateFile;
    private final Path serverKeyFile;

    private TlsFixture(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
        this.ca = CertificateAuthority.create("fencer test CA", VALIDITY);
        this.server = ca.issueServer(List.of("localhost"), List.of("127.0.0.1"), VALIDITY);
        this.caFile = directory.resolve("ca.pem");
        this.serverCertificateFile = directory.resolve("server.pem");
        this.serverKeyFile = directory.resolve("server-key.pem");
        ca.ca().write(caFile, directory.resolve("ca-key.pem"), false);
        server.write(serverCertificateFile, serverKeyFile, false);
    }

    /** Makes a CA and a server certificate in {@code directory}. */
    public static TlsFixture create(Path directory) {
        try {
            return new TlsFixture(directory);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public CertificateAuthority ca() {
        return ca;
    }

    /** Returns the server's certificate and key, which every peer presents. */
    public CertificateAuthority.Issued server() {
        return server;
    }

    public Path caFile() {
        return caFile;
    }

    public Path serverCertificateFile() {
        return serverCertificateFile;
    }

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

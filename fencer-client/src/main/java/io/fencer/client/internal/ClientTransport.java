package io.fencer.client.internal;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * How a client reaches its endpoints: plaintext, or TLS trusting a CA and optionally presenting a client
 * certificate, which the server then knows the client by (its CN). One TLS context serves every channel of a
 * client; the server's certificate must name the host dialled (a DNS name or IP address in its SANs).
 */
final class ClientTransport {
    /** The protocol versions the client offers: those Fencer servers accept. */
    static final List<String> PROTOCOLS = List.of("TLSv1.3", "TLSv1.2");
    private static final ClientTransport PLAINTEXT = new ClientTransport(null, "plaintext");
    /**
     * How long a connection with calls in flight may hear nothing before the client pings it. A peer frozen while it
     * led (SIGSTOP, a descheduled VM) keeps its connections open and silent: a call waiting on it, such as an acquire
     * queued behind a holder, would wait its whole time there while the session's keepalives, which time out, follow
     * the new leader, which may grant the lock to that session with no call left to hear it. Not below the 5 s every
     * Fencer server permits (a client pinging more often is disconnected); pings go only while calls are in flight
     * and nothing else was heard, so a busy connection sends none.
     */
    static final long KEEPALIVE_SECONDS = 10;
    /** How long a ping may go unanswered before the connection is closed and its calls fail UNAVAILABLE. */
    static final long KEEPALIVE_TIMEOUT_SECONDS = 5;

    private final SslContext sslContext; // null = plaintext
    private final String description;

    private ClientTransport(SslContext sslContext, String description) {
        this.sslContext = sslContext;
        this.description = description;
    }

    static ClientTransport plaintext() {
        return PLAINTEXT;
    }

    /** The files of {@code FencerClient.Builder.tls}, checked as they are set so a mistake names its file. */
    record TlsFiles(Path caFile, Path certificateFile, Path keyFile) {
        TlsFiles {
            checkReadable("CA file", Objects.requireNonNull(caFile, "caFile"));
            if ((certificateFile == null) != (keyFile == null)) {
                throw new IllegalArgumentException("a client certificate needs its key and a key its certificate: "
                        + "certificate " + certificateFile + ", key " + keyFile);
            }
            if (certificateFile != null) {
                checkReadable("certificate file", certificateFile);
                checkReadable("key file", keyFile);
            }
        }

        private static void checkReadable(String role, Path file) {
            if (!Files.isRegularFile(file)) {
                throw new IllegalArgumentException("TLS " + role + " " + file + " does not exist or is not a file");
            }
            if (!Files.isReadable(file)) {
                throw new IllegalArgumentException("TLS " + role + " " + file + " cannot be read");
            }
        }
    }

    /**
     * Returns the TLS transport of {@code files}, or plaintext when null.
     *
     * @throws IllegalArgumentException naming the files when they hold no PEM certificate or PKCS#8 key
     */
    static ClientTransport of(TlsFiles files) {
        if (files == null) {
            return PLAINTEXT;
        }
        String description = "TLS (CA " + files.caFile()
                + (files.certificateFile() == null ? "" : ", certificate " + files.certificateFile()) + ")";
        try {
            SslContextBuilder builder = GrpcSslContexts.forClient().trustManager(files.caFile().toFile())
                    .protocols(PROTOCOLS);
            if (files.certificateFile() != null) {
                builder.keyManager(files.certificateFile().toFile(), files.keyFile().toFile());
            }
            return new ClientTransport(builder.build(), description);
        } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
            // Netty's message names what it could not parse, never the key's bytes.
            throw new IllegalArgumentException("the TLS files cannot be used: " + description + ": "
                    + e.getMessage(), e);
        }
    }

    /** Returns true when channels are TLS. */
    boolean secure() {
        return sslContext != null;
    }

    /** Returns a channel builder for {@code endpoint} ({@code host:port}, checked) with this transport. */
    NettyChannelBuilder channelBuilder(String endpoint) {
        int colon = endpoint.lastIndexOf(':');
        String host = endpoint.substring(0, colon);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
        }
        NettyChannelBuilder builder = NettyChannelBuilder.forAddress(host, Integer.parseInt(endpoint.substring(colon
                + 1))).keepAliveTime(KEEPALIVE_SECONDS, TimeUnit.SECONDS)
                .keepAliveTimeout(KEEPALIVE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        return sslContext == null ? builder.usePlaintext() : builder.sslContext(sslContext);
    }

    @Override
    public String toString() {
        return description;
    }
}

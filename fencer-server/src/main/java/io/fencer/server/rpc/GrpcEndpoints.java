package io.fencer.server.rpc;

import io.fencer.server.tls.TlsMaterial;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.IoHandlerFactory;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * The gRPC endpoint of a Fencer process, set up the same way for the lock server and the store server: the Netty
 * transport, its event loops, its TLS, its executor, its limits and keepalive policy, and the grace period of its
 * shutdown. Every service gets the {@link Identities} interceptor, which reads the caller's certificate from the TLS
 * session, and {@link ReplySpin}'s, which counts each loop's calls in flight.
 */
public final class GrpcEndpoints {
    static final int INBOUND_METADATA_BYTES_MAX = 16 * 1024;
    static final int CONCURRENT_CALLS_PER_CONNECTION_MAX = 1_024;
    /** The shortest keepalive interval a client may use; a client pinging more often is disconnected. */
    static final long CLIENT_KEEPALIVE_SECONDS_MIN = 5;
    private static final long SHUTDOWN_GRACE_MILLIS = 2_000;

    private GrpcEndpoints() {}

    /**
     * Starts a gRPC server on {@code host:port} that hosts {@code services}.
     *
     * @param inboundMessageBytesMax the largest request the transport accepts: the largest of the services' own
     *     limits, since one transport hosts them all and each service's guard enforces its own
     * @param tls the TLS the port serves, and only it (a plaintext client fails its handshake); with a client CA, a
     *     client without a certificate of it is refused at the handshake; null = plaintext
     * @param replySpin the spin of the port's own event loops (see {@link ReplySpin}); null = gRPC's shared event
     *     loops, which never spin
     * @throws IOException when the port cannot be bound
     */
    public static Server start(String host, int port, int inboundMessageBytesMax,
            List<ServerServiceDefinition> services, TlsMaterial tls, ReplySpin replySpin) throws IOException {
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port));
        EventLoopGroup loops = replySpin == null ? null : spinningLoops(replySpin);
        if (loops != null) {
            builder.bossEventLoopGroup(loops).workerEventLoopGroup(loops).channelType(serverChannel());
        }
        if (tls != null) {
            builder.sslContext(sslContext(tls));
        }
        for (ServerServiceDefinition service : services) {
            // Every call learns who is calling from its transport, before any handler runs.
            builder.addService(ServerInterceptors.intercept(service, Identities.interceptor(),
                    ReplySpin.interceptor()));
        }
        Server server = builder
                // Handlers never block (Locks answers come from completions; Store hands off to its workers), so
                // they run on the transport's threads: no hand-off per call, which matters at tens of thousands of
                // calls per second.
                .directExecutor()
                .maxInboundMessageSize(inboundMessageBytesMax)
                .maxInboundMetadataSize(INBOUND_METADATA_BYTES_MAX)
                .maxConcurrentCallsPerConnection(CONCURRENT_CALLS_PER_CONNECTION_MAX)
                .permitKeepAliveTime(CLIENT_KEEPALIVE_SECONDS_MIN, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(true)
                .build();
        if (loops == null) {
            return server.start();
        }
        try {
            return new LoopOwningServer(server.start(), loops);
        } catch (IOException | RuntimeException e) {
            loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
    }

    /**
     * Returns the event loops of a port whose loops spin with {@code spin}: as many as gRPC's own (twice the CPUs),
     * daemon threads named {@code fencer-grpc-*}; epoll where Netty's native transport loads, else NIO.
     */
    private static EventLoopGroup spinningLoops(ReplySpin spin) {
        IoHandlerFactory handlers = Epoll.isAvailable() ? EpollIoHandler.newFactory(0, spin)
                : NioIoHandler.newFactory(SelectorProvider.provider(), spin);
        return new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory("fencer-grpc", true), handlers);
    }

    private static Class<? extends ServerChannel> serverChannel() {
        return Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    /** Returns the Netty TLS context of a gRPC port serving {@code tls}; the identity comes from its sessions. */
    static SslContext sslContext(TlsMaterial tls) {
        SslContextBuilder builder = GrpcSslContexts.configure(SslContextBuilder.forServer(tls.privateKey(),
                tls.certificateChain().toArray(X509Certificate[]::new)))
                .protocols(TlsMaterial.PROTOCOLS);
        if (tls.clientCertificatesRequired()) {
            builder.trustManager(tls.clientCa().toArray(X509Certificate[]::new)).clientAuth(ClientAuth.REQUIRE);
        }
        try {
            return builder.build();
        } catch (SSLException e) {
            throw new IllegalArgumentException("TLS of the gRPC port cannot be set up with " + tls + ": "
                    + e.getMessage(), e);
        }
    }

    /** Waits a short grace for in-flight calls of a shut-down gRPC server, then cuts them. Null-safe. */
    public static void awaitCalls(Server server) {
        if (server == null) {
            return;
        }
        try {
            if (!server.awaitTermination(SHUTDOWN_GRACE_MILLIS, TimeUnit.MILLISECONDS)) {
                server.shutdownNow();
                server.awaitTermination(SHUTDOWN_GRACE_MILLIS, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}

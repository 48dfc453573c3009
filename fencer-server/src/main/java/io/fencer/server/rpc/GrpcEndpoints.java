package io.fencer.server.rpc;

import io.fencer.core.Ticker;
import io.fencer.server.net.ConnectionCaps;
import io.fencer.server.net.PortLimits;
import io.fencer.server.tls.TlsMaterial;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
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
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC endpoint of a Fencer process, set up the same way for the lock server and the store server: the Netty
 * transport, its event loops, its TLS, its executor, its limits and keepalive policy, and the grace period of its
 * shutdown. Every service gets the {@link Identities} interceptor, which reads the caller's certificate from the TLS
 * session, and {@link ReplySpin}'s, which counts each loop's calls in flight.
 *
 * <p>Bounds against floods and slow clients ({@link PortLimits}): connections over the port's caps, in total or from
 * one address, are closed as they are accepted ({@link GrpcAcceptGate}); a connection must finish its TLS handshake
 * and HTTP/2 preface within the handshake timeout; one without calls for the gRPC idle timeout is closed (its client
 * reconnects when it next calls); the server pings every connection after {@link #KEEPALIVE_SECONDS} without
 * traffic and closes it when no answer comes within {@link #KEEPALIVE_TIMEOUT_SECONDS}, so connections of vanished
 * hosts stop counting against their address's cap within minutes, not hours.
 */
public final class GrpcEndpoints {
    private static final Logger LOG = LoggerFactory.getLogger(GrpcEndpoints.class);
    static final int INBOUND_METADATA_BYTES_MAX = 16 * 1024;
    static final int CONCURRENT_CALLS_PER_CONNECTION_MAX = 1_024;
    /** The shortest keepalive interval a client may use; a client pinging more often is disconnected. */
    static final long CLIENT_KEEPALIVE_SECONDS_MIN = 5;
    /** How long a connection may be silent before the server pings it. */
    static final long KEEPALIVE_SECONDS = 60;
    /** How long the server waits for a ping's answer before it closes the connection. */
    static final long KEEPALIVE_TIMEOUT_SECONDS = 20;
    /**
     * How many times a service's own message limit the transport reads: a request up to it reaches the service's
     * guard ({@link MalformedRequests}), which refuses it with the catalogue's RESOURCE_EXHAUSTED and ErrorDetail
     * naming the limit and the size; a larger one is refused by gRPC's transport from its length prefix, unread,
     * with gRPC's own sentence naming both sizes but no ErrorDetail (reading a message of any size only to refuse it
     * in the catalogue's shape would let one client make the server buffer any amount).
     */
    static final int TRANSPORT_MESSAGE_FACTOR = 2;
    private static final long SHUTDOWN_GRACE_MILLIS = 2_000;

    private GrpcEndpoints() {}

    /** Starts a gRPC server with the default {@link PortLimits} and metrics nobody reads: for tests. */
    public static Server start(String host, int port, int inboundMessageBytesMax,
            List<ServerServiceDefinition> services, TlsMaterial tls, ReplySpin replySpin) throws IOException {
        return start(host, port, inboundMessageBytesMax, services, tls, replySpin, PortLimits.DEFAULT,
                new SimpleMeterRegistry(), Ticker.system());
    }

    /**
     * Starts a gRPC server on {@code host:port} that hosts {@code services}.
     *
     * @param inboundMessageBytesMax the largest of the services' own request limits (one transport hosts them all
     *     and each service's guard enforces its own); the transport reads up to {@link #TRANSPORT_MESSAGE_FACTOR}
     *     times it, so that the guards refuse messages over their limits in the catalogue's shape
     * @param tls the TLS the port serves, and only it (a plaintext client fails its handshake); with a client CA, a
     *     client without a certificate of it is refused at the handshake; null = plaintext
     * @param replySpin the spin of the port's event loops (see {@link ReplySpin}); null = loops that never spin
     * @param limits the port's timeouts and connection caps ({@code grpc*} and the handshake timeout)
     * @param registry where the port's connection metrics go ({@code port="grpc"})
     * @throws IOException when the port cannot be bound
     */
    public static Server start(String host, int port, int inboundMessageBytesMax,
            List<ServerServiceDefinition> services, TlsMaterial tls, ReplySpin replySpin, PortLimits limits,
            MeterRegistry registry, Ticker ticker) throws IOException {
        EventLoopGroup loops = replySpin == null ? plainLoops() : spinningLoops(replySpin);
        try {
            Server server = builder(host, port, inboundMessageBytesMax, services, tls, limits, registry, ticker)
                    .bossEventLoopGroup(loops).workerEventLoopGroup(loops).build();
            return new LoopOwningServer(server.start(), loops);
        } catch (IOException | RuntimeException e) {
            loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
    }

    private static NettyServerBuilder builder(String host, int port, int inboundMessageBytesMax,
            List<ServerServiceDefinition> services, TlsMaterial tls, PortLimits limits, MeterRegistry registry,
            Ticker ticker) {
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port));
        ConnectionCaps caps = caps(limits, registry, ticker);
        builder.channelFactory(() -> {
            // The listening channel is made here so that the gate sits in its pipeline ahead of Netty's acceptor.
            ServerChannel channel = Epoll.isAvailable() ? new EpollServerSocketChannel() : new NioServerSocketChannel();
            channel.pipeline().addLast(new GrpcAcceptGate(caps));
            return channel;
        });
        if (tls != null) {
            builder.sslContext(sslContext(tls));
        }
        for (ServerServiceDefinition service : services) {
            // Every call learns who is calling from its transport, before any handler runs.
            builder.addService(ServerInterceptors.intercept(service, Identities.interceptor(),
                    ReplySpin.interceptor()));
        }
        return builder
                // Handlers never block (Locks answers come from completions; Store hands off to its workers), so
                // they run on the transport's threads: no hand-off per call, which matters at tens of thousands of
                // calls per second.
                .directExecutor()
                .maxInboundMessageSize(transportMessageBytesMax(inboundMessageBytesMax))
                .maxInboundMetadataSize(INBOUND_METADATA_BYTES_MAX)
                .maxConcurrentCallsPerConnection(CONCURRENT_CALLS_PER_CONNECTION_MAX)
                .handshakeTimeout(limits.handshakeTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .maxConnectionIdle(limits.grpcIdleTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveTime(KEEPALIVE_SECONDS, TimeUnit.SECONDS)
                .keepAliveTimeout(KEEPALIVE_TIMEOUT_SECONDS, TimeUnit.SECONDS)
                .permitKeepAliveTime(CLIENT_KEEPALIVE_SECONDS_MIN, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(true);
    }

    /** Returns the largest message the transport reads for services whose largest limit is {@code servicesMax}. */
    static int transportMessageBytesMax(int servicesMax) {
        return (int) Math.min(Integer.MAX_VALUE, (long) servicesMax * TRANSPORT_MESSAGE_FACTOR);
    }

    /** Returns the port's caps, the total lowered to half the process's file descriptor limit when that is lower. */
    private static ConnectionCaps caps(PortLimits limits, MeterRegistry registry, Ticker ticker) {
        long descriptors = fileDescriptorsMax();
        int connectionsMax = PortLimits.effectiveConnectionsMax(limits.grpcConnectionsMax(), descriptors);
        if (connectionsMax < limits.grpcConnectionsMax()) {
            LOG.warn("gRPC port: grpcConnectionsMax {} lowered to {}, half the process's file descriptor limit of {}"
                    + " (raise it with ulimit -n to allow more)", limits.grpcConnectionsMax(), connectionsMax,
                    descriptors);
        }
        return new ConnectionCaps("grpc", "grpc", connectionsMax,
                Math.min(limits.grpcConnectionsPerAddressMax(), connectionsMax), false, registry, ticker);
    }

    /** Returns the process's file descriptor limit, or -1 where the JVM does not tell. */
    static long fileDescriptorsMax() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
            return unix.getMaxFileDescriptorCount();
        }
        return -1;
    }

    /** Returns event loops that never spin, as many as gRPC's own (twice the CPUs), named {@code fencer-grpc-*}. */
    private static EventLoopGroup plainLoops() {
        IoHandlerFactory handlers = Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        return new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory("fencer-grpc", true), handlers);
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

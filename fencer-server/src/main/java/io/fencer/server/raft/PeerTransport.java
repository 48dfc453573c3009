package io.fencer.server.raft;

import io.fencer.core.Ticker;
import io.fencer.server.tls.TlsMaterial;
import java.net.InetSocketAddress;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.rpc.RpcFactory;
import org.apache.ratis.rpc.RpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.RaftServerRpc;
import org.apache.ratis.server.ServerFactory;
import org.apache.ratis.thirdparty.io.netty.channel.socket.SocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.ClientAuth;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContext;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContextBuilder;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandler;

/**
 * Fencer's transport between the peers of a Raft group: Raft's server-to-server calls in length-prefixed frames
 * ({@link PeerFrames}) over one Netty connection per pair of peers, opened by a handshake that proves the group
 * secret ({@link PeerHandshake}) when the group has one, with mutual TLS when the server has a certificate. Ratis
 * loads it by class name ({@link RaftConfigKeys.Rpc#setType}).
 *
 * <p>Why not Ratis's gRPC transport: on a two-core machine its HTTP/2 streams cost a follower about a quarter of a
 * millisecond of CPU per entry and several thread hand-offs per commit; three bare Ratis peers committed one entry
 * after another at 560 per second over gRPC and 1,138 per second over a plain Netty connection (p50 1.89 against
 * 0.74 ms). Ratis's own Netty transport has no TLS and answers failures with Java serialization; this one has both
 * right, and serves only what peers need of each other: a client of the group, even one holding a certificate of
 * the group's CA, cannot submit commands or change the group on the Raft port (see {@link PeerRpc}).
 */
final class PeerTransport implements RpcType {
    private static final String HOST_KEY = "fencer.raft.peer.host";
    private static final String PORT_KEY = "fencer.raft.peer.port";
    private static final String ID_KEY = "fencer.raft.peer.id";
    private static final String TLS_KEY = "fencer.raft.peer.tls";
    private static final String TICKER_KEY = "fencer.raft.peer.ticker";
    private static final String SECRET_KEY = "fencer.raft.peer.secret";
    private static final String RESERVATION_KEY = "fencer.raft.peer.reservation";
    /**
     * The share of the heap that the frames of admitted connections may fill at worst, as its divisor: a quarter.
     * Each admitted connection may buffer a frame of up to {@link PeerFrames#frameBytesMax} bytes.
     */
    static final int HEAP_SHARE_DIVISOR = 4;

    /** Ratis makes one by reflection from the class name in its properties. */
    PeerTransport() {
    }

    /**
     * Makes Ratis use this transport, listening on {@code host:port} for the other peers, as peer {@code id} (the id
     * its handshake proves; Ratis makes the transport before it knows its own id).
     */
    static void configure(RaftProperties properties, String host, int port, String id) {
        RaftConfigKeys.Rpc.setType(properties, new PeerTransport());
        properties.set(HOST_KEY, host);
        properties.setInt(PORT_KEY, port);
        properties.set(ID_KEY, id);
    }

    /**
     * Returns Ratis's parameters carrying this transport's TLS ({@code tls} null = plaintext), the group secret that
     * every connection's handshake proves ({@code secret} null = no handshake), the clock of its log's rate limit and
     * the hold on its port that it lets go just before it binds the port ({@code reserved} null = none).
     */
    static Parameters parameters(TlsMaterial tls, GroupSecret secret, Ticker ticker, PortReservation reserved) {
        Parameters parameters = new Parameters();
        parameters.put(TICKER_KEY, ticker, Ticker.class);
        if (reserved != null) {
            parameters.put(RESERVATION_KEY, reserved, PortReservation.class);
        }
        if (tls != null) {
            parameters.put(TLS_KEY, tls, TlsMaterial.class);
        }
        if (secret != null) {
            parameters.put(SECRET_KEY, secret, GroupSecret.class);
        }
        return parameters;
    }

    /** Returns the largest frame a peer accepts with {@code properties}. */
    static int frameBytesMax(RaftProperties properties) {
        return PeerFrames.frameBytesMax(
                RaftServerConfigKeys.Log.Appender.bufferByteLimit(properties).getSizeInt(),
                RaftServerConfigKeys.Log.Appender.snapshotChunkSizeMax(properties).getSizeInt());
    }

    /**
     * Returns how many admitted connections the Raft port holds at once: {@link PeerRpc#INBOUND_CONNECTIONS_MAX}, or
     * fewer so that all of them, each buffering a frame of {@code frameBytesMax}, fit in 1/{@value
     * #HEAP_SHARE_DIVISOR} of {@code heapBytesMax} ({@link Runtime#maxMemory()}).
     */
    static int inboundConnectionsMax(int frameBytesMax, long heapBytesMax) {
        long fit = heapBytesMax / HEAP_SHARE_DIVISOR / frameBytesMax;
        return (int) Math.min(PeerRpc.INBOUND_CONNECTIONS_MAX, fit);
    }

    /**
     * Checks that a group of {@code peers} can work in a heap of {@code heapBytesMax}: each peer must be able to admit
     * a connection from every other peer and one more, which replaces a broken one.
     *
     * @throws IllegalStateException naming the heap to give the JVM when it cannot
     */
    static void checkHeap(int peers, int frameBytesMax, long heapBytesMax) {
        if (peers <= 1) {
            return;
        }
        int admitted = inboundConnectionsMax(frameBytesMax, heapBytesMax);
        if (admitted < peers) {
            long neededMib = ((long) peers * frameBytesMax * HEAP_SHARE_DIVISOR + (1 << 20) - 1) >> 20;
            throw new IllegalStateException("a peer of a group of " + peers + " needs room for " + peers
                    + " Raft connections of up to " + (frameBytesMax >> 20) + " MiB each (one per other peer, one "
                    + "spare), in a quarter of its heap; this JVM's heap (" + (heapBytesMax >> 20) + " MiB) holds "
                    + admitted + ": start it with -Xmx" + neededMib + "m or more");
        }
    }

    @Override
    public String name() {
        return PeerTransport.class.getName();
    }

    @Override
    public RpcFactory newFactory(Parameters parameters) {
        return new Factory(this, parameters.get(TLS_KEY, TlsMaterial.class),
                parameters.get(SECRET_KEY, GroupSecret.class), parameters.get(TICKER_KEY, Ticker.class),
                parameters.get(RESERVATION_KEY, PortReservation.class));
    }

    /**
     * What a peer's transport is set to: its id, its address, its TLS (null = plaintext), its group secret (null = no
     * handshake), its bounds, and the hold on its port until it binds it (null = none).
     */
    record Settings(String id, String host, int port, SslContext serverTls, SslContext clientTls, GroupSecret secret,
            int frameBytesMax, int inboundConnectionsMax, Duration handshakeTimeout, Duration requestTimeout,
            Duration connectTimeout, Ticker ticker, PortReservation reserved) {
        static Settings of(RaftProperties properties, TlsMaterial tls, GroupSecret secret, Ticker ticker,
                PortReservation reserved) {
            int frameBytesMax = PeerTransport.frameBytesMax(properties);
            Duration requestTimeout = Duration.ofMillis(RaftServerConfigKeys.Rpc.requestTimeout(properties).toLong(
                    TimeUnit.MILLISECONDS));
            Duration connectTimeout = Duration.ofMillis(RaftServerConfigKeys.Rpc.timeoutMin(properties).toLong(
                    TimeUnit.MILLISECONDS));
            String id = properties.get(ID_KEY);
            String host = properties.get(HOST_KEY);
            int port = properties.getInt(PORT_KEY, -1);
            if (id == null || host == null || port < 0) {
                throw new IllegalStateException("the peer transport has no id or address: " + ID_KEY + "=" + id + ", "
                        + HOST_KEY + "=" + host + ", " + PORT_KEY + "=" + port);
            }
            SslContext serverTls = tls == null ? null : serverTlsOf(tls);
            SslContext clientTls = tls == null ? null : clientTlsOf(tls);
            return new Settings(id, host, port, serverTls, clientTls, secret, frameBytesMax,
                    PeerTransport.inboundConnectionsMax(frameBytesMax, Runtime.getRuntime().maxMemory()),
                    PeerHandshake.TIMEOUT,
                    requestTimeout, connectTimeout, ticker, reserved);
        }
    }

    private static SslContext serverTlsOf(TlsMaterial tls) {
        try {
            return SslContextBuilder.forServer(tls.privateKey(), chain(tls))
                    .trustManager(PeerTrust.of(tls.peerTrust()))
                    .clientAuth(ClientAuth.REQUIRE).protocols(TlsMaterial.PROTOCOLS).build();
        } catch (SSLException e) {
            throw new IllegalStateException("the Raft port's TLS cannot be set up from " + tls, e);
        }
    }

    private static SslContext clientTlsOf(TlsMaterial tls) {
        try {
            return SslContextBuilder.forClient().keyManager(tls.privateKey(), chain(tls))
                    .trustManager(PeerTrust.of(tls.peerTrust()))
                    .protocols(TlsMaterial.PROTOCOLS).build();
        } catch (SSLException e) {
            throw new IllegalStateException("the TLS to other peers cannot be set up from " + tls, e);
        }
    }

    private static X509Certificate[] chain(TlsMaterial tls) {
        return tls.certificateChain().toArray(X509Certificate[]::new);
    }

    /** Returns the TLS handler of a link to {@code address}: the peer's certificate must name the host dialled. */
    static SslHandler clientTlsHandler(SslContext tls, SocketChannel channel, InetSocketAddress address) {
        SslHandler handler = tls.newHandler(channel.alloc(), address.getHostString(), address.getPort());
        SSLParameters parameters = handler.engine().getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        handler.engine().setSSLParameters(parameters);
        return handler;
    }

    /** Ratis's factory of this transport's server side; log appenders are Ratis's default ones. */
    private static final class Factory implements ServerFactory {
        private final PeerTransport type;
        private final TlsMaterial tls;
        private final GroupSecret secret;
        private final Ticker ticker;
        private final PortReservation reserved;

        Factory(PeerTransport type, TlsMaterial tls, GroupSecret secret, Ticker ticker, PortReservation reserved) {
            this.type = type;
            this.tls = tls;
            this.secret = secret;
            this.ticker = ticker;
            this.reserved = reserved;
        }

        @Override
        public RpcType getRpcType() {
            return type;
        }

        @Override
        public RaftServerRpc newRaftServerRpc(RaftServer server) {
            return PeerRpc.create(server, Settings.of(server.getProperties(), tls, secret, ticker, reserved), type);
        }
    }
}

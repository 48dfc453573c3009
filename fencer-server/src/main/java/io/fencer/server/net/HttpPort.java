package io.fencer.server.net;

import io.fencer.server.tls.TlsMaterial;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

/**
 * One HTTP/1.1 port of a Fencer process (the admin port, the HTTP port), on Netty's HTTP codec, plaintext or TLS,
 * bounded against slow clients and floods by {@link PortLimits}:
 * <ul>
 *   <li>connections over the port's caps (in total, per remote address) are closed as they are accepted
 *       ({@link ConnectionCaps});
 *   <li>a TLS handshake must end within {@link PortLimits#handshakeTimeout()}; it runs on the event loop, a few
 *       crypto steps at a time as bytes arrive, so a stalled handshake holds no thread;
 *   <li>a request's line and headers must arrive within {@link PortLimits#headerReadTimeout()} of their first byte
 *       (of the connection, for its first request), its body within {@link PortLimits#bodyReadTimeout()}, and a
 *       keep-alive connection's next request must start within {@link PortLimits#httpIdleTimeout()}; past any of
 *       them the connection is closed;
 *   <li>a body is kept up to {@link Settings#requestBodyBytesMax()}, and the bodies the port keeps at once up to
 *       {@link Settings#bodiesBytesMax()}: beyond either, the rest is read and dropped (up to
 *       {@link Settings#discardedBytesMax()}, then the connection is closed) and the handler answers the overflow;
 *   <li>one request at a time per connection: the next is not read before the answer to this one is written.
 * </ul>
 *
 * <p>Why Netty rather than the JDK's {@code com.sun.net.httpserver}, which served these ports before: the JDK server
 * reads a request (and runs a TLS handshake) blocking on a worker thread, so each slow client held a thread (one
 * byte stalled the admin port, whose pool had one), it has no header-read timeout that would not also cut long
 * Acquire waits, and it cannot cap connections per address. Netty reads every connection on a few event loops,
 * without blocking, so a slow client costs its connection and nothing else; it is the transport gRPC already runs on
 * (the same release, unshaded), maintained, and its HTTP/1.1 codec bounds the request line and headers itself.
 */
public final class HttpPort implements AutoCloseable {
    /** The longest request line (method, path, version) the codec reads; a longer one is answered 414. */
    static final int REQUEST_LINE_BYTES_MAX = 4_096;
    /** The most bytes of headers the codec reads; more is answered 431. */
    static final int HEADER_BYTES_MAX = 8_192;
    /** The largest piece of a body the codec hands on at once. */
    private static final int CHUNK_BYTES_MAX = 8_192;
    private static final int BACKLOG = 128;

    private final Settings settings;
    private final EventLoopGroup loops;
    private final Channel channel;

    /**
     * What a port is: its name in logs and metrics, its body bounds, and its event loops.
     *
     * @param name "admin" or "http": the port's name in log lines and the {@code port} tag of its metrics
     * @param requestBodyBytesMax the largest body one request may have
     * @param bodiesBytesMax the most body bytes the port keeps at once, over all its connections
     * @param discardedBytesMax how much of an overflowing body is read and dropped before the connection is closed
     *     (so that a client still sending its body gets to read the answer)
     * @param threads the event loops: every connection is read, and every handler runs, on one of them
     */
    public record Settings(String name, int requestBodyBytesMax, long bodiesBytesMax, long discardedBytesMax,
            int threads) {
        public Settings {
            if (requestBodyBytesMax < 0 || bodiesBytesMax < requestBodyBytesMax || discardedBytesMax < 0
                    || threads < 1) {
                throw new IllegalArgumentException("HTTP port settings out of range: " + name + ", body "
                        + requestBodyBytesMax + ", bodies " + bodiesBytesMax + ", discarded " + discardedBytesMax
                        + ", threads " + threads);
            }
        }
    }

    /** Answers the requests of a port. */
    public interface Handler {
        /**
         * Answers {@code call} through {@link HttpCall#answer}, now or later, from any thread. Runs on the
         * connection's event loop: it must not block.
         */
        void handle(HttpCall call);
    }

    private HttpPort(Settings settings, EventLoopGroup loops, Channel channel) {
        this.settings = settings;
        this.loops = loops;
        this.channel = channel;
    }

    /**
     * Binds and starts a port on {@code host:port}.
     *
     * @param tls the TLS it serves (and only it), with the client port's client certificate rule; null = plaintext
     * @throws IOException when the address cannot be bound
     */
    public static HttpPort start(String host, int port, TlsMaterial tls, PortLimits limits, Settings settings,
            ConnectionCaps caps, Handler handler) throws IOException {
        EventLoopGroup loops = new MultiThreadIoEventLoopGroup(settings.threads(),
                new DefaultThreadFactory("fencer-" + settings.name() + "-port", true), NioIoHandler.newFactory());
        SSLContext context = tls == null ? null : tls.sslContext();
        SSLParameters parameters = tls == null ? null : tls.serverParameters(context);
        AtomicLong bodiesBytes = new AtomicLong();
        ServerBootstrap bootstrap = new ServerBootstrap().group(loops).channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, BACKLOG)
                .handler(new AcceptGate(caps));
        childOptions().forEach((option, value) -> childOption(bootstrap, option, value));
        bootstrap.childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel channel) {
                ChannelPipeline pipeline = channel.pipeline();
                if (context != null) {
                    pipeline.addLast("tls", sslHandler(context, parameters, limits));
                }
                HttpConnection connection = new HttpConnection(settings, limits, caps, bodiesBytes, handler,
                        context != null);
                pipeline.addLast("first-bytes", connection.firstBytes());
                pipeline.addLast("codec", new HttpServerCodec(REQUEST_LINE_BYTES_MAX, HEADER_BYTES_MAX,
                        CHUNK_BYTES_MAX));
                pipeline.addLast("connection", connection);
            }
        });
        ChannelFuture bound = bootstrap.bind(new InetSocketAddress(host, port)).awaitUninterruptibly();
        if (!bound.isSuccess()) {
            loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            Throwable cause = bound.cause();
            throw cause instanceof IOException io ? io : new IOException("the " + settings.name()
                    + " port cannot be bound on " + host + ":" + port + ": " + cause, cause);
        }
        return new HttpPort(settings, loops, bound.channel());
    }

    /**
     * Returns the options of every accepted connection. Nagle's algorithm off: an answer's headers and body may
     * leave in two writes, and with it on the second waits for the client's delayed ACK, some 40 ms per call. No
     * automatic reads: a connection reads only while it waits for a request (see {@link HttpConnection}).
     */
    static Map<ChannelOption<?>, Object> childOptions() {
        return Map.of(ChannelOption.TCP_NODELAY, true, ChannelOption.AUTO_READ, false);
    }

    @SuppressWarnings("unchecked")
    private static <T> void childOption(ServerBootstrap bootstrap, ChannelOption<T> option, Object value) {
        bootstrap.childOption(option, (T) value);
    }

    private static SslHandler sslHandler(SSLContext context, SSLParameters parameters, PortLimits limits) {
        SSLEngine engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        engine.setSSLParameters(parameters);
        SslHandler handler = new SslHandler(engine);
        handler.setHandshakeTimeoutMillis(limits.handshakeTimeout().toMillis());
        return handler;
    }

    /** Returns the bound port. */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** Returns the port's name ("admin", "http"). */
    public String name() {
        return settings.name();
    }

    /** Stops accepting and closes every connection; calls in flight are answered to nobody. */
    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).syncUninterruptibly();
    }
}

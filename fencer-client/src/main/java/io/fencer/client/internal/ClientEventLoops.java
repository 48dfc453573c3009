package io.fencer.client.internal;

import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The I/O threads of one client's channels, owned by the client and ended when it closes.
 *
 * <p>Why not gRPC's shared group: its threads outlive the last channel by a second (gRPC releases the group after a
 * delay), and a JVM that exits while a thread waits in native code (an event loop in {@code epoll_wait}) first waits
 * up to 300 ms for it (HotSpot's exit waits for threads in native code to block). A command-line call that opens a
 * client, locks, runs a command and exits paid those 300 ms on every run: a third of {@code fencer lock exec}'s wall
 * time. With its own threads, a closed client leaves none behind.
 */
final class ClientEventLoops implements AutoCloseable {
    /** One client's channels (one per peer) need few threads: each channel is served by one. */
    static final int THREADS_MAX = 2;
    /** How long {@link #close} waits for the threads to end: they end at once once no channel uses them. */
    private static final long TERMINATION_WAIT_MILLIS = 1_000;

    private final EventLoopGroup group;
    private final boolean epoll;

    ClientEventLoops(String threadPrefix) {
        int threads = Math.min(THREADS_MAX, Runtime.getRuntime().availableProcessors());
        DefaultThreadFactory factory = new DefaultThreadFactory(threadPrefix, true);
        this.epoll = Epoll.isAvailable();
        this.group = epoll ? new EpollEventLoopGroup(threads, factory) : new NioEventLoopGroup(threads, factory);
    }

    /** Returns {@code builder} set to run its channel on these threads. */
    NettyChannelBuilder use(NettyChannelBuilder builder) {
        return builder.eventLoopGroup(group)
                .channelType(epoll ? EpollSocketChannel.class : NioSocketChannel.class);
    }

    /** Ends the threads, after the channels using them were shut down; waits at most a second. Idempotent. */
    @Override
    public void close() {
        group.shutdownGracefully(0, TERMINATION_WAIT_MILLIS, TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(TERMINATION_WAIT_MILLIS);
    }
}

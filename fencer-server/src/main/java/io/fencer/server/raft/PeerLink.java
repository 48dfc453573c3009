package io.fencer.server.raft;

import io.fencer.server.raft.PeerFrames.Frame;
import io.fencer.server.raft.PeerFrames.Kind;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.exceptions.TimeoutIOException;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.io.netty.bootstrap.Bootstrap;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.channel.Channel;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelFuture;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerContext;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInitializer;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelOption;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.SimpleChannelInboundHandler;
import org.apache.ratis.thirdparty.io.netty.channel.socket.SocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection from this peer to another on its Raft port: calls go out as frames, answers are matched to them by
 * call id. A link that failed stays failed; its owner ({@link PeerRpc}) replaces it with a new one.
 */
final class PeerLink implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(PeerLink.class);
    /** Calls waiting for an answer on one link; Ratis sends one AppendEntries at a time per follower. */
    static final int CALLS_IN_FLIGHT_MAX = 1_024;

    private final RaftPeer peer;
    private final Channel channel;
    private final int frameBytesMax;
    private final AtomicLong callIds = new AtomicLong();
    private final Map<Long, Call> calls = new ConcurrentHashMap<>();

    private record Call(Kind kind, CompletableFuture<MessageLite> answer) {
    }

    private PeerLink(RaftPeer peer, Channel channel, int frameBytesMax) {
        this.peer = peer;
        this.channel = channel;
        this.frameBytesMax = frameBytesMax;
    }

    /**
     * Connects to {@code peer}'s Raft port, with TLS when {@code tls} is not null (the handshake completes with
     * the first call, which waits for it).
     *
     * @throws IOException when the connection is refused or not made within {@code connectTimeout}
     */
    static PeerLink connect(RaftPeer peer, EventLoopGroup group, Class<? extends Channel> channelType,
            SslContext tls, int frameBytesMax, Duration connectTimeout) throws IOException {
        InetSocketAddress address = address(peer);
        PeerLink[] link = new PeerLink[1];
        Bootstrap bootstrap = new Bootstrap().group(group).channel(channelType)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, Math.toIntExact(connectTimeout.toMillis()))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        if (tls != null) {
                            channel.pipeline().addLast(PeerTransport.clientTlsHandler(tls, channel, address));
                        }
                        channel.pipeline().addLast(PeerFrames.decoder(frameBytesMax), new Answers(() -> link[0]));
                    }
                });
        ChannelFuture connected = bootstrap.connect(address);
        if (!connected.awaitUninterruptibly(connectTimeout.toMillis() + 1_000, TimeUnit.MILLISECONDS)
                || !connected.isSuccess()) {
            connected.channel().close();
            Throwable cause = connected.cause();
            throw new IOException("cannot reach peer " + peer.getId() + " at " + peer.getAddress() + ": "
                    + (cause == null ? "no connection within " + connectTimeout.toMillis() + " ms" : cause), cause);
        }
        link[0] = new PeerLink(peer, connected.channel(), frameBytesMax);
        connected.channel().closeFuture().addListener(closed -> link[0].failCalls("the link was closed"));
        return link[0];
    }

    private static InetSocketAddress address(RaftPeer peer) throws IOException {
        String address = peer.getAddress();
        int colon = address == null ? -1 : address.lastIndexOf(':');
        if (colon <= 0) {
            throw new IOException("peer " + peer.getId() + " has no host:port address: " + address);
        }
        return InetSocketAddress.createUnresolved(address.substring(0, colon),
                Integer.parseInt(address.substring(colon + 1)));
    }

    /** Returns true while the connection stands; a closed link only fails its calls. */
    boolean isOpen() {
        return channel.isActive();
    }

    /** Sends {@code request} as a call of {@code kind}; the answer completes with the reply or a typed failure. */
    CompletableFuture<MessageLite> call(Kind kind, MessageLite request) {
        CompletableFuture<MessageLite> answer = new CompletableFuture<>();
        if (calls.size() >= CALLS_IN_FLIGHT_MAX) {
            answer.completeExceptionally(new IOException(CALLS_IN_FLIGHT_MAX + " calls already wait on the link to "
                    + peer.getId() + "; refusing a " + kind));
            return answer;
        }
        int frameBytes = request.getSerializedSize() + PeerFrames.HEADER_BYTES;
        if (frameBytes - Integer.BYTES > frameBytesMax) {
            answer.completeExceptionally(new IOException("a " + kind + " of " + frameBytes + " bytes exceeds the "
                    + frameBytesMax + " bytes a peer accepts in a frame"));
            return answer;
        }
        long callId = callIds.incrementAndGet();
        calls.put(callId, new Call(kind, answer));
        if (!channel.isActive()) {
            failCalls("the link is closed");
            return answer;
        }
        channel.writeAndFlush(PeerFrames.encode(channel.alloc(), kind, callId, request)).addListener(written -> {
            if (!written.isSuccess()) {
                fail(callId, new IOException("cannot send a " + kind + " to peer " + peer.getId(), written.cause()));
                channel.close();
            }
        });
        return answer;
    }

    /**
     * Sends {@code request} and waits for its answer for at most {@code timeout}; a call that times out closes the
     * link, so that a late answer cannot be taken for another call's and the next call reconnects.
     */
    MessageLite callAndWait(Kind kind, MessageLite request, Duration timeout) throws IOException {
        CompletableFuture<MessageLite> answer = call(kind, request);
        try {
            return answer.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for peer " + peer.getId() + "'s " + kind);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof IOException io ? io : new IOException(kind + " to " + peer.getId(), cause);
        } catch (TimeoutException e) {
            channel.close();
            throw new TimeoutIOException("peer " + peer.getId() + " did not answer a " + kind + " within "
                    + timeout.toMillis() + " ms", e);
        }
    }

    private void answered(Frame frame) {
        Call call = calls.remove(frame.callId());
        if (call == null) {
            LOG.debug("an answer to call {} from peer {} that nobody waits for (timed out)", frame.callId(),
                    peer.getId());
            return;
        }
        if (frame.kind() == Kind.REFUSED) {
            call.answer.completeExceptionally(new PeerRefusedException(peer.getId() + " refused a " + call.kind
                    + ": " + frame.reason()));
        } else if (frame.kind() != call.kind) {
            call.answer.completeExceptionally(new IOException("peer " + peer.getId() + " answered a " + call.kind
                    + " with a frame of kind " + frame.kindCode()));
            channel.close();
        } else {
            try {
                call.answer.complete(frame.reply());
            } catch (IOException e) {
                call.answer.completeExceptionally(new IOException("peer " + peer.getId() + " sent an unreadable "
                        + call.kind + " answer", e));
                channel.close();
            }
        }
    }

    private void fail(long callId, IOException failure) {
        Call call = calls.remove(callId);
        if (call != null) {
            call.answer.completeExceptionally(failure);
        }
    }

    private void failCalls(String why) {
        for (Long callId : calls.keySet()) {
            fail(callId, new IOException("no answer from peer " + peer.getId() + " at " + peer.getAddress() + ": "
                    + why));
        }
    }

    @Override
    public void close() {
        channel.close();
    }

    @Override
    public String toString() {
        return "PeerLink[" + peer.getId() + " at " + peer.getAddress() + (isOpen() ? "" : ", closed") + "]";
    }

    /** Hands each answer read on the connection to its link; anything unreadable ends the connection. */
    private static final class Answers extends SimpleChannelInboundHandler<ByteBuf> {
        private final Supplier<PeerLink> link;

        Answers(Supplier<PeerLink> link) {
            this.link = link;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext context, ByteBuf frame) throws Exception {
            PeerLink owner = link.get();
            if (owner == null) {
                context.close();
                return;
            }
            owner.answered(PeerFrames.read(frame));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            PeerLink owner = link.get();
            LOG.debug("the link to {} ends: {}", owner == null ? context.channel().remoteAddress() : owner.peer,
                    cause.toString());
            context.close();
        }
    }
}

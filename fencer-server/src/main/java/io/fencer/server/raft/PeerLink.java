package io.fencer.server.raft;

import io.fencer.server.raft.PeerFrames.Frame;
import io.fencer.server.raft.PeerFrames.Kind;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.net.ssl.SSLException;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.exceptions.TimeoutIOException;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.io.netty.bootstrap.Bootstrap;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.apache.ratis.thirdparty.io.netty.channel.Channel;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelFuture;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerContext;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInboundHandlerAdapter;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInitializer;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelOption;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.SimpleChannelInboundHandler;
import org.apache.ratis.thirdparty.io.netty.channel.socket.SocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContext;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandler;
import org.apache.ratis.thirdparty.io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection from this peer to another on its Raft port: calls go out as frames, answers are matched to them by
 * call id. A link that failed stays failed; its owner ({@link PeerRpc}) replaces it with a new one. A link that could
 * not be made ({@link #failed}) fails every call with the reason.
 */
final class PeerLink implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(PeerLink.class);
    /** Calls waiting for an answer on one link; Ratis sends one AppendEntries at a time per follower. */
    static final int CALLS_IN_FLIGHT_MAX = 1_024;
    /**
     * The largest frames whose bytes may wait on one link to be taken by its socket: a peer that reads nothing would
     * otherwise hold {@link #CALLS_IN_FLIGHT_MAX} frames of up to 8 MiB each in this peer's heap. Two, so that a
     * snapshot chunk or a vote can follow an AppendEntries that waits; Ratis sends one call at a time per peer.
     */
    static final int QUEUED_FRAMES_MAX = 2;

    private final RaftPeer peer;
    /** The connection; null for a link that could not be made. */
    private final Channel channel;
    private final int frameBytesMax;
    /** Why the link could not be made; null for a made one. */
    private final IOException failure;
    private final AtomicLong callIds = new AtomicLong();
    /** The bytes of the frames written to the connection that its socket has not taken yet. */
    private final AtomicLong bytesQueued = new AtomicLong();
    private final Map<Long, Call> calls = new ConcurrentHashMap<>();
    /** The TLS handler of a link made with TLS, kept past the pipeline's teardown for its handshake's outcome. */
    private volatile SslHandler tls;

    private record Call(Kind kind, CompletableFuture<MessageLite> answer) {
    }

    private PeerLink(RaftPeer peer, Channel channel, int frameBytesMax, IOException failure) {
        this.peer = peer;
        this.channel = channel;
        this.frameBytesMax = frameBytesMax;
        this.failure = failure;
    }

    /**
     * Returns a link to {@code peer} that could not be made: it is never open and fails every call with
     * {@code failure}'s message. Ratis logs a proxy that cannot be created with its stack trace at every attempt, a
     * heartbeat or a vote apart; a link failing its calls is logged by Ratis's callers far less often.
     */
    static PeerLink failed(RaftPeer peer, IOException failure) {
        return new PeerLink(peer, null, 0, failure);
    }

    /**
     * Connects to {@code peer}'s Raft port, with TLS when {@code tls} is not null, and, when {@code handshake} is not
     * null, returns only once both ends proved the group secret ({@link PeerHandshake}), within
     * {@link PeerHandshake#TIMEOUT}. Without a handshake, a TLS handshake completes with the first call, which waits
     * for it.
     *
     * @throws IOException when the connection is refused or not made within {@code connectTimeout}, or its handshake
     *     fails (then its cause is the {@link PeerHandshake.Failure}) or does not end in time
     */
    static PeerLink connect(RaftPeer peer, EventLoopGroup group, Class<? extends Channel> channelType,
            SslContext tls, PeerHandshake handshake, int frameBytesMax, Duration connectTimeout) throws IOException {
        InetSocketAddress address = address(peer);
        PeerLink[] link = new PeerLink[1];
        SslHandler[] tlsHandler = new SslHandler[1];
        CompletableFuture<Void> admitted = new CompletableFuture<>();
        Bootstrap bootstrap = new Bootstrap().group(group).channel(channelType)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, Math.toIntExact(connectTimeout.toMillis()))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        if (tls != null) {
                            tlsHandler[0] = PeerTransport.clientTlsHandler(tls, channel, address);
                            channel.pipeline().addLast(tlsHandler[0]);
                        }
                        if (handshake == null) {
                            channel.pipeline().addLast(PeerFrames.decoder(frameBytesMax), new Answers(() -> link[0]));
                            admitted.complete(null);
                        } else {
                            channel.pipeline().addLast(new Dial(handshake.dialling(peer.getId().toString()), admitted,
                                    frameBytesMax, () -> link[0]));
                        }
                    }
                });
        ChannelFuture connected = bootstrap.connect(address);
        if (!connected.awaitUninterruptibly(connectTimeout.toMillis() + 1_000, TimeUnit.MILLISECONDS)
                || !connected.isSuccess()) {
            connected.channel().close();
            Throwable cause = connected.cause();
            throw new IOException("cannot reach peer " + peer.getId() + " at " + peer.getAddress() + ": "
                    + (cause == null ? "no connection within " + connectTimeout.toMillis() + " ms" : why(cause)),
                    cause);
        }
        link[0] = new PeerLink(peer, connected.channel(), frameBytesMax, null);
        link[0].tls = tlsHandler[0];
        connected.channel().closeFuture().addListener(closed -> link[0].failCalls(link[0].closedWhy("was")));
        awaitAdmission(peer, connected.channel(), admitted);
        return link[0];
    }

    /**
     * Says in words why a connection failed: Netty's native transport names the errno ({@code error(-111)}) and the
     * address, which the caller's message names already; a failed TLS handshake says whose certificate was refused
     * and why ({@link PeerTrust#refusal}).
     */
    static String why(Throwable cause) {
        String tls = tlsFailure(cause);
        if (tls != null) {
            return tls;
        }
        String message = String.valueOf(cause.getMessage());
        if (message.contains("Connection refused") || message.contains("error(-111)")) {
            return "connection refused";
        }
        if (message.contains("No route to host") || message.contains("error(-113)")) {
            return "no route to host";
        }
        return cause.getClass().getSimpleName() + ": " + message;
    }

    /** Says whose certificate a failed TLS handshake refused and why, or returns null for another failure. */
    private static String tlsFailure(Throwable cause) {
        for (Throwable inner = cause; inner != null; inner = inner.getCause()) {
            if (inner instanceof SSLException) {
                return "its TLS handshake failed: " + PeerTrust.refusal(inner);
            }
        }
        return null;
    }

    /** Waits until the handshake on {@code channel} succeeded; else closes it and says why. */
    private static void awaitAdmission(RaftPeer peer, Channel channel, CompletableFuture<Void> admitted)
            throws IOException {
        try {
            admitted.get(PeerHandshake.TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            channel.close();
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted in the handshake with peer " + peer.getId());
        } catch (ExecutionException e) {
            channel.close();
            Throwable cause = e.getCause();
            boolean otherSecret = cause instanceof PeerHandshake.Failure failure
                    && (failure.reason == PeerHandshake.Reason.REFUSED_BY_PEER
                    || failure.reason == PeerHandshake.Reason.BAD_ANSWER);
            String hint = otherSecret ? " (is --raft-secret-file the same file on every peer?)" : "";
            throw new IOException("the Raft handshake with peer " + peer.getId() + " at " + peer.getAddress()
                    + " failed: " + Objects.requireNonNullElse(tlsFailure(cause), cause.getMessage()) + hint,
                    cause);
        } catch (TimeoutException e) {
            channel.close();
            throw new TimeoutIOException("the Raft handshake with peer " + peer.getId() + " at " + peer.getAddress()
                    + " did not end within " + PeerHandshake.TIMEOUT.toMillis() + " ms", e);
        }
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

    /** Returns true unless this link could not be made ({@link #failed}). */
    boolean wasMade() {
        return failure == null;
    }

    /** Returns true while the connection stands; a closed link only fails its calls. */
    boolean isOpen() {
        return channel != null && channel.isActive();
    }

    /** Sends {@code request} as a call of {@code kind}; the answer completes with the reply or a typed failure. */
    CompletableFuture<MessageLite> call(Kind kind, MessageLite request) {
        CompletableFuture<MessageLite> answer = new CompletableFuture<>();
        if (failure != null) {
            answer.completeExceptionally(new IOException(failure.getMessage(), failure.getCause()));
            return answer;
        }
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
        long queued = bytesQueued.addAndGet(frameBytes);
        if (queued > queuedBytesMax(frameBytesMax)) {
            bytesQueued.addAndGet(-frameBytes);
            answer.completeExceptionally(new IOException((queued - frameBytes) + " bytes of calls already wait to be "
                    + "sent on the link to " + peer.getId() + " (at most " + queuedBytesMax(frameBytesMax)
                    + "): it reads none; refusing a " + kind + " of " + frameBytes + " bytes"));
            return answer;
        }
        long callId = callIds.incrementAndGet();
        calls.put(callId, new Call(kind, answer));
        if (!channel.isActive()) {
            bytesQueued.addAndGet(-frameBytes);
            failCalls(closedWhy("is"));
            return answer;
        }
        channel.writeAndFlush(PeerFrames.encode(channel.alloc(), kind, callId, request)).addListener(written -> {
            bytesQueued.addAndGet(-frameBytes);
            if (!written.isSuccess()) {
                fail(callId, new IOException("cannot send a " + kind + " to peer " + peer.getId() + ": "
                        + why(written.cause()), written.cause()));
                channel.close();
            }
        });
        return answer;
    }

    /**
     * Returns the most bytes of calls that wait on a link to be taken by its socket, with frames of at most
     * {@code frameBytesMax}: {@link #QUEUED_FRAMES_MAX} of the largest, so that a call always fits an idle link.
     */
    static long queuedBytesMax(int frameBytesMax) {
        return (long) QUEUED_FRAMES_MAX * (frameBytesMax + Integer.BYTES);
    }

    /** Returns the bytes of calls written to this link that its socket has not taken yet (for tests). */
    long bytesQueued() {
        return bytesQueued.get();
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

    /**
     * Says why the link closed: a failed TLS handshake names the certificate refused and why, since it may close the
     * link before a call's write reaches the TLS handler, whose failure would have said so ({@code verb}: "is" or
     * "was").
     */
    private String closedWhy(String verb) {
        SslHandler handler = tls;
        Throwable refused = handler == null || !handler.handshakeFuture().isDone() ? null
                : handler.handshakeFuture().cause();
        return "the link " + verb + " closed" + (refused == null ? "" : ": the link to peer " + peer.getId() + ": "
                + why(refused));
    }

    private void failCalls(String why) {
        for (Long callId : calls.keySet()) {
            fail(callId, new IOException("no answer from peer " + peer.getId() + " at " + peer.getAddress() + ": "
                    + why));
        }
    }

    @Override
    public void close() {
        if (channel != null) {
            channel.close();
        }
    }

    @Override
    public String toString() {
        return "PeerLink[" + peer.getId() + " at " + peer.getAddress()
                + (failure != null ? ", not made" : isOpen() ? "" : ", closed") + "]";
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

    /**
     * The dialling side of the {@link PeerHandshake} on a new connection: it reads the HELLO, sends the PROOF, reads
     * the ANSWER, and then gives way to the frame decoder and the {@link Answers}. Bytes are read only up to a
     * handshake message's bound; whatever fails completes {@code admitted} exceptionally and closes the connection.
     */
    private static final class Dial extends ChannelInboundHandlerAdapter {
        private final PeerHandshake.Dialling dialling;
        private final CompletableFuture<Void> admitted;
        private final int frameBytesMax;
        private final Supplier<PeerLink> link;

        Dial(PeerHandshake.Dialling dialling, CompletableFuture<Void> admitted, int frameBytesMax,
                Supplier<PeerLink> link) {
            this.dialling = dialling;
            this.admitted = admitted;
            this.frameBytesMax = frameBytesMax;
            this.link = link;
        }

        @Override
        public void channelRead(ChannelHandlerContext context, Object message) {
            try {
                if (admitted.isDone() || !(message instanceof ByteBuf bytes)) {
                    context.close();
                    return;
                }
                byte[] proof = dialling.receive(bytes);
                if (proof != null) {
                    context.writeAndFlush(Unpooled.wrappedBuffer(proof));
                } else if (dialling.accepted()) {
                    context.pipeline().addLast(PeerFrames.decoder(frameBytesMax), new Answers(link));
                    context.pipeline().remove(this);
                    admitted.complete(null);
                }
            } catch (PeerHandshake.Failure failure) {
                admitted.completeExceptionally(failure);
                context.close();
            } finally {
                ReferenceCountUtil.release(message);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) throws Exception {
            admitted.completeExceptionally(new IOException("it closed the connection during the handshake"));
            super.channelInactive(context);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            admitted.completeExceptionally(cause);
            context.close();
        }
    }
}

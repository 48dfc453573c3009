package io.fencer.server.raft;

import io.fencer.server.net.RefusalLog;
import io.fencer.server.raft.PeerFrames.Frame;
import io.fencer.server.raft.PeerFrames.Kind;
import io.fencer.server.rpc.ErrorCatalogue;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.InstallSnapshotReplyProto;
import org.apache.ratis.proto.RaftProtos.InstallSnapshotRequestProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.RaftProtos.ReadIndexReplyProto;
import org.apache.ratis.proto.RaftProtos.ReadIndexRequestProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteReplyProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteRequestProto;
import org.apache.ratis.proto.RaftProtos.StartLeaderElectionReplyProto;
import org.apache.ratis.proto.RaftProtos.StartLeaderElectionRequestProto;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.rpc.RpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerRpcWithProxy;
import org.apache.ratis.server.protocol.RaftServerAsynchronousProtocol;
import org.apache.ratis.thirdparty.com.google.protobuf.InvalidProtocolBufferException;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.io.netty.bootstrap.ServerBootstrap;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.channel.Channel;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerContext;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInitializer;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelOption;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.ServerChannel;
import org.apache.ratis.thirdparty.io.netty.channel.SimpleChannelInboundHandler;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.Epoll;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollServerSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.nio.NioEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.socket.SocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioServerSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioSocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandler;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandshakeCompletionEvent;
import org.apache.ratis.thirdparty.io.netty.handler.timeout.IdleStateEvent;
import org.apache.ratis.thirdparty.io.netty.handler.timeout.IdleStateHandler;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.DefaultThreadFactory;
import org.apache.ratis.util.PeerProxyMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A peer's end of {@link PeerTransport}: the Raft port, where the other peers' calls are carried out on this
 * peer's Ratis server, and the links on which this peer calls them.
 *
 * <p>Who may call: with TLS, only a holder of a <em>server</em> certificate of the group's CA (the certificate
 * peers present to each other); a client certificate of the same CA passes the handshake but is refused before
 * any frame is read, since a forged vote or AppendEntries would let it depose the leader or rewrite the log.
 * Without TLS the server binds a loopback address unless told {@code --insecure}. Whoever calls can make only
 * Raft's server-to-server calls ({@link Kind}): no client request, no change of the group, no snapshot command.
 *
 * <p>Bounds: frames up to {@link PeerFrames#frameBytesMax}, {@value #INBOUND_CONNECTIONS_MAX} connections, a
 * connection silent for {@link #IDLE_CLOSE} closed (the leader speaks every few hundred milliseconds), a TLS
 * handshake within Netty's 10 s, {@link PeerLink#CALLS_IN_FLIGHT_MAX} calls waiting per link.
 */
final class PeerRpc extends RaftServerRpcWithProxy<PeerLink, PeerProxyMap<PeerLink>> {
    private static final Logger LOG = LoggerFactory.getLogger(PeerRpc.class);
    static final int INBOUND_CONNECTIONS_MAX = 64;
    static final Duration IDLE_CLOSE = Duration.ofMinutes(10);
    private static final Duration REFUSALS_LOG_INTERVAL = Duration.ofSeconds(10);
    /** The extended key usage of a TLS server certificate (RFC 5280), and "any purpose". */
    private static final List<String> PEER_KEY_USAGES = List.of("1.3.6.1.5.5.7.3.1", "2.5.29.37.0");

    private final RaftServer server;
    private final PeerTransport type;
    private final PeerTransport.Settings settings;
    private final EventLoopGroup acceptGroup;
    private final EventLoopGroup workerGroup;
    private final EventLoopGroup linkGroup;
    private final AtomicInteger inbound = new AtomicInteger();
    /** Refusals are logged at most once per interval per kind, so a stranger cannot flood the log. */
    private final RefusalLog refusals;
    private volatile Channel listening;

    private PeerRpc(RaftServer server, PeerTransport type, PeerTransport.Settings settings,
            EventLoopGroup linkGroup) {
        super(server::getId, id -> new PeerProxyMap<>(id + "-peer-links", peer -> PeerLink.connect(peer, linkGroup,
                Epoll.isAvailable() ? EpollSocketChannel.class : NioSocketChannel.class, settings.clientTls(),
                settings.frameBytesMax(), settings.connectTimeout())));
        this.server = server;
        this.type = type;
        this.settings = settings;
        this.acceptGroup = eventLoops("fencer-raft-accept", 1);
        this.workerGroup = eventLoops("fencer-raft-port", 2);
        this.linkGroup = linkGroup;
        this.refusals = new RefusalLog(settings.ticker(), REFUSALS_LOG_INTERVAL, 16);
    }

    static PeerRpc create(RaftServer server, PeerTransport.Settings settings, PeerTransport type) {
        return new PeerRpc(server, type, settings, eventLoops("fencer-raft-links", 2));
    }

    private static EventLoopGroup eventLoops(String name, int threads) {
        DefaultThreadFactory threadFactory = new DefaultThreadFactory(name, true);
        return Epoll.isAvailable() ? new EpollEventLoopGroup(threads, threadFactory)
                : new NioEventLoopGroup(threads, threadFactory);
    }

    @Override
    public RpcType getRpcType() {
        return type;
    }

    @Override
    protected void startImpl() throws IOException {
        Class<? extends ServerChannel> channelType =
                Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        ServerBootstrap bootstrap = new ServerBootstrap().group(acceptGroup, workerGroup).channel(channelType)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        accept(channel);
                    }
                });
        InetSocketAddress address = new InetSocketAddress(settings.host(), settings.port());
        try {
            listening = bootstrap.bind(address).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            throw new IOException("cannot listen for peers on " + address + ": " + e.getMessage(), e);
        }
        LOG.debug("{} listens for peers on {}{}", getId(), listening.localAddress(),
                settings.serverTls() == null ? " (plaintext)" : " (mutual TLS)");
    }

    private void accept(SocketChannel channel) {
        int open = inbound.incrementAndGet();
        channel.closeFuture().addListener(closed -> inbound.decrementAndGet());
        if (open > INBOUND_CONNECTIONS_MAX) {
            refused("connections", "a connection from " + channel.remoteAddress() + ": the most allowed, "
                    + INBOUND_CONNECTIONS_MAX + ", are open");
            channel.close();
            return;
        }
        channel.pipeline().addLast(new IdleStateHandler(IDLE_CLOSE.toSeconds(), 0, 0, TimeUnit.SECONDS));
        if (settings.serverTls() != null) {
            channel.pipeline().addLast(settings.serverTls().newHandler(channel.alloc()));
        }
        channel.pipeline().addLast(PeerFrames.decoder(settings.frameBytesMax()),
                new Calls(settings.serverTls() == null));
    }

    @Override
    public void closeImpl() throws IOException {
        Channel channel = listening;
        if (channel != null) {
            channel.close().syncUninterruptibly();
        }
        for (EventLoopGroup group : List.of(acceptGroup, workerGroup, linkGroup)) {
            group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
        }
        super.closeImpl();
        try {
            for (EventLoopGroup group : List.of(acceptGroup, workerGroup, linkGroup)) {
                group.awaitTermination(1, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public InetSocketAddress getInetSocketAddress() {
        Channel channel = listening;
        return channel != null ? (InetSocketAddress) channel.localAddress()
                : new InetSocketAddress(settings.host(), settings.port());
    }

    @Override
    public void handleException(RaftPeerId serverId, Exception e, boolean reconnect) {
        // A refusal came over a sound link; anything else (a timeout, a closed or unreachable link) replaces it.
        getProxies().handleException(serverId, e, reconnect || !(e instanceof PeerRefusedException));
    }

    @Override
    public RequestVoteReplyProto requestVote(RequestVoteRequestProto request) throws IOException {
        return (RequestVoteReplyProto) send(Kind.REQUEST_VOTE, request, request.getServerRequest());
    }

    @Override
    public AppendEntriesReplyProto appendEntries(AppendEntriesRequestProto request) throws IOException {
        return (AppendEntriesReplyProto) send(Kind.APPEND_ENTRIES, request, request.getServerRequest());
    }

    @Override
    public InstallSnapshotReplyProto installSnapshot(InstallSnapshotRequestProto request) throws IOException {
        return (InstallSnapshotReplyProto) send(Kind.INSTALL_SNAPSHOT, request, request.getServerRequest());
    }

    @Override
    public StartLeaderElectionReplyProto startLeaderElection(StartLeaderElectionRequestProto request)
            throws IOException {
        return (StartLeaderElectionReplyProto) send(Kind.START_LEADER_ELECTION, request, request.getServerRequest());
    }

    /** The asynchronous call Ratis makes of a leader: a follower's read index, for a linearizable read on it. */
    @Override
    public RaftServerAsynchronousProtocol async() {
        return new RaftServerAsynchronousProtocol() {
            @Override
            public CompletableFuture<AppendEntriesReplyProto> appendEntriesAsync(AppendEntriesRequestProto request) {
                throw new UnsupportedOperationException("the peer transport appends with Ratis's default appender");
            }

            @Override
            public CompletableFuture<ReadIndexReplyProto> readIndexAsync(ReadIndexRequestProto request)
                    throws IOException {
                RaftPeerId to = RaftPeerId.valueOf(request.getServerRequest().getReplyId());
                return link(to).call(Kind.READ_INDEX, request).thenApply(reply -> (ReadIndexReplyProto) reply);
            }
        };
    }

    private MessageLite send(Kind kind, MessageLite request, RaftRpcRequestProto header) throws IOException {
        RaftPeerId to = RaftPeerId.valueOf(header.getReplyId());
        try {
            return link(to).callAndWait(kind, request, settings.requestTimeout().plusMillis(header.getTimeoutMs()));
        } catch (IOException e) {
            handleException(to, e, false);
            throw e;
        }
    }

    /** Returns the link to {@code peer}, replacing one whose connection has ended. */
    private PeerLink link(RaftPeerId peer) throws IOException {
        PeerLink link = getProxies().getProxy(peer);
        if (!link.isOpen()) {
            getProxies().resetProxy(peer);
            link = getProxies().getProxy(peer);
        }
        return link;
    }

    /** Carries out the calls read on one inbound connection, answering each on it when done. */
    private final class Calls extends SimpleChannelInboundHandler<ByteBuf> {
        /** False until the TLS handshake showed a peer's certificate; plaintext connections start admitted. */
        private boolean admitted;

        Calls(boolean admitted) {
            this.admitted = admitted;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext context, Object event) throws Exception {
            if (event instanceof SslHandshakeCompletionEvent handshake) {
                admitted = handshake.isSuccess() && admitPeer(context);
                if (!admitted) {
                    context.close();
                }
            } else if (event instanceof IdleStateEvent) {
                LOG.debug("{}: closing a Raft connection from {} silent for {}", getId(),
                        context.channel().remoteAddress(), IDLE_CLOSE);
                context.close();
            }
            super.userEventTriggered(context, event);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext context, ByteBuf bytes) throws Exception {
            if (!admitted) {
                context.close();
                return;
            }
            Frame frame = PeerFrames.read(bytes);
            if (frame.kind() == null || frame.kind() == Kind.REFUSED) {
                context.writeAndFlush(PeerFrames.refusal(context.alloc(), frame.callId(),
                        "no call of kind " + frame.kindCode() + " is served on the Raft port"));
                return;
            }
            MessageLite request;
            try {
                request = frame.request();
            } catch (InvalidProtocolBufferException e) {
                refused("unreadable", "an unreadable " + frame.kind() + " from " + context.channel().remoteAddress()
                        + ", closing the connection: " + e.getMessage());
                context.close();
                return;
            }
            Kind kind = frame.kind();
            long callId = frame.callId();
            carryOut(kind, request).whenComplete((reply, error) -> context.writeAndFlush(error == null
                    ? PeerFrames.encode(context.alloc(), kind, callId, reply)
                    : PeerFrames.refusal(context.alloc(), callId, reason(error))));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            LOG.debug("{}: a Raft connection from {} ends: {}", getId(), context.channel().remoteAddress(),
                    cause.toString());
            context.close();
        }

        private boolean admitPeer(ChannelHandlerContext context) {
            SslHandler tls = context.pipeline().get(SslHandler.class);
            try {
                Certificate[] chain = tls.engine().getSession().getPeerCertificates();
                X509Certificate leaf = (X509Certificate) chain[0];
                List<String> usages = leaf.getExtendedKeyUsage();
                if (usages == null || usages.stream().anyMatch(PEER_KEY_USAGES::contains)) {
                    return true;
                }
                refused("certificates", "a connection from " + context.channel().remoteAddress()
                        + ": its certificate '" + leaf.getSubjectX500Principal().getName() + "' is not a server "
                        + "certificate (extended key usage " + usages + "): peers present their server certificate");
                return false;
            } catch (SSLPeerUnverifiedException | CertificateParsingException e) {
                refused("certificates", "a connection from " + context.channel().remoteAddress() + ": " + e);
                return false;
            }
        }
    }

    /** Logs a refusal on the Raft port, at most one line per {@code kind} per interval, counting those left out. */
    private void refused(String kind, String what) {
        long leftOut = refusals.admit(kind);
        if (leftOut >= 0) {
            LOG.warn("{}: the Raft port refused {}{}", getId(), what,
                    leftOut > 0 ? " (and " + leftOut + " more since the last such line)" : "");
        }
    }

    private CompletableFuture<? extends MessageLite> carryOut(Kind kind, MessageLite request) {
        try {
            return switch (kind) {
                case APPEND_ENTRIES -> server.appendEntriesAsync((AppendEntriesRequestProto) request);
                case READ_INDEX -> server.readIndexAsync((ReadIndexRequestProto) request);
                case REQUEST_VOTE -> CompletableFuture.completedFuture(
                        server.requestVote((RequestVoteRequestProto) request));
                case INSTALL_SNAPSHOT -> CompletableFuture.completedFuture(
                        server.installSnapshot((InstallSnapshotRequestProto) request));
                case START_LEADER_ELECTION -> CompletableFuture.completedFuture(
                        server.startLeaderElection((StartLeaderElectionRequestProto) request));
                case REFUSED -> throw new IllegalArgumentException("a refusal is an answer, not a call");
            };
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Returns why a call failed, for the caller: the exception's type and message (Ratis's, never a secret). */
    private static String reason(Throwable error) {
        Throwable cause = ErrorCatalogue.unwrap(error);
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}

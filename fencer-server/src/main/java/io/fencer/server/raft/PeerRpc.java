package io.fencer.server.raft;

import io.fencer.core.InvalidArgumentException;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.raft.PeerAdmission.Refusal;
import io.fencer.server.net.RefusalLog;
import io.fencer.server.raft.PeerFrames.Frame;
import io.fencer.server.raft.PeerFrames.Kind;
import io.fencer.server.rpc.ErrorCatalogue;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
import org.apache.ratis.protocol.RaftPeer;
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
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInboundHandlerAdapter;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInitializer;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelOption;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.ServerChannel;
import org.apache.ratis.thirdparty.io.netty.channel.WriteBufferWaterMark;
import org.apache.ratis.thirdparty.io.netty.channel.SimpleChannelInboundHandler;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.Epoll;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollServerSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.epoll.EpollSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.nio.NioEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.socket.SocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioServerSocketChannel;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioSocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.timeout.IdleStateEvent;
import org.apache.ratis.thirdparty.io.netty.handler.timeout.IdleStateHandler;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.DefaultEventExecutorGroup;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.DefaultThreadFactory;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.EventExecutor;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.EventExecutorGroup;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.RejectedExecutionHandlers;
import org.apache.ratis.util.PeerProxyMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A peer's end of {@link PeerTransport}: the Raft port, where the other peers' calls are carried out on this
 * peer's Ratis server, and the links on which this peer calls them.
 *
 * <p>Who may call: a connection is admitted ({@link PeerAdmission}) only once it proved to be a peer's. With a group
 * secret, both ends of every connection first prove that they hold it ({@link PeerHandshake}). With TLS, the caller
 * must also present a <em>server</em> certificate of the group's CA (the certificate peers present to each other);
 * a client certificate of the same CA passes the TLS handshake but is refused, since a forged vote or AppendEntries
 * would let it depose the leader or rewrite the log. Only with {@code --insecure-raft} and no TLS is every
 * connection admitted. Without TLS the server binds a loopback address unless told {@code --insecure}. An admitted
 * caller can make only Raft's server-to-server calls ({@link Kind}): no client request, no change of the group, no
 * snapshot command. An AppendEntries holding an entry Ratis could not apply is refused whole before Ratis sees it
 * ({@link LogEntryShapes}). With peers authenticated, a call (other than a vote, which Ratis itself refuses to peers
 * outside its configuration, telling a removed one to shut down) from a peer that this peer's current configuration
 * does not hold is refused ({@link #isMember}): a removed peer keeps the group's secret, but not its say. That holds
 * for Fencer's own code only: the secret proves membership of the group, not which peer, and the ids in a
 * handshake and in a call are whatever its holder names, so a holder that means harm can call as any peer.
 *
 * <p>Bounds: connections not yet admitted, {@link UnadmittedConnections#PER_ADDRESS_MAX} per remote address and
 * {@link UnadmittedConnections#CONNECTIONS_MAX} in all, each reading at most a handshake's bytes and closed unless
 * admitted within {@link PeerHandshake#TIMEOUT}; admitted connections, at most
 * {@link PeerTransport.Settings#inboundConnectionsMax()} (their frames, up to {@link PeerFrames#frameBytesMax} each,
 * fit in a share of the heap: {@link PeerTransport#inboundConnectionsMax}); a connection silent for
 * {@link #IDLE_CLOSE} closed (the leader speaks every few hundred milliseconds); a connection's calls no longer read
 * while their answers wait to be sent beyond {@link #ANSWERS_WAITING_MARKS} (at most
 * {@link #ANSWER_BYTES_WAITING_MAX} wait for a peer that reads none); {@link PeerLink#CALLS_IN_FLIGHT_MAX}
 * calls waiting per link, and {@link PeerLink#queuedBytesMax} bytes of them waiting to be sent (a call refused for
 * either ends the link, {@link #handleException}); {@link #BLOCKING_CALLS_QUEUED_MAX} blocking calls queued per
 * thread that carries them out.
 * Refused connections are counted by reason ({@code fencer.raft.refusals}) and logged at
 * most once per {@link #REFUSALS_LOG_INTERVAL} per reason and remote host.
 */
final class PeerRpc extends RaftServerRpcWithProxy<PeerLink, PeerProxyMap<PeerLink>> {
    private static final Logger LOG = LoggerFactory.getLogger(PeerRpc.class);
    /** The most admitted connections at once, whatever the heap. */
    static final int INBOUND_CONNECTIONS_MAX = 64;
    static final Duration IDLE_CLOSE = Duration.ofMinutes(10);
    static final Duration REFUSALS_LOG_INTERVAL = Duration.ofSeconds(10);
    /** The remote hosts (and reasons) whose refusals are logged apart; beyond, they share one line per interval. */
    private static final int REFUSALS_LOGGED_APART_MAX = 64;
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * Threads that carry out the calls that block in Ratis ({@link #blocksInRatis}): a vote waits for the server's
     * monitor and syncs its metadata, a snapshot chunk is written to disk. On the port's event loops such a call
     * stops every connection of that loop, handshakes included, for as long as Ratis holds it.
     */
    static final int BLOCKING_CALL_THREADS = 4;
    /** Blocking calls waiting for one of those threads; beyond, a call is refused and the caller's Ratis retries. */
    static final int BLOCKING_CALLS_QUEUED_MAX = 64;
    /**
     * The bytes of answers waiting to be sent on an admitted connection (as Netty counts them, with its overhead of
     * each) above which its calls are no longer read, and below which they are read again: a peer that sends calls
     * and reads no answer would otherwise fill this peer's heap with them.
     */
    static final WriteBufferWaterMark ANSWERS_WAITING_MARKS = new WriteBufferWaterMark(32 << 10, 64 << 10);
    /**
     * The most bytes of answers that wait on one admitted connection whose peer reads none of them: the high mark of
     * {@link #ANSWERS_WAITING_MARKS}, and the answers to the calls of the read that crossed it (a read takes at most
     * 64 KiB, some 5,000 calls of a bare header, each answer under 160 bytes with Netty's overhead).
     */
    static final int ANSWER_BYTES_WAITING_MAX = 1 << 20;

    private final RaftServer server;
    private final PeerTransport type;
    private final PeerTransport.Settings settings;
    private final PeerHandshake handshake;
    private final EventLoopGroup acceptGroup;
    private final EventLoopGroup workerGroup;
    private final EventLoopGroup linkGroup;
    private final EventExecutorGroup blockingCalls;
    private final UnadmittedConnections unadmitted = new UnadmittedConnections();
    private final AtomicInteger inbound = new AtomicInteger();
    private final Set<Channel> admittedChannels = ConcurrentHashMap.newKeySet();
    private final AtomicLong entriesRefused = new AtomicLong();
    /** Refusals are logged at most once per interval per reason and host, so a stranger cannot flood the log. */
    private final RefusalLog refusals;
    private final Map<Refusal, AtomicLong> refusalCounts = new EnumMap<>(Refusal.class);
    /**
     * Failed calls to peers: Ratis retries a call to a dead or unreachable peer at every heartbeat and logs each
     * tenth failure with its stack trace, so Fencer quiets Ratis's appender and logs here instead, one line per peer
     * per interval with the count left out, and the stack trace once per peer, at debug.
     */
    private final RefusalLog callFailures;
    private final Set<RaftPeerId> callFailureTracesLogged = ConcurrentHashMap.newKeySet();
    private volatile Channel listening;
    /** When an admitted connection last brought bytes, by the settings' ticker; valid once {@link #admittedRead}. */
    private volatile long admittedReadNanos;
    private volatile boolean admittedRead;

    private PeerRpc(RaftServer server, PeerTransport type, PeerTransport.Settings settings, PeerHandshake handshake,
            EventLoopGroup linkGroup, RefusalLog refusals) {
        super(server::getId, id -> new PeerProxyMap<>(id + "-peer-links", peer -> connect(peer, linkGroup, settings,
                handshake, id.toString(), refusals)));
        this.server = server;
        this.type = type;
        this.settings = settings;
        this.handshake = handshake;
        this.acceptGroup = eventLoops("fencer-raft-accept", 1);
        this.workerGroup = eventLoops("fencer-raft-port", 2);
        this.linkGroup = linkGroup;
        this.blockingCalls = new DefaultEventExecutorGroup(BLOCKING_CALL_THREADS,
                new DefaultThreadFactory("fencer-raft-calls", true), BLOCKING_CALLS_QUEUED_MAX,
                RejectedExecutionHandlers.reject());
        this.refusals = refusals;
        this.callFailures = new RefusalLog(settings.ticker(), REFUSALS_LOG_INTERVAL, REFUSALS_LOGGED_APART_MAX);
        for (Refusal refusal : Refusal.values()) {
            refusalCounts.put(refusal, new AtomicLong());
        }
    }

    static PeerRpc create(RaftServer server, PeerTransport.Settings settings, PeerTransport type) {
        PeerHandshake handshake = settings.secret() == null ? null
                : new PeerHandshake(settings.secret(), settings.id(), RANDOM);
        return new PeerRpc(server, type, settings, handshake, eventLoops("fencer-raft-links", 2),
                new RefusalLog(settings.ticker(), REFUSALS_LOG_INTERVAL, REFUSALS_LOGGED_APART_MAX));
    }

    /**
     * Opens a link to {@code peer}, or returns one that fails its calls with the reason it could not be made (see
     * {@link PeerLink#failed}); a handshake the peer refused is logged here, at most once per interval per peer,
     * since Ratis tries again at every heartbeat and vote.
     */
    private static PeerLink connect(RaftPeer peer, EventLoopGroup group, PeerTransport.Settings settings,
            PeerHandshake handshake, String selfId, RefusalLog refusals) {
        try {
            return PeerLink.connect(peer, group, Epoll.isAvailable() ? EpollSocketChannel.class
                    : NioSocketChannel.class, settings.clientTls(), handshake, settings.frameBytesMax(),
                    settings.connectTimeout());
        } catch (IOException e) {
            long leftOut = e.getCause() instanceof PeerHandshake.Failure ? refusals.admit("link " + peer.getId())
                    : -1;
            if (leftOut >= 0) {
                LOG.warn("{}: {}{}", selfId, e.getMessage(), leftOut > 0 ? " (and " + leftOut + " more since the "
                        + "last such line)" : "");
            } else {
                LOG.debug("{}: {}", selfId, e.getMessage());
            }
            return PeerLink.failed(peer, e);
        }
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

    /** Registers the count of refused connections by reason, {@code fencer.raft.refusals}. */
    void registerMetrics(MeterRegistry registry) {
        for (Map.Entry<Refusal, AtomicLong> count : refusalCounts.entrySet()) {
            FunctionCounter.builder("fencer.raft.refusals", count.getValue(), AtomicLong::get)
                    .tag("reason", count.getKey().tag)
                    .description("Connections the Raft port refused (not a peer, too many, too late, unreadable)")
                    .register(registry);
        }
    }

    /** Returns how many admitted connections are not read (for tests). */
    int admittedNotRead() {
        return (int) admittedChannels.stream().filter(channel -> !channel.config().isAutoRead()).count();
    }

    /**
     * Returns the bytes of answers waiting to be sent on the admitted connections (for tests), each counted on its
     * event loop, once the calls it is reading are answered.
     */
    long answerBytesWaiting() throws Exception {
        long bytes = 0;
        for (Channel channel : admittedChannels) {
            bytes += channel.eventLoop().submit(() -> {
                var waiting = channel.unsafe().outboundBuffer();
                return waiting == null ? 0 : waiting.totalPendingWriteBytes();
            }).get();
        }
        return bytes;
    }

    /** Returns how many connections were refused for {@code refusal} (for tests). */
    long refusals(Refusal refusal) {
        return refusalCounts.get(refusal).get();
    }

    @Override
    protected void startImpl() throws IOException {
        Class<? extends ServerChannel> channelType =
                Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        ServerBootstrap bootstrap = new ServerBootstrap().group(acceptGroup, workerGroup).channel(channelType)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, ANSWERS_WAITING_MARKS)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        accept(channel);
                    }
                });
        InetSocketAddress address = new InetSocketAddress(settings.host(), settings.port());
        if (settings.reserved() != null) {
            settings.reserved().close(); // held until now so that no other socket took the port (PortReservation)
        }
        try {
            listening = bootstrap.bind(address).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            throw new IOException("cannot listen for peers on " + address + ": " + e.getMessage(), e);
        }
        LOG.debug("{} listens for peers on {} ({}{}, at most {} peer connections)", getId(), listening.localAddress(),
                settings.serverTls() == null ? "plaintext" : "mutual TLS",
                handshake == null ? "" : ", group secret", settings.inboundConnectionsMax());
    }

    /** Takes a new connection in: it holds a place among the unadmitted ones until {@link PeerAdmission} is done. */
    private void accept(SocketChannel channel) {
        UnadmittedConnections.Slot slot = unadmitted.take(hostOf(channel.remoteAddress()));
        if (slot == null) {
            refused(Refusal.CONNECTIONS, channel.remoteAddress(), "the most connections not yet admitted ("
                    + unadmitted.describeBounds() + ") are open");
            channel.close();
            return;
        }
        channel.closeFuture().addListener(closed -> slot.release());
        if (settings.serverTls() != null) {
            channel.pipeline().addLast(settings.serverTls().newHandler(channel.alloc()));
        }
        channel.pipeline().addLast(new PeerAdmission(handshake, settings.serverTls() != null,
                settings.handshakeTimeout(), new PeerAdmission.Gate() {
                    @Override
                    public boolean admit(ChannelHandlerContext context, String peerId) {
                        slot.release();
                        return admitted(context.channel(), peerId);
                    }

                    @Override
                    public void refuse(Refusal refusal, ChannelHandlerContext context, String why) {
                        refused(refusal, context.channel().remoteAddress(), why);
                    }
                }));
    }

    /** Gives an admitted connection its frame decoder and calls, or refuses it when the admitted ones are full. */
    private boolean admitted(Channel channel, String peerId) {
        int open = inbound.incrementAndGet();
        channel.closeFuture().addListener(closed -> inbound.decrementAndGet());
        if (open > settings.inboundConnectionsMax()) {
            refused(Refusal.CONNECTIONS, channel.remoteAddress(), "the most admitted connections, "
                    + settings.inboundConnectionsMax() + ", are open" + (peerId == null ? "" : " (it is peer '"
                    + peerId + "')"));
            return false;
        }
        LOG.debug("{}: admitted a Raft connection from {}{}", getId(), channel.remoteAddress(),
                peerId == null ? "" : " (peer " + peerId + ")");
        admittedChannels.add(channel);
        channel.closeFuture().addListener(closed -> admittedChannels.remove(channel));
        channel.pipeline().addLast(new IdleStateHandler(IDLE_CLOSE.toSeconds(), 0, 0, TimeUnit.SECONDS),
                new ReadClock(), PeerFrames.decoder(settings.frameBytesMax()), new Calls());
        return true;
    }

    /**
     * Returns how long ago an admitted connection last brought bytes to this port, or null when none has: a peer
     * started to join hears from nobody until the group adds it, and then hears the leader's appends and snapshot
     * chunks, which keep arriving while its state is copied (a chunk's bytes too, long before the whole chunk is read).
     */
    Duration sinceAdmittedRead() {
        return admittedRead ? Duration.ofNanos(settings.ticker().nanoTime() - admittedReadNanos) : null;
    }

    /** Notes the time of every read on an admitted connection, for {@link #sinceAdmittedRead}. */
    private final class ReadClock extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext context, Object message) {
            admittedReadNanos = settings.ticker().nanoTime();
            admittedRead = true;
            context.fireChannelRead(message);
        }
    }

    private static String hostOf(SocketAddress address) {
        return address instanceof InetSocketAddress inet ? inet.getHostString() : String.valueOf(address);
    }

    /** Returns {@code host:port} of a remote address (its {@code toString} starts with a slash). */
    private static String describe(SocketAddress address) {
        return address instanceof InetSocketAddress inet ? inet.getHostString() + ":" + inet.getPort()
                : String.valueOf(address);
    }

    @Override
    public void closeImpl() throws IOException {
        Channel channel = listening;
        if (channel != null) {
            channel.close().syncUninterruptibly();
        }
        for (EventExecutorGroup group : List.of(acceptGroup, workerGroup, linkGroup, blockingCalls)) {
            group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
        }
        super.closeImpl();
        try {
            for (EventExecutorGroup group : List.of(acceptGroup, workerGroup, linkGroup, blockingCalls)) {
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

    /**
     * Asks {@code peer} which format level its release reads: {@link LockStateMachine#FORMAT_LEVEL_PREVIOUS} when it
     * refuses the call, as a peer of the release before format levels does; fails when it cannot be reached.
     */
    CompletableFuture<Integer> formatLevelOf(RaftPeerId peer) {
        try {
            return link(peer).call(Kind.FORMAT_LEVEL,
                    org.apache.ratis.thirdparty.com.google.protobuf.Empty.getDefaultInstance())
                    .handle((reply, error) -> {
                        if (error == null) {
                            return ((org.apache.ratis.thirdparty.com.google.protobuf.Int32Value) reply).getValue();
                        }
                        if (ErrorCatalogue.unwrap(error) instanceof PeerRefusedException) {
                            return LockStateMachine.FORMAT_LEVEL_PREVIOUS;
                        }
                        throw new java.util.concurrent.CompletionException(error);
                    });
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
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
            logFailedCall(to, kind, e);
            handleException(to, e, false);
            throw e;
        }
    }

    /** Logs a failed call to {@code peer}: at most one line per peer per interval, and its stack trace once. */
    private void logFailedCall(RaftPeerId peer, Kind kind, IOException failure) {
        if (failure instanceof PeerRefusedException) {
            return; // an answer over a sound link, which Ratis handles
        }
        long leftOut = callFailures.admit(peer.toString());
        if (leftOut >= 0) {
            LOG.warn("{}: calls to peer {} fail: {}{}", getId(), peer, failure.getMessage(),
                    leftOut > 0 ? " (" + leftOut + " more failed calls since the last such line)" : "");
        }
        if (LOG.isDebugEnabled() && callFailureTracesLogged.add(peer)) {
            LOG.debug("{}: the first failed {} to peer {}", getId(), kind, peer, failure);
        }
    }

    /**
     * Returns the link to {@code peer}, replacing one whose connection has ended. A link that could not be made is
     * returned to fail this call, but not kept: the next call tries to make one again.
     */
    private PeerLink link(RaftPeerId peer) throws IOException {
        PeerLink link = getProxies().getProxy(peer);
        if (link.wasMade() && !link.isOpen()) {
            getProxies().resetProxy(peer);
            link = getProxies().getProxy(peer);
        }
        if (!link.wasMade()) {
            getProxies().resetProxy(peer);
        }
        return link;
    }

    /**
     * Carries out the calls read on one admitted connection, answering each on it when done: those that block in Ratis
     * on one thread of {@link #blockingCalls}, the same for the whole connection so that they are carried out in the
     * order they came (a snapshot's chunks), the others on the event loop.
     */
    private final class Calls extends SimpleChannelInboundHandler<ByteBuf> {
        private final EventExecutor blocking = blockingCalls.next();

        @Override
        public void userEventTriggered(ChannelHandlerContext context, Object event) throws Exception {
            if (event instanceof IdleStateEvent) {
                LOG.debug("{}: closing a Raft connection from {} silent for {}", getId(),
                        context.channel().remoteAddress(), IDLE_CLOSE);
                context.close();
            }
            super.userEventTriggered(context, event);
        }

        /**
         * Reads the peer's calls only while their answers leave ({@link #ANSWERS_WAITING_MARKS}): a peer that reads
         * none is no longer read, and a connection that stays so is closed as idle ({@link #IDLE_CLOSE}).
         */
        @Override
        public void channelWritabilityChanged(ChannelHandlerContext context) throws Exception {
            Channel channel = context.channel();
            channel.config().setAutoRead(channel.isWritable());
            if (!channel.isWritable()) {
                long leftOut = refusals.admit("unread " + hostOf(channel.remoteAddress()));
                if (leftOut >= 0) {
                    LOG.info("{}: stopped reading the calls of the Raft connection from {}: more than {} bytes of its "
                            + "answers wait for it to read them{}", getId(), describe(channel.remoteAddress()),
                            ANSWERS_WAITING_MARKS.high(), leftOut > 0 ? " (and " + leftOut + " more times from that "
                            + "host since the last such line)" : "");
                }
            }
            super.channelWritabilityChanged(context);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext context, ByteBuf bytes) throws Exception {
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
                refused(Refusal.UNREADABLE, context.channel().remoteAddress(), "its " + frame.kind()
                        + " is unreadable: " + e.getMessage());
                context.close();
                return;
            }
            Kind kind = frame.kind();
            long callId = frame.callId();
            String requestor = requestorOf(request);
            // Votes go to Ratis whoever asks: it counts no vote of a peer outside its configuration (nor moves its term
            // for one), and a leader answers a removed peer's request to shut down, which only a vote reply carries.
            // Without authentication (--insecure-raft) the ids peers claim prove nothing, and the port checks none.
            boolean authenticated = handshake != null || settings.serverTls() != null;
            if (authenticated && requestor != null && kind != Kind.REQUEST_VOTE && !isMember(requestor)) {
                // A removed peer must not disturb the group: no append, snapshot, read index or election it starts.
                refused(Refusal.NOT_MEMBER, context.channel().remoteAddress(), "its " + kind + " comes from peer '"
                        + InvalidArgumentException.printable(requestor) + "', which the group's current "
                        + "configuration does not hold");
                context.writeAndFlush(PeerFrames.refusal(context.alloc(), callId, "peer '"
                        + InvalidArgumentException.printable(requestor) + "' is not in the configuration of peer "
                        + getId()));
                return;
            }
            CompletableFuture<? extends MessageLite> reply;
            try {
                reply = blocksInRatis(kind) ? CompletableFuture.supplyAsync(() -> carryOut(kind, request), blocking)
                        .thenCompose(call -> call) : carryOut(kind, request);
            } catch (RejectedExecutionException e) {
                reply = CompletableFuture.failedFuture(new IOException("peer " + getId() + (blocking.isShuttingDown()
                        ? " is closing" : " is busy: " + BLOCKING_CALLS_QUEUED_MAX + " calls wait to be carried out")
                        + "; refusing a " + kind));
            }
            reply.whenComplete((answer, error) -> context.writeAndFlush(error == null
                    ? PeerFrames.encode(context.alloc(), kind, callId, answer)
                    : PeerFrames.refusal(context.alloc(), callId, reason(error))));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            LOG.debug("{}: a Raft connection from {} ends: {}", getId(), context.channel().remoteAddress(),
                    cause.toString());
            context.close();
        }
    }

    /**
     * Counts a refused connection and logs it, at most one line per reason and remote host per interval, the next
     * line counting those left out.
     */
    private void refused(Refusal refusal, SocketAddress remote, String why) {
        refusalCounts.get(refusal).incrementAndGet();
        long leftOut = refusals.admit(refusal.tag + " " + hostOf(remote));
        if (leftOut >= 0) {
            LOG.warn("{}: refused a Raft connection from {}: {}{}", getId(), describe(remote), why,
                    leftOut > 0 ? " (and " + leftOut + " more from that host since the last such line)" : "");
        }
    }

    /**
     * Returns true for the calls Ratis carries out synchronously, under its server's monitor or with a sync: a vote, a
     * snapshot chunk, a leader election. An AppendEntries and a read index stay on the loop: they hand their work to
     * Ratis and return a future (an AppendEntries holds the monitor only to check and queue its entries), and they
     * are the hot path, where another thread would cost a wake-up per call. A format level is answered here.
     */
    static boolean blocksInRatis(Kind kind) {
        return kind == Kind.REQUEST_VOTE || kind == Kind.INSTALL_SNAPSHOT || kind == Kind.START_LEADER_ELECTION;
    }

    private CompletableFuture<? extends MessageLite> carryOut(Kind kind, MessageLite request) {
        try {
            return switch (kind) {
                case APPEND_ENTRIES -> appendUnlessRefused((AppendEntriesRequestProto) request);
                case READ_INDEX -> server.readIndexAsync((ReadIndexRequestProto) request);
                case REQUEST_VOTE -> CompletableFuture.completedFuture(
                        server.requestVote((RequestVoteRequestProto) request));
                case INSTALL_SNAPSHOT -> CompletableFuture.completedFuture(
                        server.installSnapshot((InstallSnapshotRequestProto) request));
                case START_LEADER_ELECTION -> CompletableFuture.completedFuture(
                        server.startLeaderElection((StartLeaderElectionRequestProto) request));
                case FORMAT_LEVEL -> CompletableFuture.completedFuture(
                        org.apache.ratis.thirdparty.com.google.protobuf.Int32Value.of(LockStateMachine.FORMAT_LEVEL));
                case REFUSED -> throw new IllegalArgumentException("a refusal is an answer, not a call");
            };
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Hands an AppendEntries to Ratis, unless one of its entries is one Ratis could not apply ({@link LogEntryShapes}):
     * then the whole call is refused, nothing of it is appended, and its entries are counted.
     */
    private CompletableFuture<AppendEntriesReplyProto> appendUnlessRefused(AppendEntriesRequestProto request)
            throws IOException {
        String refusal = LogEntryShapes.refusal(request);
        if (refusal == null) {
            return server.appendEntriesAsync(request);
        }
        entriesRefused.addAndGet(request.getEntriesCount());
        String leader = InvalidArgumentException.printable(request.getServerRequest().getRequestorId().toStringUtf8());
        long leftOut = refusals.admit("entries " + leader);
        if (leftOut >= 0) {
            LOG.warn("{}: refused an AppendEntries of {} entries from peer '{}' in term {}: {}{}", getId(),
                    request.getEntriesCount(), leader, request.getLeaderTerm(), refusal,
                    leftOut > 0 ? " (and " + leftOut + " more from that peer since the last such line)" : "");
        }
        return CompletableFuture.failedFuture(new IllegalArgumentException("refused before the log: " + refusal));
    }

    /**
     * Returns whether {@code peerId} may call this peer: it is in this peer's current configuration (old or new,
     * voter or learner), it is the leader this peer follows, or this peer has no configuration yet (it was started to
     * join a group and waits for the
     * leader, whose id it cannot know).
     */
    boolean isMember(String peerId) {
        RaftServer.Division division;
        try {
            java.util.Iterator<org.apache.ratis.protocol.RaftGroupId> groups = server.getGroupIds().iterator();
            if (!groups.hasNext()) {
                return true; // no group yet: as not started
            }
            division = server.getDivision(groups.next()); // one group per server: Fencer's, or a restored one's
        } catch (IOException e) {
            return true; // not started yet: the handshake proved the group's secret, Ratis refuses what it must
        }
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        if (conf.getAllPeers().isEmpty()) {
            return true;
        }
        RaftPeerId id = RaftPeerId.valueOf(peerId);
        if (id.equals(division.getInfo().getLeaderId())) {
            return true; // a leader that removed itself goes on sending until its change commits and it steps down
        }
        return conf.getPeer(id, org.apache.ratis.proto.RaftProtos.RaftPeerRole.FOLLOWER,
                org.apache.ratis.proto.RaftProtos.RaftPeerRole.LISTENER) != null;
    }

    /** Returns the id of the peer that made {@code request}, or null for a request that names none. */
    private static String requestorOf(MessageLite request) {
        RaftRpcRequestProto header;
        if (request instanceof AppendEntriesRequestProto append) {
            header = append.getServerRequest();
        } else if (request instanceof RequestVoteRequestProto vote) {
            header = vote.getServerRequest();
        } else if (request instanceof InstallSnapshotRequestProto snapshot) {
            header = snapshot.getServerRequest();
        } else if (request instanceof StartLeaderElectionRequestProto election) {
            header = election.getServerRequest();
        } else if (request instanceof ReadIndexRequestProto read) {
            header = read.getServerRequest();
        } else {
            return null;
        }
        return header.getRequestorId().isEmpty() ? null : header.getRequestorId().toStringUtf8();
    }

    /** Returns how many log entries this port refused before they reached the log ({@link LogEntryShapes}). */
    long entriesRefused() {
        return entriesRefused.get();
    }

    /** Returns why a call failed, for the caller: the exception's type and message (Ratis's, never a secret). */
    private static String reason(Throwable error) {
        Throwable cause = ErrorCatalogue.unwrap(error);
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}

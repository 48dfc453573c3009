package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.PeerAdmission.Refusal;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.RaftGroupIdProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteReplyProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteRequestProto;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.Empty;
import org.apache.ratis.thirdparty.com.google.protobuf.Int32Value;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.nio.NioEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Raft port of a real peer ("n1", a group of one, with a group secret) against links and strangers: a link that
 * proves the secret is served; one that holds another secret is refused, and a listener that cannot prove it is not
 * believed; a stranger's garbage, silence or oversized handshake ends its connection; strangers hold few connections.
 */
class PeerTransportTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path directory;
    private final GroupSecret secret = GroupSecret.generate();
    private RaftNode raft;
    private PeerRpc rpc;
    private int raftPort;
    private EventLoopGroup linkGroup;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        ServerConfig config = ServerConfig.defaults(directory).withPorts(0, 0, 0)
                .withPeerAuth(PeerAuth.secret(secret));
        raft = RaftNode.start(config, null, stateMachine, () -> 0);
        await().atMost(WAIT).until(raft::isLeaderReady);
        rpc = (PeerRpc) raft.server().getServerRpc();
        raftPort = rpc.getInetSocketAddress().getPort();
        linkGroup = new NioEventLoopGroup(1);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable closeable : toClose) {
            closeable.close();
        }
        linkGroup.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
        raft.close();
    }

    @Test
    void link_sameSecret_isAdmittedAndItsCallsAreAnswered() throws Exception {
        PeerLink link = link(secret, "n2", raftPort);

        // As a peer of the configuration (the group of one holds n1 alone): a call of another is refused, below.
        AppendEntriesReplyProto reply = (AppendEntriesReplyProto) link.callAndWait(PeerFrames.Kind.APPEND_ENTRIES,
                staleAppendEntries("n1"), WAIT);

        assertThat(reply.getTerm()).as("the peer's own term: a call of term 0 changed nothing")
                .isEqualTo(raft.currentTerm());
        assertThat(raft.isLeader()).isTrue();
    }

    /**
     * Regression: the port carried out votes on its event loops, so two votes waiting for Ratis's server monitor (a
     * leader busy under it) stopped both loops, and with them every handshake and call, until Ratis let go. A peer
     * removed while down then never heard the leader tell it to shut down.
     */
    @Test
    void requestVote_whileRatisHoldsItsMonitor_theRaftPortStillAdmitsAndAnswersOtherCalls() throws Exception {
        RaftServer.Division division = raft.server().getDivision(RaftNode.GROUP_ID);
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Thread busy = new Thread(() -> {
            synchronized (division) { // as Ratis's own threads hold it: the lock every vote waits for
                held.countDown();
                awaitQuietly(letGo);
            }
        }, "holds-the-division");
        busy.start();
        held.await();
        CompletableFuture<MessageLite> first;
        CompletableFuture<MessageLite> second;
        try {
            // Two connections: the port's two event loops take one each.
            first = link(secret, "n2", raftPort).call(PeerFrames.Kind.REQUEST_VOTE, preVote("n2"));
            second = link(secret, "n3", raftPort).call(PeerFrames.Kind.REQUEST_VOTE, preVote("n3"));

            PeerLink third = link(secret, "n4", raftPort);
            MessageLite level = third.callAndWait(PeerFrames.Kind.FORMAT_LEVEL, Empty.getDefaultInstance(), WAIT);

            assertThat(((Int32Value) level).getValue()).isEqualTo(LockStateMachine.FORMAT_LEVEL);
            assertThat(first).as("the control: the votes wait for the monitor").isNotDone();
            assertThat(second).isNotDone();
        } finally {
            letGo.countDown();
            busy.join();
        }
        for (CompletableFuture<MessageLite> vote : List.of(first, second)) {
            RequestVoteReplyProto reply = (RequestVoteReplyProto) vote.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(reply.getServerReply().getSuccess()).as("a peer outside the group gets no vote").isFalse();
        }
        assertThat(raft.isLeader()).isTrue();
    }

    @Test
    void requestVotes_beyondTheQueueOfTheirThread_areRefusedAsBusyAndTheOthersAnswered() throws Exception {
        RaftServer.Division division = raft.server().getDivision(RaftNode.GROUP_ID);
        PeerLink link = link(secret, "n2", raftPort);
        int refusedExpected = 5;
        List<CompletableFuture<MessageLite>> votes = new ArrayList<>();
        CompletableFuture<MessageLite> first;
        synchronized (division) {
            first = link.call(PeerFrames.Kind.REQUEST_VOTE, preVote("n2"));
            await().atMost(WAIT).until(() -> Thread.getAllStackTraces().keySet().stream().anyMatch(thread ->
                    thread.getName().startsWith("fencer-raft-calls") && thread.getState() == Thread.State.BLOCKED));
            for (int i = 0; i < PeerRpc.BLOCKING_CALLS_QUEUED_MAX + refusedExpected; i++) {
                votes.add(link.call(PeerFrames.Kind.REQUEST_VOTE, preVote("n2")));
            }
            // The refusals come while the monitor is held: they never waited for Ratis.
            await().atMost(WAIT).until(() -> votes.stream().filter(CompletableFuture::isDone).count()
                    == refusedExpected);
        }
        first.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        List<Throwable> refusals = new ArrayList<>();
        for (CompletableFuture<MessageLite> vote : votes) {
            try {
                vote.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                refusals.add(e.getCause());
            }
        }

        assertThat(refusals).hasSize(refusedExpected).allSatisfy(refused -> assertThat(refused)
                .isInstanceOf(PeerRefusedException.class).hasMessageContaining("peer n1 is busy: "
                        + PeerRpc.BLOCKING_CALLS_QUEUED_MAX + " calls wait to be carried out; refusing a REQUEST_VOTE"));
        assertThat(votes.subList(PeerRpc.BLOCKING_CALLS_QUEUED_MAX, votes.size())).allMatch(
                CompletableFuture::isCompletedExceptionally);
        assertThat(link.isOpen()).as("a refusal leaves the link standing").isTrue();
        assertThat(raft.isLeader()).isTrue();
    }

    @Test
    void call_ofAPeerOutsideTheConfiguration_isRefusedBeforeRatisAndCounted() throws Exception {
        PeerLink link = link(secret, "n2", raftPort);
        long termBefore = raft.currentTerm();

        IOException refused = catchThrowableOfType(IOException.class, () -> link.callAndWait(
                PeerFrames.Kind.APPEND_ENTRIES, AppendEntriesRequestProto.newBuilder(staleAppendEntries("removed"))
                        .setLeaderTerm(1_000).build(), WAIT));

        assertThat(refused).isInstanceOf(PeerRefusedException.class)
                .hasMessageContaining("peer 'removed' is not in the configuration");
        assertThat(rpc.refusals(Refusal.NOT_MEMBER)).isEqualTo(1);
        assertThat(raft.currentTerm()).as("the term 1000 of a removed peer never reached Ratis").isEqualTo(termBefore);
        assertThat(raft.isLeader()).isTrue();
    }

    @Test
    void link_anotherSecret_isRefusedOnTheListenerAndTheDiallerSaysWhy() throws Exception {
        try (RaftPortPeers.StderrCapture log = new RaftPortPeers.StderrCapture()) {
            IOException refused = catchThrowableOfType(IOException.class,
                    () -> link(GroupSecret.generate(), "n2", raftPort));

            assertThat(refused).hasMessageContaining("the Raft handshake with peer n1 at 127.0.0.1:" + raftPort
                    + " failed: it refused this peer's proof of the group secret (is --raft-secret-file the same "
                    + "file on every peer?)");
            assertThat(((PeerHandshake.Failure) refused.getCause()).reason)
                    .isEqualTo(PeerHandshake.Reason.REFUSED_BY_PEER);
            // The listener counts its refusal after it sent it: the dialler may hold the answer first.
            await().atMost(WAIT).until(() -> rpc.refusals(Refusal.HANDSHAKE) == 1);
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            raft.registerMetrics(registry);
            assertThat(registry.get("fencer.raft.refusals").tag("reason", "handshake").functionCounter().count())
                    .isEqualTo(1);
            await().atMost(WAIT).until(log::text, text -> text.contains("n1: refused a Raft connection from "
                    + "127.0.0.1:") && text.contains(": its handshake does not prove the group secret (is "
                    + "--raft-secret-file the same file on every peer?)"));
            assertThat(log.text()).doesNotContain("Exception").doesNotContain("\tat ");
        }
    }

    /** The other direction: a listener that answers "accepted" without the secret is not taken for the peer. */
    @Test
    void link_listenerThatCannotProveTheSecret_isRefusedByTheDialler() throws Exception {
        try (ServerSocket impostor = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread listener = new Thread(() -> answerWithoutTheSecret(impostor), "impostor");
            listener.setDaemon(true);
            listener.start();

            IOException refused = catchThrowableOfType(IOException.class,
                    () -> link(secret, "n2", impostor.getLocalPort()));

            assertThat(((PeerHandshake.Failure) refused.getCause()).reason)
                    .isEqualTo(PeerHandshake.Reason.BAD_ANSWER);
            assertThat(refused).hasMessageContaining("its answer does not prove the group secret");
            listener.join(WAIT.toMillis());
        }
    }

    /** Sends a HELLO, reads the PROOF of "n2", and answers "accepted" with a MAC it cannot have computed. */
    private static void answerWithoutTheSecret(ServerSocket impostor) {
        try (Socket socket = impostor.accept()) {
            PeerHandshake.Listening listening = new PeerHandshake(GroupSecret.generate(), "n1",
                    RaftPortPeers.RANDOM).listening();
            socket.getOutputStream().write(listening.hello());
            socket.getInputStream().readNBytes(70 + 2);
            byte[] answer = new byte[2 + 2 + PeerHandshake.MAC_BYTES];
            RaftPortPeers.RANDOM.nextBytes(answer);
            answer[0] = PeerHandshake.ACCEPTED;
            answer[1] = 2;
            answer[2] = 'n';
            answer[3] = '1';
            socket.getOutputStream().write(answer);
            socket.getInputStream().read(); // until the dialler closes
        } catch (IOException e) {
            // the dialler closed first
        }
    }

    /**
     * Regression: a stranger without the secret who holds the address of a peer that is down (any local user can bind
     * a free loopback port) takes a real peer's link to it, passes that link the HELLO of another peer's port and
     * hands the PROOF that comes back to that port: the PROOF named neither listener, so the port admitted the
     * stranger as the dialler and carried out its calls.
     */
    @Test
    void handshake_proofRelayedFromALinkToAnotherPeer_isRefusedAndNothingIsCarriedOut() throws Exception {
        try (ServerSocket downPeersPort = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket toN1 = RaftPortPeers.connect(InetAddress.getLoopbackAddress(), raftPort)) {
            Thread victim = new Thread(() -> {
                try {
                    // "n2" holds the secret and dials "n3", which is down: its Raft port is the stranger's.
                    RaftPeer n3 = RaftPeer.newBuilder().setId("n3")
                            .setAddress("127.0.0.1:" + downPeersPort.getLocalPort()).build();
                    PeerLink.connect(n3, linkGroup, NioSocketChannel.class, null,
                            new PeerHandshake(secret, "n2", RaftPortPeers.RANDOM), 8 << 20, Duration.ofSeconds(5))
                            .close();
                } catch (IOException expected) {
                    // the stranger cannot answer for n3
                }
            }, "n2-dials-n3");
            victim.setDaemon(true);
            victim.start();
            try (Socket fromN2 = downPeersPort.accept()) {
                fromN2.setSoTimeout(20_000);
                byte[] hello = toN1.getInputStream().readNBytes(PeerHandshake.HELLO_BYTES);
                fromN2.getOutputStream().write(hello);
                byte[] proof = fromN2.getInputStream().readNBytes(PeerHandshake.HELLO_BYTES + 1 + 2 + 32);
                toN1.getOutputStream().write(proof);
                toN1.getOutputStream().flush();

                int status = toN1.getInputStream().read();
                assertThat(status).as("n1's answer to a PROOF that n2 made for n3: refused, or closed (-1)")
                        .isIn(-1, (int) PeerHandshake.REFUSED, (int) PeerHandshake.REFUSED_OTHER_PEER);
                assertThat(RaftPortPeers.closedWithin(toN1, Duration.ofSeconds(3))).isTrue();
            }
            victim.join(WAIT.toMillis());
        }
        await().atMost(WAIT).until(() -> rpc.refusals(Refusal.HANDSHAKE) == 1);
        assertThat(raft.isLeader()).isTrue();
    }

    @Test
    void stranger_sendingARaftFrame_isClosedAtOnceAndNothingIsCarriedOut() throws Exception {
        long termBefore = raft.currentTerm();
        try (Socket stranger = RaftPortPeers.connect(InetAddress.getLoopbackAddress(), raftPort)) {
            byte[] forged = AppendEntriesRequestProto.newBuilder(staleAppendEntries("evil")).setLeaderTerm(1_000)
                    .build().toByteArray();
            ByteBuffer frame = ByteBuffer.allocate(4 + 1 + 8 + forged.length).putInt(1 + 8 + forged.length)
                    .put((byte) 2).putLong(1).put(forged); // kind 2: AppendEntries
            stranger.getOutputStream().write(frame.array()); // in one write: the port closes at its first byte

            assertThat(RaftPortPeers.closedWithin(stranger, Duration.ofSeconds(3))).isTrue();
        }
        assertThat(rpc.refusals(Refusal.HANDSHAKE)).isEqualTo(1);
        assertThat(raft.currentTerm()).as("the forged term 1000 was never read").isEqualTo(termBefore);
        assertThat(raft.isLeader()).isTrue();
    }

    @Test
    void stranger_sayingNothing_isClosedAtTheHandshakesDeadline() throws Exception {
        long start = System.nanoTime();
        try (Socket stranger = RaftPortPeers.connect(InetAddress.getLoopbackAddress(), raftPort)) {
            assertThat(RaftPortPeers.closedWithin(stranger, PeerHandshake.TIMEOUT.plusSeconds(10))).isTrue();
        }
        Duration open = Duration.ofNanos(System.nanoTime() - start);

        assertThat(open).as("closed at the deadline, not before").isGreaterThanOrEqualTo(
                PeerHandshake.TIMEOUT.minusMillis(100));
        assertThat(rpc.refusals(Refusal.LATE)).isEqualTo(1);
    }

    @Test
    void stranger_sendingMoreThanAHandshake_isClosed() throws Exception {
        try (Socket stranger = RaftPortPeers.connect(InetAddress.getLoopbackAddress(), raftPort)) {
            byte[] oversized = new byte[PeerHandshake.PROOF_BYTES_MAX + 100];
            System.arraycopy(PeerHandshake.MAGIC, 0, oversized, 0, PeerHandshake.MAGIC.length);
            oversized[4] = PeerHandshake.VERSION;
            oversized[PeerHandshake.MAGIC.length + 1 + PeerHandshake.NONCE_BYTES] = (byte) 255; // the longest id
            stranger.getOutputStream().write(oversized);
            stranger.getOutputStream().flush();

            assertThat(RaftPortPeers.closedWithin(stranger, Duration.ofSeconds(3))).isTrue();
        }
        assertThat(rpc.refusals(Refusal.HANDSHAKE)).isEqualTo(1);
    }

    /**
     * Strangers hold at most 4 unadmitted connections per address and 16 in all: beyond, a new connection is closed
     * at once, a peer's included; once the strangers' are gone, the peer gets in.
     */
    @Test
    void unadmittedConnections_beyondTheBounds_areClosedAtOnceUntilPlacesFreeUp() throws Exception {
        List<Socket> strangers = new ArrayList<>();
        try {
            for (int address = 2; address <= 6; address++) { // 127.0.0.2 .. 127.0.0.6, 4 each
                for (int i = 0; i < UnadmittedConnections.PER_ADDRESS_MAX; i++) {
                    strangers.add(RaftPortPeers.connect(InetAddress.getByName("127.0.0." + address), raftPort));
                }
            }
            Socket fifthFromOne = RaftPortPeers.connect(InetAddress.getByName("127.0.0.2"), raftPort);
            strangers.add(fifthFromOne);
            List<Socket> closed = new ArrayList<>();
            await().atMost(Duration.ofSeconds(4)).until(() -> {
                for (Socket socket : strangers) {
                    if (!closed.contains(socket) && RaftPortPeers.closedWithin(socket, Duration.ofMillis(20))) {
                        closed.add(socket);
                    }
                }
                return closed.size() >= strangers.size() - UnadmittedConnections.CONNECTIONS_MAX;
            });
            assertThat(strangers.size() - closed.size()).as("strangers' connections left open")
                    .isEqualTo(UnadmittedConnections.CONNECTIONS_MAX);
            try (Socket peer = RaftPortPeers.connect(InetAddress.getByName("127.0.0.7"), raftPort)) {
                assertThatThrownBy(() -> RaftPortPeers.handshake(peer, secret, "n2", "n1"))
                        .as("a peer while every place is taken").isInstanceOf(IOException.class);
            }
        } finally {
            for (Socket socket : strangers) {
                socket.close();
            }
        }
        await().atMost(WAIT).ignoreExceptions().untilAsserted(() -> {
            try (Socket peer = RaftPortPeers.connect(InetAddress.getByName("127.0.0.7"), raftPort)) {
                RaftPortPeers.handshake(peer, secret, "n2", "n1");
            }
        });
        assertThat(rpc.refusals(Refusal.CONNECTIONS)).isGreaterThanOrEqualTo(6);
    }

    /**
     * Regression: the port answered every call it read, so an admitted peer that sends calls and reads none of the
     * answers made them queue in this peer's memory without bound. Now the port stops reading its calls while its
     * answers wait beyond the bound, and reads them again once it reads: no call is lost.
     */
    @Test
    void calls_ofAPeerThatReadsNoAnswer_stopBeingReadWithinTheBoundAndAreAllAnsweredOnceItReads() throws Exception {
        int calls = (8 << 20) / PeerFrames.HEADER_BYTES; // 8 MiB of FORMAT_LEVEL calls, each a bare header
        try (Socket peer = new Socket()) {
            peer.setReceiveBufferSize(4 << 10); // before connecting: the window it offers stays small
            peer.setSendBufferSize(16 << 10);
            peer.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), raftPort));
            peer.setSoTimeout(20_000);
            RaftPortPeers.handshake(peer, secret, "n2", "n1");
            Thread flood = new Thread(() -> sendFormatLevelCalls(peer, calls), "reads-no-answer");
            flood.setDaemon(true);
            flood.start();

            await("the port stops reading the calls of a peer that reads no answer").atMost(WAIT)
                    .until(() -> rpc.admittedNotRead() == 1 || !flood.isAlive());
            long waitingBytes = rpc.answerBytesWaiting();

            assertThat(rpc.admittedNotRead()).as("connections no longer read (%d bytes of answers wait)",
                    waitingBytes).isEqualTo(1);
            assertThat(waitingBytes).isLessThanOrEqualTo(PeerRpc.ANSWER_BYTES_WAITING_MAX);
            DataInputStream answers = new DataInputStream(new BufferedInputStream(peer.getInputStream()));
            for (int i = 0; i < calls; i++) {
                answers.skipNBytes(answers.readInt());
            }
            flood.join(WAIT.toMillis());
            assertThat(flood.isAlive()).isFalse();
            await().atMost(WAIT).until(() -> rpc.admittedNotRead() == 0);
        }
    }

    /**
     * A connection whose peer reads no answer is not read either, and stays until its idle close
     * ({@link PeerRpc#IDLE_CLOSE}) unless its peer ends it. That is not a fault: it holds at most
     * {@link PeerRpc#ANSWER_BYTES_WAITING_MAX} and one admitted place, and a peer's link ends its connection when a
     * call goes unanswered past its timeout. The port sees that end at once, its answers unread, not at the idle
     * close.
     */
    @Test
    void connection_peerThatReadsNoAnswerEndsIt_isClosedAtOnceNotAtTheIdleClose() throws Exception {
        int calls = (8 << 20) / PeerFrames.HEADER_BYTES;
        Thread flood;
        try (Socket peer = new Socket()) {
            peer.setReceiveBufferSize(4 << 10);
            peer.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), raftPort));
            peer.setSoTimeout(20_000);
            RaftPortPeers.handshake(peer, secret, "n2", "n1");
            flood = new Thread(() -> sendFormatLevelCalls(peer, calls), "reads-no-answer");
            flood.setDaemon(true);
            flood.start();
            await("the port stops reading the calls of a peer that reads no answer").atMost(WAIT)
                    .until(() -> rpc.admittedNotRead() == 1);
        }
        long closedAtMillis = System.currentTimeMillis();

        await("the connection's end is seen").atMost(WAIT).until(() -> rpc.admittedNotRead() == 0
                && rpc.answerBytesWaiting() == 0);
        assertThat(System.currentTimeMillis() - closedAtMillis).isLessThan(PeerRpc.IDLE_CLOSE.toMillis() / 10);
        flood.join(WAIT.toMillis());
    }

    /** Sends {@code calls} FORMAT_LEVEL calls on {@code socket} as fast as it takes them; stops when it closes. */
    private static void sendFormatLevelCalls(Socket socket, int calls) {
        ByteBuffer batch = ByteBuffer.allocate(4_096 * PeerFrames.HEADER_BYTES);
        try {
            OutputStream out = socket.getOutputStream();
            for (int sent = 0; sent < calls; ) {
                batch.clear();
                for (int i = 0; i < 4_096 && sent < calls; i++, sent++) {
                    batch.putInt(PeerFrames.HEADER_BYTES - Integer.BYTES).put(PeerFrames.Kind.FORMAT_LEVEL.code)
                            .putLong(sent + 1);
                }
                out.write(batch.array(), 0, batch.position());
            }
            out.flush();
        } catch (IOException closed) {
            // the test ended the connection
        }
    }

    @Test
    void inboundConnectionsMax_framesOfEveryAdmittedConnection_fitInAQuarterOfTheHeap() {
        int frameBytesMax = 8 << 20;

        assertThat(PeerTransport.inboundConnectionsMax(frameBytesMax, 256L << 20)).isEqualTo(8);
        assertThat(PeerTransport.inboundConnectionsMax(frameBytesMax, 6L << 30)).isEqualTo(64);
        assertThat(PeerTransport.inboundConnectionsMax(frameBytesMax, 16L << 20)).isZero();
        PeerTransport.checkHeap(5, frameBytesMax, 248L << 20); // a -Xmx256m JVM's usable heap
        PeerTransport.checkHeap(1, frameBytesMax, 16L << 20); // a group of one takes no connection
        assertThatThrownBy(() -> PeerTransport.checkHeap(5, 20 << 20, 248L << 20))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("a peer of a group of 5 needs room for 5 Raft connections of up to 20 MiB each (one per "
                        + "other peer, one spare), in a quarter of its heap; this JVM's heap (248 MiB) holds 3: "
                        + "start it with -Xmx400m or more");
    }

    @Test
    void frameBytesMax_ofThePeersProperties_isEightMebibytes() {
        assertThat(PeerTransport.frameBytesMax(raft.server().getProperties())).as("a 4 MB snapshot chunk or appender "
                + "buffer, and 4 MiB of headroom").isEqualTo(8 << 20);
    }

    private PeerLink link(GroupSecret linkSecret, String selfId, int port) throws IOException {
        RaftPeer peer = RaftPeer.newBuilder().setId("n1").setAddress("127.0.0.1:" + port).build();
        PeerLink link = PeerLink.connect(peer, linkGroup, NioSocketChannel.class, null,
                new PeerHandshake(linkSecret, selfId, RaftPortPeers.RANDOM), 8 << 20, Duration.ofSeconds(5));
        toClose.add(link);
        return link;
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A pre-vote of term 1 from {@code from}, a peer outside the group of one: refused, and it changes nothing. */
    private static RequestVoteRequestProto preVote(String from) {
        RaftRpcRequestProto header = RaftRpcRequestProto.newBuilder()
                .setRequestorId(ByteString.copyFromUtf8(from)).setReplyId(ByteString.copyFromUtf8("n1"))
                .setRaftGroupId(RaftGroupIdProto.newBuilder().setId(RaftNode.GROUP_ID.toByteString()))
                .setCallId(1).build();
        return RequestVoteRequestProto.newBuilder().setServerRequest(header).setCandidateTerm(1).setPreVote(true)
                .build();
    }

    /** An AppendEntries of term 0 from {@code from}: older than any term, so a peer refuses it and changes nothing. */
    private static AppendEntriesRequestProto staleAppendEntries(String from) {
        RaftRpcRequestProto header = RaftRpcRequestProto.newBuilder()
                .setRequestorId(ByteString.copyFromUtf8(from)).setReplyId(ByteString.copyFromUtf8("n1"))
                .setRaftGroupId(RaftGroupIdProto.newBuilder().setId(RaftNode.GROUP_ID.toByteString()))
                .setCallId(1).build();
        return AppendEntriesRequestProto.newBuilder().setServerRequest(header).setLeaderTerm(0).build();
    }
}

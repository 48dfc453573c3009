package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.server.raft.PeerFrames.Kind;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteReplyProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.exceptions.TimeoutIOException;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBufAllocator;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.nio.NioEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One link to a peer, against a peer on a plain socket that passes the real handshake and then answers as each test
 * tells it: answers go to their calls, a wrong answer or a silence ends the link, and the link's bounds hold.
 */
class PeerLinkTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int FRAME_BYTES_MAX = 64 * 1024;

    private final GroupSecret secret = GroupSecret.generate();
    private final EventLoopGroup group = new NioEventLoopGroup(1);
    private final List<AutoCloseable> toClose = new ArrayList<>();

    /** How the scripted peer answers one call: the frame to send back, or null to send nothing. */
    private interface Script {
        ByteBuf answer(Kind kind, long callId, byte[] body) throws IOException;
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable closeable : toClose) {
            closeable.close();
        }
        group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS).await(5, TimeUnit.SECONDS);
    }

    @Test
    void call_answeredOutOfOrder_completesEachCallWithItsOwnAnswer() throws Exception {
        List<Long> callIds = new CopyOnWriteArrayList<>();
        ScriptedPeer peer = peer((kind, callId, body) -> {
            callIds.add(callId);
            return null; // answered below, in reverse order
        });
        PeerLink link = link(peer);
        CompletableFuture<MessageLite> first = link.call(Kind.APPEND_ENTRIES, appendEntries(0));
        CompletableFuture<MessageLite> second = link.call(Kind.APPEND_ENTRIES, appendEntries(0));
        await().atMost(WAIT).until(() -> callIds.size() == 2);

        peer.send(PeerFrames.encode(ByteBufAllocator.DEFAULT, Kind.APPEND_ENTRIES, callIds.get(1), reply(2)));
        peer.send(PeerFrames.encode(ByteBufAllocator.DEFAULT, Kind.APPEND_ENTRIES, callIds.get(0), reply(1)));

        assertThat(((AppendEntriesReplyProto) first.get(30, TimeUnit.SECONDS)).getTerm()).isEqualTo(1);
        assertThat(((AppendEntriesReplyProto) second.get(30, TimeUnit.SECONDS)).getTerm()).isEqualTo(2);
    }

    @Test
    void call_refusedByThePeer_failsWithItsReasonAndTheLinkStays() throws Exception {
        ScriptedPeer peer = peer((kind, callId, body) -> PeerFrames.refusal(ByteBufAllocator.DEFAULT, callId,
                "GroupMismatchException: not this group"));
        PeerLink link = link(peer);

        assertThatThrownBy(() -> link.callAndWait(Kind.APPEND_ENTRIES, appendEntries(0), WAIT))
                .isInstanceOf(PeerRefusedException.class)
                .hasMessage("n1 refused a APPEND_ENTRIES: GroupMismatchException: not this group");
        assertThat(link.isOpen()).as("a refusal comes over a sound link").isTrue();
    }

    @Test
    void call_answerOfAnotherKind_failsAndEndsTheLink() throws Exception {
        ScriptedPeer peer = peer((kind, callId, body) -> PeerFrames.encode(ByteBufAllocator.DEFAULT,
                Kind.REQUEST_VOTE, callId, RequestVoteReplyProto.getDefaultInstance()));
        PeerLink link = link(peer);

        assertThatThrownBy(() -> link.callAndWait(Kind.APPEND_ENTRIES, appendEntries(0), WAIT))
                .hasMessage("peer n1 answered a APPEND_ENTRIES with a frame of kind 1");
        await().atMost(WAIT).until(() -> !link.isOpen());
    }

    @Test
    void callAndWait_noAnswer_timesOutAndEndsTheLinkSoALateAnswerIsNeverTakenForAnother() throws Exception {
        PeerLink link = link(peer((kind, callId, body) -> null));

        assertThatThrownBy(() -> link.callAndWait(Kind.APPEND_ENTRIES, appendEntries(0), Duration.ofMillis(200)))
                .isInstanceOf(TimeoutIOException.class).hasMessageContaining("did not answer a APPEND_ENTRIES");
        await().atMost(WAIT).until(() -> !link.isOpen());
    }

    @Test
    void call_peerClosesTheConnection_failsEveryCallInFlight() throws Exception {
        ScriptedPeer peer = peer((kind, callId, body) -> null);
        PeerLink link = link(peer);
        CompletableFuture<MessageLite> waiting = link.call(Kind.APPEND_ENTRIES, appendEntries(0));
        await().atMost(WAIT).until(() -> peer.calls() == 1);

        peer.closeConnection();

        assertThatThrownBy(() -> waiting.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasMessageContaining("no answer from peer n1").hasMessageContaining("the link was closed");
        assertThatThrownBy(() -> link.call(Kind.APPEND_ENTRIES, appendEntries(0)).get(30, TimeUnit.SECONDS))
                .as("a call on the closed link").hasMessageContaining("the link is closed");
    }

    @Test
    void call_largerThanAFrameOrBeyondTheCallsInFlight_isRefusedWithoutSending() throws Exception {
        ScriptedPeer peer = peer((kind, callId, body) -> null);
        PeerLink link = link(peer);

        CompletableFuture<MessageLite> tooLarge = link.call(Kind.APPEND_ENTRIES, appendEntries(FRAME_BYTES_MAX));
        List<CompletableFuture<MessageLite>> waiting = new ArrayList<>();
        for (int i = 0; i < PeerLink.CALLS_IN_FLIGHT_MAX; i++) {
            waiting.add(link.call(Kind.APPEND_ENTRIES, appendEntries(0)));
        }
        CompletableFuture<MessageLite> beyond = link.call(Kind.APPEND_ENTRIES, appendEntries(0));

        assertThatThrownBy(() -> tooLarge.get(30, TimeUnit.SECONDS))
                .hasMessageContaining("exceeds the " + FRAME_BYTES_MAX + " bytes a peer accepts in a frame");
        assertThatThrownBy(() -> beyond.get(30, TimeUnit.SECONDS))
                .hasMessageContaining(PeerLink.CALLS_IN_FLIGHT_MAX + " calls already wait on the link to n1");
        assertThat(waiting).noneMatch(CompletableFuture::isDone);
        await().atMost(WAIT).until(() -> peer.calls() == PeerLink.CALLS_IN_FLIGHT_MAX);
    }

    /**
     * Regression: a link's calls were bounded by their count alone, so a peer that stops reading held up to
     * {@link PeerLink#CALLS_IN_FLIGHT_MAX} frames in this peer's heap (here 1,024 of 48 KiB, some 48 MiB; 8 GiB with
     * the largest frames a group sends). Now the frames waiting for the socket are at most
     * {@link PeerLink#queuedBytesMax}, further calls are refused naming the bound, and once the peer reads again the
     * link takes calls again: the bound holds a paused reader back, it does not end the link (a call that times out
     * does, see {@link #callAndWait_noAnswer_timesOutAndEndsTheLinkSoALateAnswerIsNeverTakenForAnother}).
     */
    @Test
    void call_peerThatReadsNothing_queuesAtMostTheBoundsBytesAndRefusesBeyondNamingIt() throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        toClose.add(reading::countDown); // closed first: the peer's thread reads again, and ends with the socket
        ScriptedPeer peer = peer((kind, callId, body) -> {
            awaitUninterruptibly(reading); // the first call read, the peer reads nothing more
            return null;
        });
        PeerLink link = link(peer);
        List<CompletableFuture<MessageLite>> calls = new ArrayList<>();
        long mostQueued = 0;
        for (int i = 0; i < PeerLink.CALLS_IN_FLIGHT_MAX; i++) {
            calls.add(link.call(Kind.APPEND_ENTRIES, appendEntries(FRAME_BYTES_MAX * 3 / 4)));
            mostQueued = Math.max(mostQueued, link.bytesQueued());
        }
        long queuedBytesMax = PeerLink.queuedBytesMax(FRAME_BYTES_MAX);

        assertThat(mostQueued).as("bytes of calls queued on a link to a peer that reads nothing")
                .isLessThanOrEqualTo(queuedBytesMax);
        CompletableFuture<MessageLite> refused = calls.get(calls.size() - 1);
        assertThatThrownBy(() -> refused.get(30, TimeUnit.SECONDS)).hasMessageContaining(
                "bytes of calls already wait to be sent on the link to n1 (at most " + queuedBytesMax + ")");

        reading.countDown();
        await().atMost(WAIT).until(() -> link.bytesQueued() == 0);
        CompletableFuture<MessageLite> after = link.call(Kind.APPEND_ENTRIES, appendEntries(FRAME_BYTES_MAX * 3 / 4));
        await().atMost(WAIT).until(() -> peer.calls() == calls.stream().filter(call -> !call.isDone()).count() + 1);
        assertThat(after).isNotDone();
        assertThat(link.isOpen()).isTrue();
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private ScriptedPeer peer(Script script) throws IOException {
        ScriptedPeer peer = new ScriptedPeer(script);
        toClose.add(peer);
        return peer;
    }

    private PeerLink link(ScriptedPeer peer) throws IOException {
        RaftPeer raftPeer = RaftPeer.newBuilder().setId("n1").setAddress("127.0.0.1:" + peer.port()).build();
        PeerLink link = PeerLink.connect(raftPeer, group, NioSocketChannel.class, null,
                new PeerHandshake(secret, "n2", RaftPortPeers.RANDOM), FRAME_BYTES_MAX, Duration.ofSeconds(5));
        toClose.add(link);
        return link;
    }

    private static AppendEntriesRequestProto appendEntries(int entryBytes) {
        AppendEntriesRequestProto.Builder request = AppendEntriesRequestProto.newBuilder().setLeaderTerm(1);
        if (entryBytes > 0) {
            request.addEntries(LogEntryProto.newBuilder().setIndex(1).setTerm(1).setStateMachineLogEntry(
                    StateMachineLogEntryProto.newBuilder().setLogData(ByteString.copyFrom(new byte[entryBytes]))));
        }
        return request.build();
    }

    private static AppendEntriesReplyProto reply(long term) {
        return AppendEntriesReplyProto.newBuilder().setTerm(term).build();
    }

    /**
     * A peer on a plain socket: it accepts one connection, passes the listening side of the handshake with the real
     * {@link PeerHandshake}, then reads frames and answers each as its script says.
     */
    private final class ScriptedPeer implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        private final Script script;
        private final Thread thread;
        private volatile Socket connection;
        private volatile int calls;

        ScriptedPeer(Script script) throws IOException {
            this.script = script;
            this.thread = new Thread(this::serve, "scripted-peer");
            thread.setDaemon(true);
            thread.start();
        }

        int port() {
            return server.getLocalPort();
        }

        int calls() {
            return calls;
        }

        private void serve() {
            try (Socket socket = server.accept()) {
                connection = socket;
                PeerHandshake.Listening listening = new PeerHandshake(secret, "n1", RaftPortPeers.RANDOM).listening();
                socket.getOutputStream().write(listening.hello());
                DataInputStream in = new DataInputStream(socket.getInputStream());
                byte[] answer = null;
                while (answer == null) {
                    answer = listening.receive(Unpooled.wrappedBuffer(new byte[] {in.readByte()}));
                }
                socket.getOutputStream().write(answer);
                while (true) {
                    byte[] frame = new byte[in.readInt()];
                    in.readFully(frame);
                    ByteBuf body = Unpooled.wrappedBuffer(frame);
                    Kind kind = Kind.of(body.readByte());
                    long callId = body.readLong();
                    byte[] bytes = new byte[body.readableBytes()];
                    body.readBytes(bytes);
                    calls++;
                    ByteBuf reply = script.answer(kind, callId, bytes);
                    if (reply != null) {
                        send(reply);
                    }
                }
            } catch (EOFException | SocketException closed) {
                // the link or the test closed the connection
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }

        synchronized void send(ByteBuf frame) throws IOException {
            try {
                byte[] bytes = new byte[frame.readableBytes()];
                frame.readBytes(bytes);
                OutputStream out = connection.getOutputStream();
                out.write(bytes);
                out.flush();
            } finally {
                frame.release();
            }
        }

        void closeConnection() throws IOException {
            connection.close();
        }

        @Override
        public void close() throws IOException {
            server.close();
            Socket socket = connection;
            if (socket != null) {
                socket.close();
            }
            try {
                thread.join(WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}

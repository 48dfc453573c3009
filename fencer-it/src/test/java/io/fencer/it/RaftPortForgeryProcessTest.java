package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.RaftGroupIdProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local process forging Raft messages on the Raft port of a real {@code fencer server} with its default options:
 * an AppendEntries of term 1000 from a leader "evil", framed as peers frame their calls. With its defaults the server
 * answers with its handshake's HELLO and closes the connection when no proof of the group secret follows: its leader,
 * its term and its log stay as they were and it goes on granting. The control, the same server told
 * {@code --insecure-raft} (what every server did before peers authenticated each other), takes the forged message:
 * it answers it, logs "the leader is now evil", and, hearing no more of "evil", elects itself again in a term
 * beyond 1000.
 */
class RaftPortForgeryProcessTest {
    /** The group id of every Fencer deployment: the name-based UUID of "fencer.v1.locks". */
    private static final UUID GROUP_ID = UUID.nameUUIDFromBytes("fencer.v1.locks".getBytes(StandardCharsets.UTF_8));
    private static final long FORGED_TERM = 1_000;
    private static final int APPEND_ENTRIES = 2;
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private final List<FencerProcess> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(FencerProcess::close);
    }

    @Test
    void forgedAppendEntries_defaultServerClosesTheConnectionAndKeepsLeading_insecureControlTakesIt()
            throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = start("default", ports);
        JsonObject before = health(ports);
        assertThat(before.get("role").getAsString()).isEqualTo("LEADER");

        for (int i = 0; i < 10; i++) { // every 100 ms, as an attacker keeping the group leaderless would
            Answer answer = forge(ports.raft());
            assertThat(answer.frame).as("an answer to the forged call").isNull();
            assertThat(answer.bytesBeforeClose).as("the server sent its HELLO (37 bytes) and closed").isEqualTo(37);
            Thread.sleep(100);
        }
        Thread.sleep(2 * 800); // beyond the longest election timeout: a deposed leader would have stood again
        JsonObject after = health(ports);

        assertThat(after.get("role").getAsString()).isEqualTo("LEADER");
        assertThat(after.get("leader").getAsString()).isEqualTo(before.get("leader").getAsString());
        assertThat(after.get("appliedIndex").getAsLong()).as("no new term: a new term's leader appends an entry")
                .isEqualTo(before.get("appliedIndex").getAsLong());
        assertGrants(ports);
        assertThat(server.logText()).doesNotContain("the leader is now evil")
                .contains("refused a Raft connection from 127.0.0.1:").contains("not a Fencer peer's handshake");

        // The control: the same frame against a server without peer authentication is taken.
        FencerProcess.Ports insecurePorts = FencerProcess.Ports.free();
        FencerProcess insecure = start("insecure", insecurePorts, "--insecure-raft");
        long appliedBefore = health(insecurePorts).get("appliedIndex").getAsLong();

        Answer taken = forge(insecurePorts.raft());

        assertThat(taken.frame).as("the insecure server carries out the forged call and answers it").isNotNull();
        await().atMost(WAIT).until(insecure::logText, text -> text.contains("the leader is now evil"));
        // Deposed by "evil" in term 1000, it hears no heartbeat and elects itself in a later term, whose first entry
        // moves the applied index: the forged term was taken.
        await().atMost(WAIT).until(() -> health(insecurePorts).get("appliedIndex").getAsLong() > appliedBefore);
        assertThat(insecure.logText()).contains("authenticates no peer");
    }

    private FencerProcess start(String name, FencerProcess.Ports ports, String... extra) throws IOException {
        FencerProcess server = FencerProcess.server(name, dir.resolve(name), ports, extra);
        servers.add(server);
        server.awaitHealthy(ports.admin());
        return server;
    }

    private static JsonObject health(FencerProcess.Ports ports) {
        return JsonParser.parseString(FencerProcess.health(ports.admin())).getAsJsonObject();
    }

    private static void assertGrants(FencerProcess.Ports ports) throws Exception {
        try (FencerClient fencer = Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(Duration.ofSeconds(30))
                .build();
                Session session = fencer.openSession(Duration.ofSeconds(10));
                Grant grant = session.lock("after-forgery").acquire(Duration.ofSeconds(30))) {
            assertThat(grant.token().value()).isPositive();
        }
    }

    /** What came back on one forged connection: the reply's message (or null) and the bytes received. */
    private record Answer(AppendEntriesReplyProto frame, int bytesBeforeClose) {
    }

    /**
     * Connects to the Raft port as a stranger and sends {@code length:int32 kind:int8 callId:int64 body}, kind 2
     * (AppendEntries), with an AppendEntries of term 1000 from "evil" to "n1" in Fencer's group.
     */
    private static Answer forge(int raftPort) throws IOException {
        RaftRpcRequestProto header = RaftRpcRequestProto.newBuilder()
                .setRequestorId(ByteString.copyFromUtf8("evil")).setReplyId(ByteString.copyFromUtf8("n1"))
                .setRaftGroupId(RaftGroupIdProto.newBuilder().setId(uuidBytes(GROUP_ID))).setCallId(1).build();
        byte[] body = AppendEntriesRequestProto.newBuilder().setServerRequest(header).setLeaderTerm(FORGED_TERM)
                .build().toByteArray();
        try (Socket socket = new Socket("127.0.0.1", raftPort)) {
            socket.setSoTimeout(20_000);
            ByteBuffer frame = ByteBuffer.allocate(Integer.BYTES + Byte.BYTES + Long.BYTES + body.length)
                    .putInt(Byte.BYTES + Long.BYTES + body.length).put((byte) APPEND_ENTRIES).putLong(1).put(body);
            socket.getOutputStream().write(frame.array()); // in one write, as one segment
            return read(socket.getInputStream());
        }
    }

    /**
     * Reads an AppendEntries answer frame ({@code length kind=2 callId=1 reply}), or else every byte until the server
     * closes the connection.
     */
    private static Answer read(InputStream in) throws IOException {
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        try {
            int b;
            while (received.size() < 13 && (b = in.read()) != -1) {
                received.write(b);
            }
            if (received.size() == 13) {
                ByteBuffer head = ByteBuffer.wrap(received.toByteArray());
                int length = head.getInt();
                byte kind = head.get();
                long callId = head.getLong();
                if (kind == APPEND_ENTRIES && callId == 1 && length >= 9 && length <= 1 << 20) {
                    byte[] reply = in.readNBytes(length - 9);
                    return new Answer(AppendEntriesReplyProto.parseFrom(reply), received.size() + reply.length);
                }
            }
            while ((b = in.read()) != -1) {
                received.write(b);
            }
        } catch (SocketException reset) {
            // the server reset the connection: what came before it is counted
        }
        return new Answer(null, received.size());
    }

    private static ByteString uuidBytes(UUID uuid) {
        return ByteString.copyFrom(ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits()).array());
    }
}

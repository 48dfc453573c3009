package io.fencer.it;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto.AppendResult;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftGroupIdProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.proto.RaftProtos.TermIndexProto;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * A stranger on a peer's Raft port posing as the leader of the lock service's group, as an attacker who can reach
 * an unauthenticated Raft port would: it sends AppendEntries frames ({@code length:int32 kind:int8 callId:int64
 * body}, kind 2, the body Ratis's {@code AppendEntriesRequestProto}) from the peer id {@value #ID}, for the group
 * every Fencer deployment uses, in a term of its choosing, and reads the answers. Nothing here uses Fencer's own
 * transport classes: the frames are built by hand, so the tests see the port as the attacker does.
 */
final class ForgedLeader implements AutoCloseable {
    /** The peer id the forged leader claims; no real peer has it. */
    static final String ID = "evil";
    /** The fixed group id of every Fencer deployment, derived as the server derives it. */
    static final ByteString GROUP_ID = uuidBytes(UUID.nameUUIDFromBytes(
            "fencer.v1.locks".getBytes(StandardCharsets.UTF_8)));
    /** A client id of the length Ratis requires (16 bytes, a UUID's): what every honest entry carries. */
    static final ByteString CLIENT_ID = uuidBytes(UUID.randomUUID());
    private static final int APPEND_ENTRIES = 2;
    private static final int REFUSED = 127;
    /** The previous entry's terms tried, 1 up to this, when looking for the end of the target's log. */
    private static final int PREVIOUS_TERMS_TRIED_MAX = 64;

    private final Socket socket;
    private final String targetId;
    private long callIds;

    private ForgedLeader(Socket socket, String targetId) {
        this.socket = socket;
        this.targetId = targetId;
    }

    /** Connects to the Raft port {@code raftPort} on 127.0.0.1 of the peer whose id is {@code targetId}. */
    static ForgedLeader connect(int raftPort, String targetId) throws IOException {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", raftPort), 10_000);
        socket.setSoTimeout(Math.toIntExact(Duration.ofSeconds(30).toMillis()));
        return new ForgedLeader(socket, Objects.requireNonNull(targetId, "targetId"));
    }

    /** One answer: Ratis's reply, or the Raft port's refusal of the call (its reason); exactly one is non-null. */
    record Reply(AppendEntriesReplyProto answer, String refusal) {
        boolean succeeded() {
            return answer != null && answer.getResult() == AppendResult.SUCCESS;
        }

        @Override
        public String toString() {
            return answer != null ? "reply " + answer.getResult() + " (term " + answer.getTerm() + ", next index "
                    + answer.getNextIndex() + ", match index " + answer.getMatchIndex() + ")" : "refused: " + refusal;
        }
    }

    /** Where forged entries landed: the index of the first one, and the answer that accepted (or refused) them. */
    record Appended(long firstIndex, Reply reply) {}

    /**
     * Sends one AppendEntries in {@code term}: {@code entries} after {@code previous} (null: none, a heartbeat's),
     * telling the target that everything up to {@code leaderCommit} is committed; returns the answer.
     */
    Reply append(long term, TermIndexProto previous, List<LogEntryProto> entries, long leaderCommit)
            throws IOException {
        AppendEntriesRequestProto.Builder request = AppendEntriesRequestProto.newBuilder()
                .setServerRequest(RaftRpcRequestProto.newBuilder()
                        .setRequestorId(ByteString.copyFromUtf8(ID))
                        .setReplyId(ByteString.copyFromUtf8(targetId))
                        .setRaftGroupId(RaftGroupIdProto.newBuilder().setId(GROUP_ID))
                        .setCallId(++callIds)
                        .setTimeoutMs(3_000))
                .setLeaderTerm(term)
                .addAllEntries(entries)
                .setLeaderCommit(leaderCommit);
        if (previous != null) {
            request.setPreviousLog(previous);
        }
        long callId = callIds;
        write(callId, request.build().toByteArray());
        return read(callId);
    }

    /**
     * Appends the entries {@code forge} makes (given the index each must have) at the end of the target's log in
     * {@code term}, and declares them committed, so that the target applies them at once. The term of the target's
     * last entry, which Raft's consistency check asks for, is found by trying 1, 2, … (a refused try changes
     * nothing); the first answer that is not an inconsistency is returned.
     */
    Appended appendAtEnd(long term, EntryForger... forge) throws IOException {
        Reply heartbeat = append(term, null, List.of(), 0);
        if (heartbeat.answer() == null) {
            return new Appended(-1, heartbeat);
        }
        long next = heartbeat.answer().getNextIndex();
        List<LogEntryProto> entries = new ArrayList<>();
        for (int i = 0; i < forge.length; i++) {
            entries.add(forge[i].entry(term, next + i));
        }
        long last = next + forge.length - 1;
        Reply reply = heartbeat;
        for (long previousTerm = 1; previousTerm <= PREVIOUS_TERMS_TRIED_MAX; previousTerm++) {
            TermIndexProto previous = TermIndexProto.newBuilder().setTerm(previousTerm).setIndex(next - 1).build();
            reply = append(term, previous, entries, last);
            if (reply.answer() == null || reply.answer().getResult() != AppendResult.INCONSISTENCY) {
                break;
            }
        }
        return new Appended(next, reply);
    }

    /** Makes one forged entry, given the term and index it must have. */
    @FunctionalInterface
    interface EntryForger {
        LogEntryProto entry(long term, long index);
    }

    /** An entry of the state machine carrying {@code data}, under the client id {@code clientId} (may be empty). */
    static EntryForger stateMachineEntry(ByteString clientId, byte[] data) {
        return (term, index) -> LogEntryProto.newBuilder().setTerm(term).setIndex(index)
                .setStateMachineLogEntry(StateMachineLogEntryProto.newBuilder()
                        .setClientId(clientId)
                        .setCallId(index)
                        .setLogData(ByteString.copyFrom(data)))
                .build();
    }

    private void write(long callId, byte[] body) throws IOException {
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.writeInt(Byte.BYTES + Long.BYTES + body.length);
        out.writeByte(APPEND_ENTRIES);
        out.writeLong(callId);
        out.write(body);
        out.flush();
    }

    private Reply read(long callId) throws IOException {
        DataInputStream in = new DataInputStream(socket.getInputStream());
        int length = in.readInt();
        int kind = in.readByte();
        long answered = in.readLong();
        byte[] body = new byte[length - Byte.BYTES - Long.BYTES];
        in.readFully(body);
        if (answered != callId) {
            throw new IOException("call " + callId + " answered as call " + answered);
        }
        if (kind == REFUSED) {
            return new Reply(null, new String(body, StandardCharsets.UTF_8));
        }
        if (kind != APPEND_ENTRIES) {
            throw new IOException("call " + callId + " answered with a frame of kind " + kind);
        }
        return new Reply(AppendEntriesReplyProto.parseFrom(body), null);
    }

    private static ByteString uuidBytes(UUID uuid) {
        byte[] bytes = ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits()).array();
        return ByteString.copyFrom(bytes);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}

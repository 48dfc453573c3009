package io.fencer.server.raft;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.InstallSnapshotReplyProto;
import org.apache.ratis.proto.RaftProtos.InstallSnapshotRequestProto;
import org.apache.ratis.proto.RaftProtos.ReadIndexReplyProto;
import org.apache.ratis.proto.RaftProtos.ReadIndexRequestProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteReplyProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteRequestProto;
import org.apache.ratis.proto.RaftProtos.StartLeaderElectionReplyProto;
import org.apache.ratis.proto.RaftProtos.StartLeaderElectionRequestProto;
import org.apache.ratis.thirdparty.com.google.protobuf.InvalidProtocolBufferException;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.com.google.protobuf.Parser;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBufAllocator;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBufOutputStream;
import org.apache.ratis.thirdparty.io.netty.handler.codec.LengthFieldBasedFrameDecoder;

/**
 * The wire format of the Raft port: the one place frames between peers are written and read.
 *
 * <p>A frame is {@code length:int32 kind:int8 callId:int64 body}, big-endian, where {@code length} counts the bytes
 * after itself and is at most {@link #frameBytesMax}. A request's body is the Ratis message of its {@link Kind}; its
 * answer carries the same kind and call id and the Ratis reply, or the kind {@link Kind#REFUSED} and a UTF-8 reason.
 * Call ids are the sender's, one counter per connection, so answers may come in any order. Nothing here is Java
 * serialization: a peer can only send Raft's own messages, each parsed by its protobuf parser.
 */
final class PeerFrames {
    /** The bytes of a frame before its body: the length, the kind and the call id. */
    static final int HEADER_BYTES = Integer.BYTES + Byte.BYTES + Long.BYTES;

    /** The calls a peer makes on another: Raft's server-to-server protocol, nothing a client could use. */
    enum Kind {
        REQUEST_VOTE(1, RequestVoteRequestProto.parser(), RequestVoteReplyProto.parser()),
        APPEND_ENTRIES(2, AppendEntriesRequestProto.parser(), AppendEntriesReplyProto.parser()),
        INSTALL_SNAPSHOT(3, InstallSnapshotRequestProto.parser(), InstallSnapshotReplyProto.parser()),
        START_LEADER_ELECTION(4, StartLeaderElectionRequestProto.parser(), StartLeaderElectionReplyProto.parser()),
        READ_INDEX(5, ReadIndexRequestProto.parser(), ReadIndexReplyProto.parser()),
        /**
         * Fencer's own call, not Raft's: which format level the called peer's release reads (an empty request, an
         * {@code Int32Value} answer). A peer of a release before format levels answers it {@link #REFUSED}, as any
         * kind it does not know, and keeps the connection: that answer means the previous release's level.
         */
        FORMAT_LEVEL(6, org.apache.ratis.thirdparty.com.google.protobuf.Empty.parser(),
                org.apache.ratis.thirdparty.com.google.protobuf.Int32Value.parser()),
        /** An answer only: the call was not carried out; the body says why. */
        REFUSED(127, null, null);

        final byte code;
        final Parser<? extends MessageLite> requestParser;
        final Parser<? extends MessageLite> replyParser;

        Kind(int code, Parser<? extends MessageLite> requestParser, Parser<? extends MessageLite> replyParser) {
            this.code = (byte) code;
            this.requestParser = requestParser;
            this.replyParser = replyParser;
        }

        /** Returns the kind of {@code code}, or null when this version knows none. */
        static Kind of(byte code) {
            return code >= 0 ? BY_CODE[code] : null;
        }
    }

    /** Each kind at its code (codes are 0..127), so reading a frame's kind costs no copy of {@code values()}. */
    private static final Kind[] BY_CODE = new Kind[Byte.MAX_VALUE + 1];

    static {
        for (Kind kind : Kind.values()) {
            BY_CODE[kind.code] = kind;
        }
    }

    /** A frame as read: its kind (null when unknown), its call id, and the body still unparsed. */
    record Frame(Kind kind, byte kindCode, long callId, ByteBuf body) {
        /** Parses the body as a request of this frame's kind. */
        MessageLite request() throws InvalidProtocolBufferException {
            return parse(kind.requestParser);
        }

        /** Parses the body as an answer of this frame's kind. */
        MessageLite reply() throws InvalidProtocolBufferException {
            return parse(kind.replyParser);
        }

        /** Returns the reason of a {@link Kind#REFUSED} answer. */
        String reason() {
            return body.toString(StandardCharsets.UTF_8);
        }

        private MessageLite parse(Parser<? extends MessageLite> parser) throws InvalidProtocolBufferException {
            return parser.parseFrom(body.nioBuffer());
        }
    }

    private PeerFrames() {
    }

    /**
     * Returns the largest frame a peer accepts: an AppendEntries is cut at Ratis's appender buffer and a snapshot
     * is sent in chunks, so a frame holds at most the larger of the two plus headroom for one entry beyond the
     * buffer (Ratis always sends at least one) and the message's own fields.
     */
    static int frameBytesMax(int appenderBufferBytes, int snapshotChunkBytes) {
        int headroomBytes = 4 << 20;
        return Math.max(appenderBufferBytes, snapshotChunkBytes) + headroomBytes;
    }

    /** Returns the decoder that cuts frames out of a connection's bytes, refusing any longer than the maximum. */
    static LengthFieldBasedFrameDecoder decoder(int frameBytesMax) {
        return new LengthFieldBasedFrameDecoder(frameBytesMax, 0, Integer.BYTES, 0, Integer.BYTES);
    }

    /** Writes a frame of {@code kind} carrying {@code message}. */
    static ByteBuf encode(ByteBufAllocator allocator, Kind kind, long callId, MessageLite message) {
        int bodyBytes = message.getSerializedSize();
        ByteBuf frame = allocator.buffer(HEADER_BYTES + bodyBytes);
        frame.writeInt(Byte.BYTES + Long.BYTES + bodyBytes).writeByte(kind.code).writeLong(callId);
        try (ByteBufOutputStream out = new ByteBufOutputStream(frame)) {
            message.writeTo(out);
        } catch (IOException | RuntimeException e) {
            frame.release();
            throw new IllegalStateException("cannot write a " + kind + " frame of " + bodyBytes + " bytes", e);
        }
        return frame;
    }

    /** Writes a {@link Kind#REFUSED} answer to call {@code callId}. */
    static ByteBuf refusal(ByteBufAllocator allocator, long callId, String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        ByteBuf frame = allocator.buffer(HEADER_BYTES + text.length);
        frame.writeInt(Byte.BYTES + Long.BYTES + text.length).writeByte(Kind.REFUSED.code).writeLong(callId)
                .writeBytes(text);
        return frame;
    }

    /** Reads the header of a frame the decoder cut (its length already stripped); the body stays in the buffer. */
    static Frame read(ByteBuf frame) throws InvalidProtocolBufferException {
        if (frame.readableBytes() < Byte.BYTES + Long.BYTES) {
            throw new InvalidProtocolBufferException("a peer frame of " + frame.readableBytes()
                    + " bytes is shorter than its kind and call id (9 bytes)");
        }
        byte code = frame.readByte();
        long callId = frame.readLong();
        return new Frame(Kind.of(code), code, callId, frame);
    }
}

package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.server.raft.PeerFrames.Frame;
import io.fencer.server.raft.PeerFrames.Kind;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteRequestProto;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.InvalidProtocolBufferException;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBufAllocator;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.apache.ratis.thirdparty.io.netty.channel.embedded.EmbeddedChannel;
import org.apache.ratis.thirdparty.io.netty.handler.codec.TooLongFrameException;
import org.junit.jupiter.api.Test;

/** The frame format of the Raft port, written and read back, and the decoder's bound. */
class PeerFramesTest {
    private static final ByteBufAllocator ALLOCATOR = ByteBufAllocator.DEFAULT;

    @Test
    void encodeThenRead_requestVote_keepsKindCallIdAndMessage() throws Exception {
        RequestVoteRequestProto vote = RequestVoteRequestProto.newBuilder().setCandidateTerm(7)
                .setServerRequest(RaftRpcRequestProto.newBuilder().setRequestorId(ByteString.copyFromUtf8("n2")))
                .build();
        ByteBuf frame = PeerFrames.encode(ALLOCATOR, Kind.REQUEST_VOTE, 42, vote);
        try {
            assertThat(frame.readInt()).as("the length counts what follows it")
                    .isEqualTo(1 + 8 + vote.getSerializedSize());
            Frame read = PeerFrames.read(frame);

            assertThat(read.kind()).isEqualTo(Kind.REQUEST_VOTE);
            assertThat(read.callId()).isEqualTo(42);
            assertThat(read.request()).isEqualTo(vote);
        } finally {
            frame.release();
        }
    }

    @Test
    void refusalThenRead_carriesTheReasonInUtf8() throws Exception {
        ByteBuf frame = PeerFrames.refusal(ALLOCATOR, 9, "no call of kind 99 — refusé");
        try {
            frame.skipBytes(Integer.BYTES);
            Frame read = PeerFrames.read(frame);

            assertThat(read.kind()).isEqualTo(Kind.REFUSED);
            assertThat(read.callId()).isEqualTo(9);
            assertThat(read.reason()).isEqualTo("no call of kind 99 — refusé");
        } finally {
            frame.release();
        }
    }

    @Test
    void read_unknownKindOrShortFrame_isNamedOrRefused() throws Exception {
        Frame unknown = PeerFrames.read(Unpooled.wrappedBuffer(new byte[] {99, 0, 0, 0, 0, 0, 0, 0, 5}));

        assertThat(unknown.kind()).isNull();
        assertThat(unknown.kindCode()).isEqualTo((byte) 99);
        assertThat(unknown.callId()).isEqualTo(5);
        assertThat(PeerFrames.read(Unpooled.wrappedBuffer(new byte[] {(byte) 0x80, 0, 0, 0, 0, 0, 0, 0, 1})).kind())
                .as("a negative code").isNull();
        assertThatThrownBy(() -> PeerFrames.read(Unpooled.wrappedBuffer(new byte[] {2, 0, 0})))
                .isInstanceOf(InvalidProtocolBufferException.class).hasMessageContaining("3 bytes is shorter");
    }

    @Test
    void decoder_frameLongerThanTheMaximum_isRefusedBeforeItsBodyIsBuffered() {
        EmbeddedChannel channel = new EmbeddedChannel(PeerFrames.decoder(1_024));
        try {
            ByteBuf whole = Unpooled.buffer().writeInt(9).writeByte(1).writeLong(3);
            assertThat(channel.writeInbound(whole)).isTrue();
            ByteBuf decoded = channel.readInbound();
            assertThat(decoded.readableBytes()).as("the frame without its length").isEqualTo(9);
            decoded.release();

            assertThatThrownBy(() -> channel.writeInbound(Unpooled.buffer().writeInt(1_025)))
                    .isInstanceOf(TooLongFrameException.class);
        } finally {
            channel.finishAndReleaseAll();
        }
    }

    @Test
    void frameBytesMax_isTheLargerBufferPlusFourMebibytes() {
        assertThat(PeerFrames.frameBytesMax(4 << 20, 4 << 20)).isEqualTo(8 << 20);
        assertThat(PeerFrames.frameBytesMax(4 << 20, 16 << 20)).isEqualTo(20 << 20);
    }
}

package io.fencer.server.raft;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fencer.core.FuzzBudget;
import org.apache.ratis.thirdparty.com.google.protobuf.InvalidProtocolBufferException;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.apache.ratis.thirdparty.io.netty.channel.embedded.EmbeddedChannel;
import org.apache.ratis.thirdparty.io.netty.handler.codec.DecoderException;

/**
 * Fuzzes the Raft port's frames as an authenticated peer's connection delivers them: the frame decoder cuts the
 * bytes (at a small maximum, so the fuzzer reaches it), then each frame's header is read and its body parsed as the
 * request and as the reply of its kind. A connection's bytes are refused with the decoder's {@link DecoderException}
 * (a frame too long or a negative length) or a frame with {@link InvalidProtocolBufferException}, after which the
 * port closes the connection; any other throwable, an allocation sized by a claimed length, or a hang is a finding.
 */
class PeerFramesFuzzTest {
    /** Small enough that the fuzzer writes longer frames; the decoder refuses them by their length field alone. */
    private static final int FRAME_BYTES_MAX = 4_096;

    @FuzzTest(maxDuration = "10s")
    void read_anyConnectionBytes_framesOrRefuses(byte[] bytes) throws Exception {
        FuzzBudget.check(bytes.length, () -> {
            EmbeddedChannel channel = new EmbeddedChannel(PeerFrames.decoder(FRAME_BYTES_MAX));
            try {
                channel.writeInbound(Unpooled.wrappedBuffer(bytes));
                for (ByteBuf frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
                    try {
                        readFrame(frame);
                    } finally {
                        frame.release();
                    }
                }
            } catch (DecoderException refused) {
                // the decoder's refusal: the port closes the connection
            } finally {
                channel.finishAndReleaseAll();
            }
        });
    }

    private static void readFrame(ByteBuf bytes) {
        try {
            PeerFrames.Frame frame = PeerFrames.read(bytes);
            if (frame.kind() == PeerFrames.Kind.REFUSED) {
                frame.reason();
            } else if (frame.kind() != null) {
                int start = bytes.readerIndex();
                try {
                    frame.request();
                } catch (InvalidProtocolBufferException unreadable) {
                    // refused as a request: the reply parse below still runs on the same body
                }
                bytes.readerIndex(start);
                frame.reply();
            }
        } catch (InvalidProtocolBufferException refused) {
            // the typed refusal
        }
    }
}

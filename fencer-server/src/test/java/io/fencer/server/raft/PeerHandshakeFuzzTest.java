package io.fencer.server.raft;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fencer.core.FuzzBudget;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;

/**
 * Fuzzes both sides of the Raft port's handshake with bytes an unauthenticated stranger sends, cut into the reads a
 * connection may deliver: the listener's PROOF and the dialler's HELLO and ANSWER. Each side either waits for more,
 * answers, or fails with its one typed error, {@link PeerHandshake.Failure}; any other throwable, an allocation sized
 * by a claimed length, or a hang is a finding ({@link FuzzBudget}).
 */
class PeerHandshakeFuzzTest {
    private static final PeerHandshake HANDSHAKE = new PeerHandshake(
            GroupSecret.of(new byte[GroupSecret.SECRET_BYTES_MIN]), "n1", new SecureRandom());

    @FuzzTest(maxDuration = "10s")
    void listeningReceive_anyReads_answersOrFails(FuzzedDataProvider data) throws Exception {
        List<byte[]> reads = reads(data, PeerHandshake.PROOF_BYTES_MAX + 8);
        FuzzBudget.check(reads.stream().mapToInt(read -> read.length).sum(), () -> {
            PeerHandshake.Listening listening = HANDSHAKE.listening();
            try {
                for (byte[] read : reads) {
                    if (listening.receive(Unpooled.wrappedBuffer(read)) != null) {
                        break; // answered: the connection is a peer's from here on
                    }
                }
            } catch (PeerHandshake.Failure refused) {
                // the typed refusal
            }
        });
    }

    @FuzzTest(maxDuration = "10s")
    void diallingReceive_anyReads_provesOrFails(FuzzedDataProvider data) throws Exception {
        List<byte[]> reads = reads(data, PeerHandshake.ANSWER_BYTES_MAX + 8);
        FuzzBudget.check(reads.stream().mapToInt(read -> read.length).sum(), () -> {
            PeerHandshake.Dialling dialling = HANDSHAKE.dialling("n2");
            try {
                for (byte[] read : reads) {
                    dialling.receive(Unpooled.wrappedBuffer(read));
                }
            } catch (PeerHandshake.Failure refused) {
                // the typed refusal
            }
        });
    }

    /** Cuts the input into the reads a connection delivers, each of 1 to {@code readBytesMax} bytes. */
    private static List<byte[]> reads(FuzzedDataProvider data, int readBytesMax) {
        List<byte[]> reads = new ArrayList<>();
        while (data.remainingBytes() > 0) {
            reads.add(data.consumeBytes(data.consumeInt(1, readBytesMax)));
        }
        return reads;
    }
}

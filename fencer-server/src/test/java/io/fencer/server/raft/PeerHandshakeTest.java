package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.security.SecureRandom;
import java.util.Arrays;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

/**
 * The handshake's messages between a listener and a dialler, byte for byte as the wire carries them: both prove the
 * secret or the handshake fails, on either side, with the reason; nothing beyond a message's bound is read.
 */
class PeerHandshakeTest {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final GroupSecret secret = GroupSecret.generate();
    private final PeerHandshake n1 = new PeerHandshake(secret, "n1", RANDOM);
    private final PeerHandshake n2 = new PeerHandshake(secret, "n2", RANDOM);

    @Test
    void handshake_sameSecret_admitsBothSidesWithTheDocumentedSizes() throws Exception {
        PeerHandshake.Listening listening = n1.listening();
        PeerHandshake.Dialling dialling = n2.dialling("n1");

        byte[] hello = listening.hello();
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(hello));
        byte[] answer = listening.receive(Unpooled.wrappedBuffer(proof));
        assertThat(dialling.receive(Unpooled.wrappedBuffer(answer))).isNull();

        assertThat(dialling.accepted()).isTrue();
        assertThat(listening.peerId()).isEqualTo("n2");
        assertThat(hello).hasSize(37).startsWith('F', 'N', 'R', 'H', 1);
        assertThat(proof).hasSize(70 + 2).startsWith('F', 'N', 'R', 'H', 1);
        assertThat(answer).hasSize(34 + 2).startsWith(0, 2, 'n', '1');
    }

    @Test
    void handshake_bytesArrivingOneByOne_admitsBothSides() throws Exception {
        PeerHandshake.Listening listening = n1.listening();
        PeerHandshake.Dialling dialling = n2.dialling("n1");

        byte[] proof = feedOneByOne(listening.hello(), dialling::receive);
        byte[] answer = feedOneByOne(proof, listening::receive);
        feedOneByOne(answer, dialling::receive);

        assertThat(dialling.accepted()).isTrue();
    }

    @Test
    void handshake_diallerWithAnotherSecret_isRefusedAndToldSo() throws Exception {
        PeerHandshake stranger = new PeerHandshake(GroupSecret.generate(), "n2", RANDOM);
        PeerHandshake.Listening listening = n1.listening();
        PeerHandshake.Dialling dialling = stranger.dialling("n1");
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(listening.hello()));

        PeerHandshake.Failure refused = catchThrowableOfType(PeerHandshake.Failure.class,
                () -> listening.receive(Unpooled.wrappedBuffer(proof)));
        PeerHandshake.Failure told = catchThrowableOfType(PeerHandshake.Failure.class,
                () -> dialling.receive(Unpooled.wrappedBuffer(refused.answer)));

        assertThat(refused.reason).isEqualTo(PeerHandshake.Reason.BAD_PROOF);
        assertThat(refused).hasMessage("its handshake does not prove the group secret");
        assertThat(refused.answer).containsExactly(PeerHandshake.REFUSED);
        assertThat(listening.peerId()).as("an unproven id is never taken").isNull();
        assertThat(told.reason).isEqualTo(PeerHandshake.Reason.REFUSED_BY_PEER);
        assertThat(dialling.accepted()).isFalse();
    }

    /** The other direction: a listener that answers "accepted" without knowing the secret is not believed. */
    @Test
    void handshake_listenerWithoutTheSecret_isRefusedByTheDialler() throws Exception {
        PeerHandshake.Listening listening = n1.listening();
        PeerHandshake.Dialling dialling = n2.dialling("n1");
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(listening.hello()));
        byte[] answer = listening.receive(Unpooled.wrappedBuffer(proof));
        byte[] forged = answer.clone();
        forged[forged.length - 1] ^= 1; // what an impostor without the secret can at best send

        PeerHandshake.Failure failure = catchThrowableOfType(PeerHandshake.Failure.class,
                () -> dialling.receive(Unpooled.wrappedBuffer(forged)));

        assertThat(failure.reason).isEqualTo(PeerHandshake.Reason.BAD_ANSWER);
        assertThat(dialling.accepted()).isFalse();
    }

    /**
     * A listener of this release refuses a PROOF made for another peer (above); one of the previous release does not
     * look, and answers as itself: the dialler refuses that answer, naming both peers. Its ANSWER is written here from
     * the specification of version 1.
     */
    @Test
    void handshake_answerOfAnotherPeer_isRefusedNamingBoth() throws Exception {
        PeerHandshake.Listening listening = new PeerHandshake(secret, "n3", RANDOM).listening();
        byte[] hello = listening.hello();
        PeerHandshake.Dialling dialling = n2.dialling("n1");
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(hello));
        byte[] clientNonce = Arrays.copyOfRange(proof, 5, 37);
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(secret.bytes(), "HmacSHA256"));
        mac.update("fencer raft server v1".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        mac.update(clientNonce);
        mac.update(Arrays.copyOfRange(hello, 5, 37));
        byte[] answerMac = mac.doFinal(new byte[] {'n', '3'});
        ByteBuf previousReleasesAnswer = Unpooled.buffer().writeByte(PeerHandshake.ACCEPTED).writeByte(2)
                .writeBytes(new byte[] {'n', '3'}).writeBytes(answerMac);

        assertThat(catchThrowableOfType(PeerHandshake.Failure.class,
                () -> listening.receive(Unpooled.wrappedBuffer(proof))).reason)
                .as("this release's listener").isEqualTo(PeerHandshake.Reason.OTHER_LISTENER);
        assertThatThrownBy(() -> dialling.receive(previousReleasesAnswer))
                .isInstanceOf(PeerHandshake.Failure.class).hasMessage("it is peer 'n3', not 'n1'");
    }

    /** A PROOF recorded on one connection proves nothing on another: the listener's nonce is new each time. */
    @Test
    void handshake_replayedProof_isRefused() throws Exception {
        PeerHandshake.Listening first = n1.listening();
        byte[] recorded = n2.dialling("n1").receive(Unpooled.wrappedBuffer(first.hello()));
        first.receive(Unpooled.wrappedBuffer(recorded));
        PeerHandshake.Listening second = n1.listening();
        second.hello();

        assertThatThrownBy(() -> second.receive(Unpooled.wrappedBuffer(recorded)))
                .isInstanceOf(PeerHandshake.Failure.class).hasMessage("its handshake does not prove the group secret");
    }

    /**
     * Regression: a PROOF that n2 made for n3 (its link to n3's address, held by a stranger, got n1's HELLO) admitted
     * the stranger at n1 as n2. Now n1 refuses it, and a dialler that reaches another peer than it meant is told so.
     */
    @Test
    void handshake_proofMadeForAnotherPeer_isRefusedAndTheDiallerToldWhy() throws Exception {
        PeerHandshake.Listening listening = n1.listening();
        PeerHandshake.Dialling dialling = n2.dialling("n3");
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(listening.hello()));

        PeerHandshake.Failure refused = catchThrowableOfType(PeerHandshake.Failure.class,
                () -> listening.receive(Unpooled.wrappedBuffer(proof)));
        PeerHandshake.Failure told = catchThrowableOfType(PeerHandshake.Failure.class,
                () -> dialling.receive(Unpooled.wrappedBuffer(refused.answer)));

        assertThat(refused.reason).isEqualTo(PeerHandshake.Reason.OTHER_LISTENER);
        assertThat(refused).hasMessageStartingWith("its handshake was made for another peer than 'n1'");
        assertThat(refused.answer).containsExactly(PeerHandshake.REFUSED_OTHER_PEER);
        assertThat(listening.peerId()).as("an id proven for another listener is never taken").isNull();
        assertThat(told.reason).isEqualTo(PeerHandshake.Reason.OTHER_LISTENER);
        assertThat(told).hasMessage("it is another peer than 'n3' (check the address --peers gives it)");
    }

    /**
     * A peer of the previous release draws its nonce at random and names no listener in it: still admitted, so a
     * group can be upgraded peer by peer. Its PROOF is written here from the specification of version 1.
     */
    @Test
    void handshake_previousReleasesProofWithARandomNonce_isStillAdmitted() throws Exception {
        PeerHandshake.Listening listening = n1.listening();
        byte[] serverNonce = Arrays.copyOfRange(listening.hello(), 5, 37);
        byte[] clientNonce = new byte[32];
        RANDOM.nextBytes(clientNonce);
        clientNonce[0] = 0; // never the mark of a bound nonce
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(secret.bytes(), "HmacSHA256"));
        mac.update("fencer raft client v1".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        mac.update(serverNonce);
        mac.update(clientNonce);
        byte[] proofMac = mac.doFinal(new byte[] {'n', '2'});
        ByteBuf proof = Unpooled.buffer().writeBytes(PeerHandshake.MAGIC).writeByte(1).writeBytes(clientNonce)
                .writeByte(2).writeBytes(new byte[] {'n', '2'}).writeBytes(proofMac);

        byte[] answer = listening.receive(proof);

        assertThat(answer).startsWith(PeerHandshake.ACCEPTED, 2, 'n', '1');
        assertThat(listening.peerId()).isEqualTo("n2");
    }

    /** A nonce marked as naming a peer cannot be taken from another connection: its tag covers the listener's nonce. */
    @Test
    void handshake_boundNonceOfAnotherConnection_isRefused() throws Exception {
        PeerHandshake.Listening first = n1.listening();
        byte[] proofForFirst = n2.dialling("n1").receive(Unpooled.wrappedBuffer(first.hello()));
        byte[] nonce = Arrays.copyOfRange(proofForFirst, 5, 37);
        PeerHandshake.Listening second = n1.listening();
        byte[] serverNonce = Arrays.copyOfRange(second.hello(), 5, 37);
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(secret.bytes(), "HmacSHA256"));
        mac.update("fencer raft client v1".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        mac.update(serverNonce);
        mac.update(nonce);
        byte[] proofMac = mac.doFinal(new byte[] {'n', '2'});
        ByteBuf proof = Unpooled.buffer().writeBytes(PeerHandshake.MAGIC).writeByte(1).writeBytes(nonce)
                .writeByte(2).writeBytes(new byte[] {'n', '2'}).writeBytes(proofMac);

        assertThat(catchThrowableOfType(PeerHandshake.Failure.class, () -> second.receive(proof)).reason)
                .isEqualTo(PeerHandshake.Reason.OTHER_LISTENER);
    }

    @Test
    void listening_strangersBytes_areRefusedAtTheFirstWrongByteOrBeyondTheBound() throws Exception {
        byte[] raftFrame = {0, 0, 0, 9, 2, 0, 0, 0, 0, 0, 0, 0, 1}; // length, AppendEntries, call id 1
        byte[] tooLong = new byte[PeerHandshake.PROOF_BYTES_MAX + 1];
        System.arraycopy(PeerHandshake.MAGIC, 0, tooLong, 0, 4);
        tooLong[4] = 1;
        byte[] otherVersion = n2.dialling("n1").receive(Unpooled.wrappedBuffer(n1.listening().hello()));
        otherVersion[4] = 9;

        assertThat(reasonOf(raftFrame)).isEqualTo(PeerHandshake.Reason.NOT_A_HANDSHAKE);
        assertThat(reasonOf(new byte[] {'F', 'N', 'X'})).as("refused at the first wrong byte")
                .isEqualTo(PeerHandshake.Reason.NOT_A_HANDSHAKE);
        assertThat(reasonOf(tooLong)).isEqualTo(PeerHandshake.Reason.TOO_LONG);
        assertThat(reasonOf(otherVersion)).isEqualTo(PeerHandshake.Reason.VERSION);
    }

    @Test
    void dialling_moreThanAHello_isRefused() {
        byte[] helloAndMore = Arrays.copyOf(n1.listening().hello(), PeerHandshake.HELLO_BYTES + 1);

        assertThatThrownBy(() -> n2.dialling("n1").receive(Unpooled.wrappedBuffer(helloAndMore)))
                .isInstanceOf(PeerHandshake.Failure.class).hasMessageContaining("more than a HELLO of 37 bytes");
    }

    @Test
    void idBytes_emptyOrLongerThan255Bytes_isRefused() {
        assertThat(PeerHandshake.idBytes("n1")).containsExactly('n', '1');
        assertThat(PeerHandshake.idBytes("é".repeat(127))).hasSize(254);
        assertThatThrownBy(() -> PeerHandshake.idBytes("")).hasMessageContaining("has 0 bytes of UTF-8");
        assertThatThrownBy(() -> PeerHandshake.idBytes("é".repeat(128)))
                .hasMessageContaining("has 256 bytes of UTF-8, outside the [1, 255]");
    }

    private PeerHandshake.Reason reasonOf(byte[] bytes) {
        PeerHandshake.Listening listening = n1.listening();
        listening.hello();
        return catchThrowableOfType(PeerHandshake.Failure.class,
                () -> listening.receive(Unpooled.wrappedBuffer(bytes))).reason;
    }

    private interface Receiver {
        byte[] receive(ByteBuf in) throws PeerHandshake.Failure;
    }

    /** Feeds {@code bytes} one at a time and returns what the receiver answered at the last one. */
    private static byte[] feedOneByOne(byte[] bytes, Receiver receiver) throws PeerHandshake.Failure {
        byte[] answer = null;
        for (int i = 0; i < bytes.length; i++) {
            answer = receiver.receive(Unpooled.wrappedBuffer(new byte[] {bytes[i]}));
            if (i < bytes.length - 1) {
                assertThat(answer).as("an answer before the message is whole, at byte %d", i).isNull();
            }
        }
        return answer;
    }
}

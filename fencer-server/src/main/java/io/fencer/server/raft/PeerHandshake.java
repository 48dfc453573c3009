package io.fencer.server.raft;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;

/**
 * The handshake that opens every connection on the Raft port of a group with a {@link GroupSecret}: both peers prove
 * that they hold the secret before either sends a Raft message. This class is the one place its messages are written
 * and read.
 *
 * <p>Version 1, all numbers unsigned and big-endian, sizes in bytes, {@code |} concatenation:
 * <ol>
 * <li><b>HELLO</b>, from the listening peer as soon as the connection (and its TLS, if any) is up, 37 bytes:
 *     {@code magic "FNRH" (4) | version (1) | Ns (32)}, where {@code Ns} is a fresh random nonce and {@code version}
 *     the highest version the listener speaks. Its layout is the same in every version.
 * <li><b>PROOF</b>, from the dialling peer, 70 + n bytes, at most {@value #PROOF_BYTES_MAX}:
 *     {@code magic (4) | version (1) | Nc (32) | n (1) | dialler's peer id (n, UTF-8, 1 to 255) | MACc (32)} with
 *     {@code version} the one the dialler chose (the highest both speak: here 1), {@code Nc} its fresh nonce, and
 *     {@code MACc = HMAC-SHA256(secret, "fencer raft client v1" | Ns | Nc | dialler's id)}.
 * <li><b>ANSWER</b>, from the listening peer, 1 or 34 + m bytes: one status byte. {@code 0} (accepted) is followed by
 *     {@code m (1) | listener's peer id (m, UTF-8) | MACs (32)} with
 *     {@code MACs = HMAC-SHA256(secret, "fencer raft server v1" | Nc | Ns | listener's id)}; {@code 1} (refused: the
 *     PROOF did not prove the secret) ends the message, and the listener closes the connection; so does {@code 2}
 *     (refused: the PROOF was made for another peer, below), sent only to a dialler whose nonce names the peer.
 * </ol>
 * Then frames of {@link PeerFrames} go both ways. The labels keep a listener's MAC from being replayed as a dialler's
 * and name the version; each side's nonce makes every MAC new, so one recorded from another connection proves
 * nothing. Each side checks the other's MAC in constant time, and the dialler checks that the listener's id is the
 * peer it meant to reach.
 *
 * <p>The dialler's nonce names the listener it meant: {@code Nc = BOUND (8) | r (12) | tag (12)}, {@code r} random,
 * {@code tag} the first 12 bytes of {@code HMAC-SHA256(secret, "fencer raft dialled v1" | Ns | BOUND | r | id of the
 * peer dialled)}, and a listener refuses a PROOF whose nonce starts with {@code BOUND} and whose tag is not for its
 * own id. Why: {@code MACc} names no listener, so a stranger holding the address of a peer that is down (a free port
 * any local user can bind) could pass a real peer's link to it the HELLO of another peer's port and hand that port
 * the PROOF it got back, and be admitted there as the dialler without the secret. The nonce carries the binding
 * because the version-1 wire stays as it is: a peer of the previous release takes {@code Nc} as opaque bytes (and
 * {@code MACc} covers it, so nobody can strip the mark), and its own random nonces lack the mark (but once in
 * 2<sup>64</sup>), so they are admitted as before. Until every peer runs a release that marks its nonces, a previous
 * release's PROOF can still be relayed so.
 *
 * <p>Bounds: the listener reads nothing beyond a PROOF before it answers (the dialler waits for the ANSWER before it
 * sends a frame), the dialler nothing beyond a HELLO before its PROOF nor beyond an ANSWER; a byte too many, a wrong
 * magic, an unknown version or a bad MAC ends the handshake, which must complete within {@link #TIMEOUT} of the
 * connection. The handshake authenticates the connection, not each frame: it neither encrypts nor signs what follows,
 * which TLS on the Raft port does.
 *
 * <p>Not thread-safe: one {@link Listening} or {@link Dialling} per connection, used on its event loop.
 */
final class PeerHandshake {
    static final byte[] MAGIC = {'F', 'N', 'R', 'H'};
    /** The version this release speaks, and the highest it announces. */
    static final byte VERSION = 1;
    static final int NONCE_BYTES = 32;
    static final int MAC_BYTES = 32;
    /** The longest peer id a handshake carries, in UTF-8 bytes. */
    static final int ID_BYTES_MAX = 255;
    static final int HELLO_BYTES = MAGIC.length + 1 + NONCE_BYTES;
    /** The bytes of a PROOF before the peer id: magic, version, nonce and the id's length. */
    private static final int PROOF_HEAD_BYTES = MAGIC.length + 1 + NONCE_BYTES + 1;
    static final int PROOF_BYTES_MAX = PROOF_HEAD_BYTES + ID_BYTES_MAX + MAC_BYTES;
    static final int ANSWER_BYTES_MAX = 1 + 1 + ID_BYTES_MAX + MAC_BYTES;
    static final byte ACCEPTED = 0;
    static final byte REFUSED = 1;
    /**
     * Refused: the PROOF was made for another peer. Only in answer to a nonce that names the peer dialled, which only
     * a dialler of this release or later makes, so a previous release never receives it.
     */
    static final byte REFUSED_OTHER_PEER = 2;
    /** How long a connection may take from its start to the end of the handshake, TLS included. */
    static final Duration TIMEOUT = Duration.ofSeconds(5);
    private static final byte[] CLIENT_LABEL = "fencer raft client v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SERVER_LABEL = "fencer raft server v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DIALLED_LABEL = "fencer raft dialled v1".getBytes(StandardCharsets.US_ASCII);
    /** The start of a dialler's nonce that names the peer dialled; a previous release's nonce is random. */
    static final byte[] BOUND = {'F', 'N', 'R', 'H', 'b', 'o', 'u', 'n'};
    private static final int BOUND_RANDOM_BYTES = 12;
    private static final int BOUND_TAG_BYTES = NONCE_BYTES - BOUND.length - BOUND_RANDOM_BYTES;
    private static final String MAC_ALGORITHM = "HmacSHA256";

    /** Why a handshake failed; {@link Failure#answer} is what to send before closing, if anything. */
    enum Reason {
        /** What came is not a Fencer peer's handshake (wrong magic, a malformed field). */
        NOT_A_HANDSHAKE,
        /** The other side speaks no version of the handshake that this one does. */
        VERSION,
        /** More bytes came than the handshake has at this point. */
        TOO_LONG,
        /** The dialler's MAC does not prove the secret. */
        BAD_PROOF,
        /** The dialler proved the secret, but made its PROOF for another peer than this listener. */
        OTHER_LISTENER,
        /** The listener refused this peer's PROOF: it holds another secret. */
        REFUSED_BY_PEER,
        /** The listener's MAC does not prove the secret. */
        BAD_ANSWER,
        /** The listener proved the secret but is another peer than the one dialled. */
        WRONG_PEER
    }

    /** A failed handshake: the reason, a message for the log (never the secret) and the bytes to send, if any. */
    static final class Failure extends IOException {
        private static final long serialVersionUID = 1L;
        final Reason reason;
        final transient byte[] answer;

        Failure(Reason reason, String message, byte[] answer) {
            super(message);
            this.reason = reason;
            this.answer = answer;
        }
    }

    private final SecretKeySpec key;
    private final byte[] selfId;
    private final SecureRandom random;

    PeerHandshake(GroupSecret secret, String selfId, SecureRandom random) {
        this.key = new SecretKeySpec(secret.bytes(), MAC_ALGORITHM);
        this.selfId = idBytes(selfId);
        this.random = Objects.requireNonNull(random, "random");
    }

    /**
     * Returns the UTF-8 bytes of a peer id a handshake can carry.
     *
     * @throws IllegalArgumentException when it is empty or longer than {@value #ID_BYTES_MAX} bytes
     */
    static byte[] idBytes(String id) {
        byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
        if (bytes.length == 0 || bytes.length > ID_BYTES_MAX) {
            throw new IllegalArgumentException("peer id '" + id + "' has " + bytes.length + " bytes of UTF-8, "
                    + "outside the [1, " + ID_BYTES_MAX + "] the Raft port's handshake carries");
        }
        return bytes;
    }

    /** Starts the listening side of one connection. */
    Listening listening() {
        return new Listening();
    }

    /** Starts the dialling side of one connection to peer {@code peerId}. */
    Dialling dialling(String peerId) {
        return new Dialling(idBytes(peerId));
    }

    /** The listening peer's side: send {@link #hello()}, {@link #receive} the PROOF, send the ANSWER. */
    final class Listening {
        private final byte[] serverNonce = nonce();
        private final Received proof = new Received(PROOF_BYTES_MAX);
        private String peerId;

        /** Returns the HELLO to send first. */
        byte[] hello() {
            byte[] hello = new byte[HELLO_BYTES];
            System.arraycopy(MAGIC, 0, hello, 0, MAGIC.length);
            hello[MAGIC.length] = VERSION;
            System.arraycopy(serverNonce, 0, hello, MAGIC.length + 1, NONCE_BYTES);
            return hello;
        }

        /**
         * Takes the bytes read; returns the ANSWER to send once a whole PROOF came and proved the secret, or null
         * while more bytes are needed.
         *
         * @throws Failure when the PROOF is malformed, too long or does not prove the secret
         */
        byte[] receive(ByteBuf in) throws Failure {
            proof.add(in, "a PROOF");
            if (proof.size() < PROOF_HEAD_BYTES) {
                checkMagic(proof);
                return null;
            }
            checkMagic(proof);
            if (proof.at(MAGIC.length) != VERSION) {
                throw new Failure(Reason.VERSION, "its handshake is of version " + (proof.at(MAGIC.length) & 0xff)
                        + ", this peer speaks " + VERSION, null);
            }
            int idLength = proof.at(PROOF_HEAD_BYTES - 1) & 0xff;
            if (idLength == 0) {
                throw new Failure(Reason.NOT_A_HANDSHAKE, "its handshake names no peer id", null);
            }
            int length = PROOF_HEAD_BYTES + idLength + MAC_BYTES;
            if (proof.size() < length) {
                return null;
            }
            if (proof.size() > length) {
                throw new Failure(Reason.TOO_LONG, "it sent " + (proof.size() - length) + " bytes beyond its "
                        + "handshake before it was answered", null);
            }
            byte[] clientNonce = proof.range(MAGIC.length + 1, NONCE_BYTES);
            byte[] clientId = proof.range(PROOF_HEAD_BYTES, idLength);
            byte[] expected = mac(CLIENT_LABEL, serverNonce, clientNonce, clientId);
            if (!MessageDigest.isEqual(expected, proof.range(PROOF_HEAD_BYTES + idLength, MAC_BYTES))) {
                throw new Failure(Reason.BAD_PROOF, "its handshake does not prove the group secret",
                        new byte[] {REFUSED});
            }
            if (!meantForThisPeer(clientNonce)) {
                throw new Failure(Reason.OTHER_LISTENER, "its handshake was made for another peer than '"
                        + new String(selfId, StandardCharsets.UTF_8) + "' (relayed from a link to another peer's "
                        + "address, or its --peers gives this address to another peer)",
                        new byte[] {REFUSED_OTHER_PEER});
            }
            peerId = new String(clientId, StandardCharsets.UTF_8);
            return answer(clientNonce);
        }

        /** Returns false when the dialler's nonce names the peer it dialled, and that peer is not this one. */
        private boolean meantForThisPeer(byte[] clientNonce) {
            if (!Arrays.equals(clientNonce, 0, BOUND.length, BOUND, 0, BOUND.length)) {
                return true; // a previous release's random nonce: it names no peer
            }
            byte[] expected = boundNonce(serverNonce, Arrays.copyOfRange(clientNonce, BOUND.length,
                    BOUND.length + BOUND_RANDOM_BYTES), selfId);
            return MessageDigest.isEqual(expected, clientNonce);
        }

        private byte[] answer(byte[] clientNonce) {
            byte[] mac = mac(SERVER_LABEL, clientNonce, serverNonce, selfId);
            byte[] answer = new byte[2 + selfId.length + MAC_BYTES];
            answer[0] = ACCEPTED;
            answer[1] = (byte) selfId.length;
            System.arraycopy(selfId, 0, answer, 2, selfId.length);
            System.arraycopy(mac, 0, answer, 2 + selfId.length, MAC_BYTES);
            return answer;
        }

        /** Returns the id the dialler proved, once it did; null before. */
        String peerId() {
            return peerId;
        }
    }

    /** The dialling peer's side: {@link #receive} the HELLO, send the PROOF it returns, {@link #receive} the ANSWER. */
    final class Dialling {
        private final byte[] expectedId;
        private byte[] clientNonce;
        private final Received hello = new Received(HELLO_BYTES);
        private final Received answer = new Received(ANSWER_BYTES_MAX);
        private byte[] serverNonce;
        private boolean accepted;

        private Dialling(byte[] expectedId) {
            this.expectedId = expectedId;
        }

        /**
         * Takes the bytes read; returns the PROOF to send once the whole HELLO came, null otherwise; becomes
         * {@link #accepted()} once the ANSWER came and proved the secret.
         *
         * @throws Failure when the HELLO or the ANSWER is malformed or too long, or the listener refused this peer's
         *     PROOF, answered for another secret, or is another peer
         */
        byte[] receive(ByteBuf in) throws Failure {
            if (accepted) {
                throw new Failure(Reason.TOO_LONG, "it sent more than its ANSWER", null);
            }
            if (serverNonce != null) {
                receiveAnswer(in);
                return null;
            }
            hello.add(in, "a HELLO");
            checkMagic(hello);
            if (hello.size() < HELLO_BYTES) {
                return null;
            }
            if ((hello.at(MAGIC.length) & 0xff) < VERSION) {
                throw new Failure(Reason.VERSION, "it speaks version " + hello.at(MAGIC.length)
                        + " of the handshake, this peer " + VERSION, null);
            }
            serverNonce = hello.range(MAGIC.length + 1, NONCE_BYTES);
            byte[] random = new byte[BOUND_RANDOM_BYTES];
            PeerHandshake.this.random.nextBytes(random);
            clientNonce = boundNonce(serverNonce, random, expectedId);
            return proof();
        }

        private byte[] proof() {
            byte[] mac = mac(CLIENT_LABEL, serverNonce, clientNonce, selfId);
            byte[] proof = new byte[PROOF_HEAD_BYTES + selfId.length + MAC_BYTES];
            System.arraycopy(MAGIC, 0, proof, 0, MAGIC.length);
            proof[MAGIC.length] = VERSION;
            System.arraycopy(clientNonce, 0, proof, MAGIC.length + 1, NONCE_BYTES);
            proof[PROOF_HEAD_BYTES - 1] = (byte) selfId.length;
            System.arraycopy(selfId, 0, proof, PROOF_HEAD_BYTES, selfId.length);
            System.arraycopy(mac, 0, proof, PROOF_HEAD_BYTES + selfId.length, MAC_BYTES);
            return proof;
        }

        private void receiveAnswer(ByteBuf in) throws Failure {
            answer.add(in, "an ANSWER");
            if (answer.size() == 0) {
                return;
            }
            if (answer.at(0) == REFUSED) {
                throw new Failure(Reason.REFUSED_BY_PEER, "it refused this peer's proof of the group secret", null);
            }
            if (answer.at(0) == REFUSED_OTHER_PEER) {
                throw new Failure(Reason.OTHER_LISTENER, "it is another peer than '"
                        + new String(expectedId, StandardCharsets.UTF_8) + "' (check the address --peers gives it)",
                        null);
            }
            if (answer.at(0) != ACCEPTED) {
                throw new Failure(Reason.NOT_A_HANDSHAKE, "its answer has the unknown status " + answer.at(0), null);
            }
            if (answer.size() < 2) {
                return;
            }
            int idLength = answer.at(1) & 0xff;
            int length = 2 + idLength + MAC_BYTES;
            if (answer.size() < length) {
                return;
            }
            if (answer.size() > length) {
                throw new Failure(Reason.TOO_LONG, "it sent more than its ANSWER", null);
            }
            byte[] serverId = answer.range(2, idLength);
            byte[] expected = mac(SERVER_LABEL, clientNonce, serverNonce, serverId);
            if (!MessageDigest.isEqual(expected, answer.range(2 + idLength, MAC_BYTES))) {
                throw new Failure(Reason.BAD_ANSWER, "its answer does not prove the group secret", null);
            }
            if (!Arrays.equals(serverId, expectedId)) {
                throw new Failure(Reason.WRONG_PEER, "it is peer '" + new String(serverId, StandardCharsets.UTF_8)
                        + "', not '" + new String(expectedId, StandardCharsets.UTF_8) + "'", null);
            }
            accepted = true;
        }

        /** Returns true once the listener proved the secret and its id. */
        boolean accepted() {
            return accepted;
        }
    }

    private static void checkMagic(Received received) throws Failure {
        for (int i = 0; i < Math.min(received.size(), MAGIC.length); i++) {
            if (received.at(i) != MAGIC[i]) {
                throw new Failure(Reason.NOT_A_HANDSHAKE, "what it sent is not a Fencer peer's handshake", null);
            }
        }
    }

    private byte[] nonce() {
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        return nonce;
    }

    /** Returns a dialler's nonce naming the peer {@code dialledId}: {@code BOUND | random | tag}. */
    private byte[] boundNonce(byte[] serverNonce, byte[] random, byte[] dialledId) {
        byte[] nonce = new byte[NONCE_BYTES];
        System.arraycopy(BOUND, 0, nonce, 0, BOUND.length);
        System.arraycopy(random, 0, nonce, BOUND.length, BOUND_RANDOM_BYTES);
        byte[] tag = mac(DIALLED_LABEL, serverNonce, Arrays.copyOf(nonce, BOUND.length + BOUND_RANDOM_BYTES),
                dialledId);
        System.arraycopy(tag, 0, nonce, BOUND.length + BOUND_RANDOM_BYTES, BOUND_TAG_BYTES);
        return nonce;
    }

    private byte[] mac(byte[] label, byte[] first, byte[] second, byte[] id) {
        try {
            Mac mac = Mac.getInstance(MAC_ALGORITHM);
            mac.init(key);
            mac.update(label);
            mac.update(first);
            mac.update(second);
            mac.update(id);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM cannot compute " + MAC_ALGORITHM, e);
        }
    }

    /** The bytes of one message received so far, at most {@code bytesMax}. */
    private static final class Received {
        private final byte[] bytes;
        private int size;

        Received(int bytesMax) {
            this.bytes = new byte[bytesMax];
        }

        /**
         * Moves what {@code in} holds into the message.
         *
         * @throws Failure when {@code in} holds more than the message's bound allows
         */
        void add(ByteBuf in, String message) throws Failure {
            int take = Math.min(in.readableBytes(), bytes.length - size);
            in.readBytes(bytes, size, take);
            size += take;
            if (in.isReadable()) {
                throw new Failure(Reason.TOO_LONG, "it sent more than " + message + " of " + bytes.length
                        + " bytes at most", null);
            }
        }

        int size() {
            return size;
        }

        byte at(int index) {
            return bytes[index];
        }

        byte[] range(int from, int length) {
            return Arrays.copyOfRange(bytes, from, from + length);
        }
    }
}

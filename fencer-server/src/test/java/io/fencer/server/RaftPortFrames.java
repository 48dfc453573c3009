package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Raw frames of the peer transport for tests that talk to a Raft port as a stranger would: {@code length:int32
 * kind:int8 callId:int64 body} (see {@code io.fencer.server.raft.PeerFrames}); kind 127 is a refusal. And the
 * handshake that admits a connection to a group with a secret, written here from its specification in
 * {@code io.fencer.server.raft.PeerHandshake}, not with that class, so that the two check each other.
 */
final class RaftPortFrames {
    private static final byte[] MAGIC = {'F', 'N', 'R', 'H'};
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A call kind no Fencer serves. */
    static final int UNKNOWN_KIND = 99;
    static final byte REFUSED = 127;

    private RaftPortFrames() {
    }

    /**
     * Runs the dialling side of the handshake as peer {@code selfId} holding {@code secret}, and checks that the
     * listener proved the same secret as peer {@code peerId}.
     *
     * @throws IOException when the listener refused the proof (its status byte, or the connection ends)
     */
    static void handshake(Socket socket, byte[] secret, String selfId, String peerId) throws IOException {
        DataInputStream in = new DataInputStream(socket.getInputStream());
        byte[] hello = new byte[37];
        in.readFully(hello);
        assertThat(Arrays.copyOfRange(hello, 0, 4)).as("the HELLO's magic").isEqualTo(MAGIC);
        assertThat(hello[4]).as("the HELLO's version").isEqualTo((byte) 1);
        byte[] serverNonce = Arrays.copyOfRange(hello, 5, 37);
        byte[] clientNonce = new byte[32];
        RANDOM.nextBytes(clientNonce);
        byte[] id = selfId.getBytes(StandardCharsets.UTF_8);
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.write(MAGIC);
        out.writeByte(1);
        out.write(clientNonce);
        out.writeByte(id.length);
        out.write(id);
        out.write(hmac(secret, "fencer raft client v1", serverNonce, clientNonce, id));
        out.flush();
        int status = in.read();
        if (status != 0) {
            throw new IOException("the listener refused the handshake: status " + status);
        }
        byte[] serverId = new byte[in.readUnsignedByte()];
        in.readFully(serverId);
        byte[] mac = new byte[32];
        in.readFully(mac);
        assertThat(new String(serverId, StandardCharsets.UTF_8)).as("the listener's id").isEqualTo(peerId);
        assertThat(mac).as("the listener's MAC").isEqualTo(hmac(secret, "fencer raft server v1", clientNonce,
                serverNonce, serverId));
    }

    private static byte[] hmac(byte[] secret, String label, byte[] first, byte[] second, byte[] id) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(label.getBytes(StandardCharsets.US_ASCII));
            mac.update(first);
            mac.update(second);
            return mac.doFinal(id);
        } catch (GeneralSecurityException e) {
            throw new AssertionError(e);
        }
    }

    /** Writes one frame of {@code kind} and call id {@code callId} with {@code body}, in one write. */
    static void write(Socket socket, int kind, long callId, byte[] body) throws IOException {
        ByteArrayOutputStream frame = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(frame);
        out.writeInt(Byte.BYTES + Long.BYTES + body.length);
        out.writeByte(kind);
        out.writeLong(callId);
        out.write(body);
        socket.getOutputStream().write(frame.toByteArray());
        socket.getOutputStream().flush();
    }

    /** Reads a refusal of call {@code callId} and returns its reason. */
    static String readRefusal(Socket socket, long callId) throws IOException {
        DataInputStream in = new DataInputStream(socket.getInputStream());
        int length = in.readInt();
        assertThat(in.readByte()).as("the answer's kind: refused").isEqualTo(REFUSED);
        assertThat(in.readLong()).as("the answer's call id").isEqualTo(callId);
        byte[] reason = new byte[length - Byte.BYTES - Long.BYTES];
        in.readFully(reason);
        return new String(reason, StandardCharsets.UTF_8);
    }

    /** Calls kind {@value #UNKNOWN_KIND} and returns the refusal's reason: an admitted caller gets one. */
    static String callUnknownKind(Socket socket, long callId) throws IOException {
        write(socket, UNKNOWN_KIND, callId, new byte[0]);
        return readRefusal(socket, callId);
    }

    /**
     * Returns true when the server closed the connection without sending a byte (end of stream or a reset), false
     * when a byte came; waits at most the socket's read timeout.
     */
    static boolean closedByServer(Socket socket) throws IOException {
        InputStream in = socket.getInputStream();
        try {
            return in.read() == -1;
        } catch (SocketException reset) {
            return true;
        }
    }

    /**
     * Returns true when the server closed the connection, having sent at most its handshake's HELLO (37 bytes) first,
     * waiting at most {@code wait} (false: still open, or more came).
     */
    static boolean closedAfterHello(Socket socket, Duration wait) throws IOException {
        int timeoutMillis = socket.getSoTimeout();
        socket.setSoTimeout(Math.toIntExact(Math.max(1, wait.toMillis())));
        try {
            InputStream in = socket.getInputStream();
            for (int bytes = 0; bytes <= 37; bytes++) {
                if (in.read() == -1) {
                    return true;
                }
            }
            return false;
        } catch (SocketTimeoutException open) {
            return false;
        } catch (SocketException reset) {
            return true;
        } finally {
            socket.setSoTimeout(timeoutMillis);
        }
    }

    /** As {@link #closedAfterHello(Socket, Duration)}, waiting at most the socket's read timeout. */
    static boolean closedAfterHello(Socket socket) throws IOException {
        return closedAfterHello(socket, Duration.ofMillis(socket.getSoTimeout()));
    }

    /** Returns true when the server has closed the connection, waiting at most {@code wait} (false: still open). */
    static boolean closedByServer(Socket socket, Duration wait) throws IOException {
        int timeoutMillis = socket.getSoTimeout();
        socket.setSoTimeout(Math.toIntExact(Math.max(1, wait.toMillis())));
        try {
            return closedByServer(socket);
        } catch (SocketTimeoutException open) {
            return false;
        } finally {
            socket.setSoTimeout(timeoutMillis);
        }
    }
}

package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Raw frames of the peer transport for tests that talk to a Raft port as a stranger would: {@code length:int32
 * kind:int8 callId:int64 body} (see {@code io.fencer.server.raft.PeerFrames}); kind 127 is a refusal.
 */
final class RaftPortFrames {
    /** A call kind no Fencer serves. */
    static final int UNKNOWN_KIND = 99;
    static final byte REFUSED = 127;

    private RaftPortFrames() {
    }

    /** Writes one frame of {@code kind} and call id {@code callId} with {@code body}. */
    static void write(Socket socket, int kind, long callId, byte[] body) throws IOException {
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.writeInt(Byte.BYTES + Long.BYTES + body.length);
        out.writeByte(kind);
        out.writeLong(callId);
        out.write(body);
        out.flush();
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

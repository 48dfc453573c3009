package io.fencer.server.raft;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;

/**
 * What the raft package's tests need to speak on a Raft port from a plain socket: the handshake of a peer (with the
 * real {@link PeerHandshake}), a stranger's view of the connection, and the log lines the port writes meanwhile.
 */
final class RaftPortPeers {
    static final SecureRandom RANDOM = new SecureRandom();

    private RaftPortPeers() {
    }

    /** Opens a socket to {@code port} on 127.0.0.1 from {@code local} (any port), with a 20 s read timeout. */
    static Socket connect(InetAddress local, int port) throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), port, local, 0);
        socket.setSoTimeout(20_000);
        return socket;
    }

    /**
     * Passes the dialling side of the handshake on {@code socket} as {@code selfId} holding {@code secret}, towards
     * peer {@code peerId}.
     *
     * @throws IOException when the listener refused or closed the connection (or the handshake failed here)
     */
    static void handshake(Socket socket, GroupSecret secret, String selfId, String peerId) throws IOException {
        PeerHandshake.Dialling dialling = new PeerHandshake(secret, selfId, RANDOM).dialling(peerId);
        DataInputStream in = new DataInputStream(socket.getInputStream());
        byte[] hello = new byte[PeerHandshake.HELLO_BYTES];
        in.readFully(hello);
        byte[] proof = dialling.receive(Unpooled.wrappedBuffer(hello));
        socket.getOutputStream().write(proof);
        socket.getOutputStream().flush();
        while (!dialling.accepted()) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("the listener closed the connection during the handshake");
            }
            dialling.receive(Unpooled.wrappedBuffer(new byte[] {(byte) b}));
        }
    }

    /**
     * Returns true when the listener closed the connection within {@code wait}, having sent at most a HELLO; false
     * when it is still open (or sent more).
     */
    static boolean closedWithin(Socket socket, Duration wait) throws IOException {
        int timeoutMillis = socket.getSoTimeout();
        socket.setSoTimeout(Math.toIntExact(Math.max(1, wait.toMillis())));
        try {
            InputStream in = socket.getInputStream();
            for (int bytes = 0; bytes <= PeerHandshake.HELLO_BYTES; bytes++) {
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

    /**
     * Captures what is written to standard error (the servers' log in tests) from now until closed, still writing it
     * there too.
     */
    static final class StderrCapture implements AutoCloseable {
        private final PrintStream stderr = System.err;
        private final ByteArrayOutputStream logged = new ByteArrayOutputStream();

        StderrCapture() {
            System.setErr(new PrintStream(new OutputStream() {
                @Override
                public void write(int b) {
                    synchronized (logged) {
                        stderr.write(b);
                        logged.write(b);
                    }
                }

                @Override
                public void write(byte[] bytes, int offset, int length) {
                    synchronized (logged) {
                        stderr.write(bytes, offset, length);
                        logged.write(bytes, offset, length);
                    }
                }
            }, true, StandardCharsets.UTF_8));
        }

        /** Returns what was written so far. */
        String text() {
            synchronized (logged) {
                return logged.toString(StandardCharsets.UTF_8);
            }
        }

        @Override
        public void close() {
            System.setErr(stderr);
        }
    }
}

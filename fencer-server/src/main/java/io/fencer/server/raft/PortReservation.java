package io.fencer.server.raft;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

/**
 * A port chosen by the kernel and held for the listener that binds it later, so that "any free port" is not taken in
 * between. A port found by binding 0 and closing at once is free for the next bind to port 0 on the machine, and the
 * Raft port is bound only once Ratis starts, after the seed, the storage and the group secret are read, which takes
 * seconds on a large log. Held here it is bound and never listening: the kernel refuses any other bind to it, explicit
 * or to port 0, never picks it for an outgoing connection, and answers a connection to it with a reset, as to a closed
 * port. {@link #close()} just before the listener binds leaves two system calls between, not seconds.
 */
final class PortReservation implements Closeable {
    private final Socket socket;

    private PortReservation(Socket socket) {
        this.socket = socket;
    }

    /**
     * Holds a port the kernel chooses on {@code host}.
     *
     * @throws IOException when no port can be bound there (the message names the host)
     */
    static PortReservation any(String host) throws IOException {
        Socket socket = new Socket();
        try {
            socket.bind(new InetSocketAddress(host, 0));
        } catch (IOException e) {
            socket.close();
            throw new IOException("cannot choose a free Raft port on " + host + ": " + e.getMessage(), e);
        }
        return new PortReservation(socket);
    }

    int port() {
        return socket.getLocalPort();
    }

    /** Lets the port go, for its listener to bind; a second call does nothing. */
    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do: a socket that never connected has nothing to flush, and is released either way
        }
    }
}

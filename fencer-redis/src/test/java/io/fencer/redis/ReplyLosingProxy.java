package io.fencer.redis;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 in front of one redis-server that, once armed, lets the client's next command reach Redis
 * and then cuts the connection as soon as Redis starts to answer it, forwarding none of the reply: Redis has run the
 * command (it answers only once it has), and only the client never hears so, as when a connection resets between a
 * command's execution and its reply.
 *
 * <p>It reads no RESP, because it needs none: armed once the client has had every earlier reply (a synchronous
 * Lettuce call returns only with its reply), the next bytes the client sends are its next command and Redis's next
 * bytes its reply. It cuts once, then keeps accepting connections and forwarding everything, so that a client that
 * reconnects (Lettuce's auto-reconnect) talks to Redis through it again.
 */
final class ReplyLosingProxy implements AutoCloseable {
    /** Short, so that a proxy that cannot reach Redis fails the test rather than holding it. */
    private static final int CONNECT_TIMEOUT_MILLIS = 2_000;
    private static final long JOIN_MILLIS = 2_000;
    private static final int BUFFER_BYTES = 8_192;

    private final ServerSocket listener;
    private final int serverPort;
    private final Thread acceptor;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private boolean armed; // guarded by gate
    private int repliesLost; // guarded by gate
    private int connections; // guarded by gate
    private volatile boolean closed;

    private ReplyLosingProxy(ServerSocket listener, int serverPort) {
        this.listener = listener;
        this.serverPort = serverPort;
        this.acceptor = new Thread(this::accept, "reply-losing-proxy-accept-" + listener.getLocalPort());
        acceptor.setDaemon(true);
    }

    /**
     * Listens on an ephemeral port of 127.0.0.1 (bound at once, so no other process can take it meanwhile) and
     * forwards each connection to {@code serverPort} there.
     */
    static ReplyLosingProxy start(int serverPort) {
        try {
            ServerSocket listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            ReplyLosingProxy proxy = new ReplyLosingProxy(listener, serverPort);
            proxy.acceptor.start();
            return proxy;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on 127.0.0.1", e);
        }
    }

    int port() {
        return listener.getLocalPort();
    }

    /** Cuts the connection on which the client sends next when Redis starts to answer it. */
    void arm() {
        synchronized (gate) {
            armed = true;
        }
    }

    /** Returns how many replies the proxy dropped by cutting their connection. */
    int repliesLost() {
        synchronized (gate) {
            return repliesLost;
        }
    }

    /** Returns how many client connections the proxy has accepted and forwarded to Redis. */
    int connections() {
        synchronized (gate) {
            return connections;
        }
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return; // closed
            }
            Socket server = new Socket();
            try {
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), serverPort),
                        CONNECT_TIMEOUT_MILLIS);
            } catch (IOException e) {
                closeQuietly(client);
                closeQuietly(server);
                continue;
            }
            Link link = new Link(client, server);
            links.add(link);
            if (closed) { // close() may have run between accept and add, and missed this link
                link.close();
                return;
            }
            synchronized (gate) {
                connections++;
            }
            start(link::pumpToServer, "reply-losing-proxy-" + port() + "-to-server");
            start(link::pumpToClient, "reply-losing-proxy-" + port() + "-to-client");
        }
    }

    private void start(Runnable pump, String name) {
        Thread thread = new Thread(pump, name);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
    }

    /** One client connection and its connection to Redis. */
    private final class Link {
        private final Socket client;
        private final Socket server;
        private boolean sentWhileArmed; // guarded by gate

        Link(Socket client, Socket server) {
            this.client = client;
            this.server = server;
        }

        void pumpToServer() {
            try (InputStream in = client.getInputStream()) {
                OutputStream out = server.getOutputStream();
                byte[] buffer = new byte[BUFFER_BYTES];
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    synchronized (gate) {
                        // Marked before it is forwarded, so Redis cannot answer before the cut is due.
                        if (armed) {
                            sentWhileArmed = true;
                        }
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the connection ended, from either side
            } finally {
                close();
            }
        }

        void pumpToClient() {
            try (InputStream in = server.getInputStream()) {
                OutputStream out = client.getOutputStream();
                byte[] buffer = new byte[BUFFER_BYTES];
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    if (replyToLose()) {
                        return; // the finally cuts both sides: the client reads the end of its stream
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the connection ended, from either side
            } finally {
                close();
            }
        }

        /** Whether Redis's bytes just read answer what the client sent while armed; disarms when they are lost. */
        private boolean replyToLose() {
            synchronized (gate) {
                if (!sentWhileArmed) {
                    return false;
                }
                sentWhileArmed = false;
                armed = false;
                repliesLost++;
                return true;
            }
        }

        void close() {
            closeQuietly(client);
            closeQuietly(server);
        }
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Stops listening, closes every connection and waits for the threads to end. */
    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        for (Link link : links) {
            link.close();
        }
        try {
            acceptor.join(JOIN_MILLIS);
            for (Thread thread : threads) {
                thread.join(JOIN_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package io.fencer.testing;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 in front of one server (a database, Redis) that, once armed, lets the client's next bytes
 * reach the server and then cuts the connection as soon as the server starts to answer them, forwarding none of the
 * answer: the server receives the request and carries it out (a COMMIT commits, a script runs), and only the client
 * never hears so, as when a connection drops, or the server is killed, between the work and its answer. The lost
 * reply of a fault test, with the real server behind it.
 *
 * <p>It reads no protocol, because it needs none: armed once the client has had every earlier answer (a blocking call
 * returns only with its answer), the next bytes the client sends are its next request and the server's next bytes
 * its answer. What the client sent while armed is kept, so that a test can check which request lost its answer
 * (PostgreSQL's simple Query message carries the statement's text, {@code COMMIT} for a commit; Redis's commands are
 * text). Cuts once, then forwards everything until armed again; a client that reconnects is forwarded as before.
 *
 * <p>Armed to deliver some answers first ({@link #arm(int)}), it lets the server's answers to that many of the client's
 * next messages through and cuts at the answer to the message after them: the connection drops after those answers
 * reached the client, as after a COMMIT's answer when the driver sends its next statement (a driver's
 * {@code setAutoCommit(true)} after the commit).
 */
public final class AnswerLosingProxy implements AutoCloseable {
    private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
    private static final long JOIN_MILLIS = 5_000;
    private static final int BUFFER_BYTES = 8_192;

    private final ServerSocket listener;
    private final int serverPort;
    private final Thread acceptor;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private final ByteArrayOutputStream sentWhileArmed = new ByteArrayOutputStream(); // guarded by gate
    private boolean armed; // guarded by gate
    private int answersToDeliver; // guarded by gate
    private Runnable atCut; // guarded by gate
    private Throwable atCutFailure; // guarded by gate
    private int answersLost; // guarded by gate
    private int connections; // guarded by gate
    private volatile boolean closed;

    private AnswerLosingProxy(ServerSocket listener, int serverPort) {
        this.listener = listener;
        this.serverPort = serverPort;
        this.acceptor = new Thread(this::accept, "answer-losing-proxy-accept-" + listener.getLocalPort());
        acceptor.setDaemon(true);
    }

    /**
     * Listens on an ephemeral port of 127.0.0.1 (bound at once, so no other process can take it meanwhile) and
     * forwards each connection to {@code serverPort} there.
     */
    public static AnswerLosingProxy start(int serverPort) {
        try {
            ServerSocket listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            AnswerLosingProxy proxy = new AnswerLosingProxy(listener, serverPort);
            proxy.acceptor.start();
            return proxy;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on 127.0.0.1", e);
        }
    }

    /** Returns the port the proxy listens on, of 127.0.0.1. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Cuts the connection on which the client sends next when the server starts to answer it. */
    public void arm() {
        arm(0);
    }

    /**
     * Lets the server's answers to the client's next {@code answersToDeliver} messages through, then cuts the
     * connection when the server starts to answer the message after them.
     */
    public void arm(int answersToDeliver) {
        arm(answersToDeliver, null);
    }

    /**
     * As {@link #arm()}, and runs {@code atCut} when it cuts: on the proxy's thread, after the server's answer has
     * arrived and before the connection ends, so that while it runs the client has no answer and cannot send again
     * (a test's other client writes there, between a request and a driver's re-send of it). A failure of
     * {@code atCut} is thrown by {@link #close()}.
     */
    public void armWith(Runnable atCut) {
        arm(0, Objects.requireNonNull(atCut, "atCut"));
    }

    private void arm(int answersToDeliver, Runnable atCut) {
        synchronized (gate) {
            armed = true;
            this.answersToDeliver = answersToDeliver;
            this.atCut = atCut;
        }
    }

    /** Returns what the client sent while the proxy was armed, as ISO-8859-1 text (a statement's text shows). */
    public String sentWhileArmed() {
        synchronized (gate) {
            return sentWhileArmed.toString(StandardCharsets.ISO_8859_1);
        }
    }

    /** Returns how many answers the proxy dropped by cutting their connection. */
    public int answersLost() {
        synchronized (gate) {
            return answersLost;
        }
    }

    /** Returns how many client connections the proxy has accepted and forwarded (a reconnect counts again). */
    public int connections() {
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
            synchronized (gate) {
                connections++;
            }
            if (closed) { // close() may have run between accept and add, and missed this link
                link.close();
                return;
            }
            start(link::pumpToServer, "answer-losing-proxy-" + port() + "-to-server");
            start(link::pumpToClient, "answer-losing-proxy-" + port() + "-to-client");
        }
    }

    private void start(Runnable pump, String name) {
        Thread thread = new Thread(pump, name);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
    }

    /** One client connection and its connection to the server. */
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
                        // Recorded before it is forwarded, so the server cannot answer before the cut is due.
                        if (armed) {
                            AnswerLosingProxy.this.sentWhileArmed.write(buffer, 0, n);
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
                    if (answerToLose()) {
                        runAtCut();
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

        /**
         * Whether the server's bytes just read answer what the client sent while armed and are not among the answers
         * to deliver first; disarms when they are lost.
         */
        private boolean answerToLose() {
            synchronized (gate) {
                if (!sentWhileArmed) {
                    return false;
                }
                sentWhileArmed = false;
                if (answersToDeliver > 0) {
                    // Still armed: the client's next message, sent once it has this answer, is recorded in turn.
                    answersToDeliver--;
                    return false;
                }
                armed = false;
                answersLost++;
                return true;
            }
        }

        void close() {
            closeQuietly(client);
            closeQuietly(server);
        }
    }

    private void runAtCut() {
        Runnable action;
        synchronized (gate) {
            action = atCut;
            atCut = null;
        }
        if (action == null) {
            return;
        }
        try {
            action.run();
        } catch (RuntimeException | Error e) {
            synchronized (gate) {
                atCutFailure = e;
            }
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
        synchronized (gate) {
            if (atCutFailure != null) {
                throw new AssertionError("the action at the cut failed: " + atCutFailure, atCutFailure);
            }
        }
    }
}

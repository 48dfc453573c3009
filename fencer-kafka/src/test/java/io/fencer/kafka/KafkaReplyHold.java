package io.fencer.kafka;

import io.fencer.testing.FreePorts;
import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy on 127.0.0.1 in front of one Kafka listener that, once armed, withholds the broker's answers to the
 * commits and aborts of transactions (EndTxn) that pass through it while it forwards every request: the broker
 * receives each commit and applies it, and only the client never hears so. It reads Kafka's framing (an int32
 * big-endian size, then that many bytes; a request starts with int16 api_key, int16 api_version, int32
 * correlation_id, a response with int32 correlation_id) because cutting or pausing the connection instead would hit
 * whatever call came first (a stopped broker can fail the producer before its commit is even sent), whereas matching
 * the EndTxn's correlation id makes the commit itself, and only it, the call whose answer is lost.
 *
 * <p>On a connection whose EndTxn answer is held, nothing more reaches the client (Kafka answers a connection's
 * requests in order) until {@link #release()}, which forwards the held answer and what follows, or {@link #close()}.
 */
final class KafkaReplyHold implements AutoCloseable {
    private static final short API_KEY_END_TXN = 26;
    /** Larger frames are refused (the connection closed): nothing a test sends comes near it. */
    private static final int FRAME_BYTES_MAX = 64 * 1024 * 1024;
    private static final int REQUEST_HEADER_BYTES = 8;
    private static final int RESPONSE_HEADER_BYTES = 4;
    private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
    private static final long JOIN_MILLIS = 5_000;

    /** EndTxn requests forwarded, armed or not: a count above zero shows the commits go through the proxy. */
    final AtomicInteger endTxnRequestsSeen = new AtomicInteger();
    /** EndTxn answers the broker sent that were held back from the client. */
    final AtomicInteger repliesHeld = new AtomicInteger();

    private final ServerSocket server;
    private final int brokerPort;
    private final Thread acceptor;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final AtomicInteger linkCount = new AtomicInteger();
    private final Object gate = new Object();
    private boolean armed; // guarded by gate
    private volatile boolean closed;

    private KafkaReplyHold(ServerSocket server, int brokerPort) {
        this.server = server;
        this.brokerPort = brokerPort;
        this.acceptor = new Thread(this::accept, "kafka-reply-hold-accept-" + server.getLocalPort());
        acceptor.setDaemon(true);
    }

    /**
     * Listens on a free port of 127.0.0.1 and forwards each connection to {@code brokerPort} there; the broker may
     * start later, as long as it does before the first client connects.
     */
    static KafkaReplyHold start(int brokerPort) {
        int port = FreePorts.choose(1)[0];
        try {
            ServerSocket server = new ServerSocket();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            KafkaReplyHold hold = new KafkaReplyHold(server, brokerPort);
            hold.acceptor.start();
            return hold;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on 127.0.0.1:" + port, e);
        }
    }

    int port() {
        return server.getLocalPort();
    }

    /** From now on, the answer to every EndTxn request forwarded is held back until {@link #release()}. */
    void arm() {
        synchronized (gate) {
            armed = true;
        }
    }

    /** Holds nothing more, and forwards the answers held so far (to clients still connected). */
    void release() {
        synchronized (gate) {
            armed = false;
            gate.notifyAll();
        }
    }

    private boolean armed() {
        synchronized (gate) {
            return armed;
        }
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Socket broker = new Socket();
            try {
                broker.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), brokerPort),
                        CONNECT_TIMEOUT_MILLIS);
            } catch (IOException e) {
                closeQuietly(client);
                closeQuietly(broker);
                continue;
            }
            Link link = new Link(client, broker);
            links.add(link);
            if (closed) { // close() may have run between accept and add, and missed this link
                link.close();
                return;
            }
            int n = linkCount.incrementAndGet();
            start(link::pumpRequests, "kafka-reply-hold-" + port() + "-" + n + "-to-broker");
            start(link::pumpResponses, "kafka-reply-hold-" + port() + "-" + n + "-to-client");
        }
    }

    private void start(Runnable pump, String name) {
        Thread thread = new Thread(pump, name);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
    }

    /** One client connection and its connection to the broker. */
    private final class Link {
        private final Socket client;
        private final Socket broker;
        /** The correlation ids of this connection's EndTxn requests whose answers are to be held. */
        private final Set<Integer> held = ConcurrentHashMap.newKeySet();
        private volatile boolean ended;

        Link(Socket client, Socket broker) {
            this.client = client;
            this.broker = broker;
        }

        void pumpRequests() {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(client.getInputStream()))) {
                OutputStream out = broker.getOutputStream();
                for (byte[] frame = readFrame(in, REQUEST_HEADER_BYTES); frame != null;
                        frame = readFrame(in, REQUEST_HEADER_BYTES)) {
                    ByteBuffer header = ByteBuffer.wrap(frame, 4, REQUEST_HEADER_BYTES);
                    short apiKey = header.getShort();
                    header.getShort(); // api_version
                    int correlationId = header.getInt();
                    if (apiKey == API_KEY_END_TXN) {
                        endTxnRequestsSeen.incrementAndGet();
                        if (armed()) {
                            held.add(correlationId); // before the broker can answer it
                        }
                    }
                    out.write(frame);
                    out.flush();
                }
            } catch (IOException e) {
                // the connection ended, from either side
            } finally {
                close();
            }
        }

        void pumpResponses() {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(broker.getInputStream()))) {
                OutputStream out = client.getOutputStream();
                for (byte[] frame = readFrame(in, RESPONSE_HEADER_BYTES); frame != null;
                        frame = readFrame(in, RESPONSE_HEADER_BYTES)) {
                    int correlationId = ByteBuffer.wrap(frame, 4, RESPONSE_HEADER_BYTES).getInt();
                    if (held.remove(correlationId)) {
                        repliesHeld.incrementAndGet();
                        if (!awaitRelease()) {
                            return;
                        }
                    }
                    out.write(frame);
                    out.flush();
                }
            } catch (IOException e) {
                // the connection ended, from either side
            } finally {
                close();
            }
        }

        /** Waits until the hold is released (true) or this connection or the proxy ends (false). */
        private boolean awaitRelease() {
            synchronized (gate) {
                while (armed && !ended && !closed) {
                    try {
                        gate.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return false;
                    }
                }
                return !ended && !closed;
            }
        }

        void close() {
            ended = true;
            closeQuietly(client);
            closeQuietly(broker);
            synchronized (gate) {
                gate.notifyAll(); // a pump waiting for the release stops waiting for a connection gone
            }
        }
    }

    /**
     * Reads one frame, returned with its 4-byte size in front as it is forwarded; null at the end of the stream
     * between frames.
     *
     * @throws IOException when the stream ends inside a frame, or the size is below {@code headerBytes} or above
     *     {@link #FRAME_BYTES_MAX}
     */
    private static byte[] readFrame(DataInputStream in, int headerBytes) throws IOException {
        int size;
        try {
            size = in.readInt();
        } catch (EOFException e) {
            return null;
        }
        if (size < headerBytes || size > FRAME_BYTES_MAX) {
            throw new IOException("frame of " + size + " bytes, not between " + headerBytes + " and "
                    + FRAME_BYTES_MAX);
        }
        byte[] frame = new byte[4 + size];
        ByteBuffer.wrap(frame).putInt(size);
        in.readFully(frame, 4, size);
        return frame;
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Stops listening, closes every connection (a held answer is dropped) and waits for the threads to end. */
    @Override
    public void close() {
        closed = true;
        closeQuietly(server);
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

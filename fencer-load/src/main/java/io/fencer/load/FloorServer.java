package io.fencer.load;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The lock server of {@link HandoffFloor}: one lock, a FIFO line, a token counter and a log, served by one selector
 * thread, with nothing on a hand-off's path but what a durable hand-off needs. Each pass of the selector reads every
 * ready connection, applies what it read, then commits: one record with the pass's changes written to the log and
 * synced (one {@code fdatasync} per pass, so changes that arrive together share it), and only then the grants are
 * answered. With {@code hops} above zero each commit first crosses that many threads, each woken through a queue,
 * as a command crosses a server's internal threads.
 *
 * <p>The wire is one byte per request, {@code 'A'} (acquire: join the line) or {@code 'R'} (release, by the
 * holder), and nine bytes per answer: {@code 'G'} and the grant's token. A connection that sends anything else is
 * closed; the server keeps serving the others. Written by hand on purpose: it measures the floor under any lock
 * service on a machine, so it must hold nothing a library would add.
 */
final class FloorServer implements Closeable {
    /** The log's size: records are written round it, into blocks written once before, as a preallocated log is. */
    static final int LOG_BYTES = 16 << 20;
    /** One commit's record; a small entry, as a hand-off's is. */
    static final int RECORD_BYTES = 128;
    /** The answer to an acquire: {@code 'G'} and the token. */
    static final int GRANT_BYTES = 1 + Long.BYTES;
    /** The most connections served at once. */
    static final int CONNECTIONS_MAX = 4_096;

    private final Path logFile;
    private final FileChannel log;
    private final boolean sync;
    private final Selector selector;
    private final ServerSocketChannel listener;
    private final List<LinkedBlockingQueue<Runnable>> stages = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final ArrayDeque<SocketChannel> line = new ArrayDeque<>();
    private final ByteBuffer input = ByteBuffer.allocate(256);
    private final ByteBuffer record = ByteBuffer.allocateDirect(RECORD_BYTES);
    private final AtomicLong syncs = new AtomicLong();
    private final AtomicLong grants = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean closed;
    private SocketChannel holder;
    private long token;
    private long logPosition;
    private int connections;

    /** Prepares the log in {@code directory} and starts listening on a free port of the loopback address. */
    FloorServer(Path directory, boolean sync, int hops) throws IOException {
        this.logFile = Files.createTempFile(directory, "handoff-floor-", ".log");
        this.sync = sync;
        FileChannel opened = null;
        Selector selecting = null;
        try {
            opened = FileChannel.open(logFile, StandardOpenOption.WRITE);
            prepareLog(opened);
            selecting = Selector.open();
            this.listener = ServerSocketChannel.open();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            listener.configureBlocking(false);
            listener.register(selecting, SelectionKey.OP_ACCEPT);
        } catch (IOException | RuntimeException e) { // a full disk, say: leave no file behind
            for (Closeable open : new Closeable[] {opened, selecting}) {
                if (open != null) {
                    open.close();
                }
            }
            Files.deleteIfExists(logFile);
            throw e;
        }
        this.log = opened;
        this.selector = selecting;
        for (int i = 0; i < hops; i++) {
            stages.add(new LinkedBlockingQueue<>());
        }
        for (int i = 0; i < hops; i++) {
            threads.add(thread("handoff-floor-stage-" + i, stage(i)));
        }
        threads.add(thread("handoff-floor-server", this::serve));
    }

    /** Writes the whole log once and syncs it, so that a commit's sync never has to allocate blocks. */
    private static void prepareLog(FileChannel log) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
        for (long position = 0; position < LOG_BYTES; position += zeros.capacity()) {
            zeros.clear();
            while (zeros.hasRemaining()) {
                log.write(zeros, position + zeros.position());
            }
        }
        log.force(true);
    }

    private static Thread thread(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    /** The port clients connect to, on the loopback address. */
    int port() {
        return listener.socket().getLocalPort();
    }

    /** The log syncs made so far. */
    long syncs() {
        return syncs.get();
    }

    /** The grants made so far: committed, and answered or being answered. */
    long grants() {
        return grants.get();
    }

    /** The connections closed for sending something other than {@code 'A'} or {@code 'R'}, or one too many. */
    long refused() {
        return refused.get();
    }

    /** What stopped the server's or a stage's thread, or null while it serves. */
    Throwable failure() {
        return failure.get();
    }

    private void fail(Throwable e) {
        if (!closed) {
            failure.compareAndSet(null, e);
        }
    }

    private Runnable stage(int index) {
        return () -> {
            try {
                while (!closed) {
                    Runnable commit = stages.get(index).take();
                    if (index + 1 < stages.size()) {
                        stages.get(index + 1).add(commit);
                    } else {
                        commit.run();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    private void serve() {
        List<SocketChannel> granted = new ArrayList<>();
        try {
            while (!closed) {
                selector.select();
                int changes = 0;
                for (SelectionKey key : selector.selectedKeys()) {
                    changes += key.isAcceptable() ? accept() : read(key);
                }
                selector.selectedKeys().clear();
                while (holder == null && !line.isEmpty()) {
                    holder = line.poll();
                    token++;
                    granted.add(holder);
                    changes++;
                }
                if (changes > 0) {
                    commit(token, changes, List.copyOf(granted));
                    granted.clear();
                }
            }
        } catch (IOException | RuntimeException e) {
            fail(e);
        }
    }

    private int accept() throws IOException {
        SocketChannel connection = listener.accept();
        if (connection == null) {
            return 0;
        }
        if (connections == CONNECTIONS_MAX) {
            refused.incrementAndGet();
            connection.close();
            return 0;
        }
        connections++;
        connection.configureBlocking(false);
        connection.socket().setTcpNoDelay(true);
        connection.register(selector, SelectionKey.OP_READ);
        return 0;
    }

    /** Applies what one connection sent: returns the changes to commit. */
    private int read(SelectionKey key) throws IOException {
        SocketChannel connection = (SocketChannel) key.channel();
        input.clear();
        int read = connection.read(input);
        int changes = 0;
        for (int i = 0; i < read; i++) {
            byte request = input.get(i);
            if (request == 'A') {
                line.add(connection);
                changes++;
            } else if (request == 'R' && holder == connection) {
                holder = null;
                changes++;
            } else if (request != 'R') {
                refused.incrementAndGet();
                return changes + drop(key, connection);
            }
        }
        return read < 0 ? changes + drop(key, connection) : changes;
    }

    /** Closes a connection and takes it out of the line; frees the lock if it held it. */
    private int drop(SelectionKey key, SocketChannel connection) throws IOException {
        key.cancel();
        connection.close();
        connections--;
        boolean wasWaiting = line.removeIf(waiting -> waiting == connection);
        if (holder == connection) {
            holder = null;
            return 1;
        }
        return wasWaiting ? 1 : 0;
    }

    private void commit(long lastToken, int changes, List<SocketChannel> granted) {
        Runnable commit = () -> {
            try {
                writeRecord(lastToken, changes);
                answer(lastToken, granted);
            } catch (IOException | RuntimeException e) {
                fail(e);
            }
        };
        if (stages.isEmpty()) {
            commit.run();
        } else {
            stages.get(0).add(commit);
        }
    }

    private void writeRecord(long lastToken, int changes) throws IOException {
        record.clear();
        record.putLong(lastToken).putInt(changes);
        record.position(RECORD_BYTES).flip();
        while (record.hasRemaining()) {
            log.write(record, logPosition + record.position());
        }
        logPosition = (logPosition + RECORD_BYTES) % LOG_BYTES;
        if (sync) {
            log.force(false);
            syncs.incrementAndGet();
        }
    }

    private void answer(long lastToken, List<SocketChannel> granted) throws IOException {
        // Each pass grants at most one connection: the lock is free at most once before its holder hears of it.
        assert granted.size() <= 1 : "one pass granted " + granted.size() + " connections";
        for (SocketChannel connection : granted) {
            ByteBuffer grant = ByteBuffer.allocate(GRANT_BYTES).put((byte) 'G').putLong(lastToken).flip();
            grants.incrementAndGet(); // before the answer: a client that reads it finds it counted
            try {
                // A holder has one answer outstanding, so its socket's buffer always takes the nine bytes at once.
                if (connection.write(grant) != GRANT_BYTES) {
                    throw new IOException("a grant's answer did not fit the socket's buffer");
                }
            } catch (ClosedChannelException e) {
                // the holder went away meanwhile; the server thread frees the lock when it reads the close
            }
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        selector.wakeup();
        for (Thread thread : threads) {
            thread.interrupt();
        }
        for (Thread thread : threads) {
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (SelectionKey key : selector.keys()) {
            key.channel().close();
        }
        selector.close();
        log.close();
        Files.deleteIfExists(logFile);
    }
}

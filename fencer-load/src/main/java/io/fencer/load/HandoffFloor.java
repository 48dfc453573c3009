package io.fencer.load;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The load generator behind {@code fencer bench floor}: how fast one contended lock can pass from holder to holder
 * on this machine when every hand-off is durable, with no lock service in the way. A {@link FloorServer} in this
 * process keeps one lock with a FIFO line and syncs a log record on the data directory's file system before it
 * answers each grant; {@code clients} threads, each on its own loopback connection, loop: wait for the grant, then
 * release and ask again in one write (as a client that releases without waiting and acquires at once).
 *
 * <p>The figure bounds every lock service on the machine that keeps a grant durable before answering it: each
 * hand-off is one sync, one loopback round trip and one thread woken on each side. {@code hops} adds that many
 * server threads to each commit's path, to show what each costs here; {@code sync = false} shows the machine
 * without its disk.
 *
 * <p>The check: each grant's token must exceed every token any client received before it. Each holder releases
 * only after its check, so a token issued twice, one that steps back, or two holders at once (whose checks then run
 * in either order) shows as a violation.
 */
public final class HandoffFloor {
    /** The most client connections one run opens. */
    public static final int CLIENTS_MAX = 1_024;
    /** The most threads a run adds to a commit's path. */
    public static final int HOPS_MAX = 16;
    /** How long a client thread may take to end once its connection is closed. */
    static final Duration CLIENT_END_WAIT = Duration.ofSeconds(30);

    /**
     * What to run.
     *
     * @param clients client threads, each with its own connection, all on one lock
     * @param hops server threads each commit crosses before its sync; 0 syncs on the thread that read the request
     * @param sync whether each commit syncs its record; false measures the machine without its disk
     * @param clientIoThread whether the clients share one I/O thread, as an RPC library's do ({@link FloorClientLoop}),
     *     instead of each reading and writing its own socket
     * @param directory where the log lives: the file system whose syncs the run measures
     * @param duration how long to measure
     * @param warmup how long to run before measuring
     */
    public record Settings(int clients, int hops, boolean sync, boolean clientIoThread, Path directory,
            Duration duration, Duration warmup) {
        public Settings {
            SettingsChecks.window(duration, warmup);
            Objects.requireNonNull(directory, "directory");
            SettingsChecks.range("clients", clients, 1, CLIENTS_MAX);
            SettingsChecks.range("hops", hops, 0, HOPS_MAX);
        }
    }

    /**
     * What a run measured.
     *
     * @param settings what ran
     * @param handOffs grants made in the measured window
     * @param syncs log syncs in the measured window (one per hand-off when every grant waits for its own)
     * @param violations grants whose token did not exceed every token received before (must be 0)
     * @param error what stopped the server or a client, or null
     */
    public record Result(Settings settings, long handOffs, long syncs, long violations, String error) {
        /** Hand-offs per second of the measured window. */
        public double handOffsPerSecond() {
            return handOffs / (settings.duration().toNanos() / 1e9);
        }

        /** Microseconds per hand-off, the reciprocal of the rate; NaN when nothing was handed off. */
        public double microsPerHandOff() {
            return handOffs == 0 ? Double.NaN : settings.duration().toNanos() / 1e3 / handOffs;
        }
    }

    private final Settings settings;
    private final LongAdder granted = new LongAdder();
    private final AtomicLong lastToken = new AtomicLong();
    private final AtomicLong violations = new AtomicLong();
    private final AtomicReference<String> error = new AtomicReference<>();
    private volatile boolean stopping;

    private HandoffFloor(Settings settings) {
        this.settings = settings;
    }

    /**
     * Runs the server and the clients for the warm-up and the window, stops both, and returns what it measured. A
     * directory the run had to create is removed with its log at the end, so a run leaves the file system as it was.
     */
    public static Result run(Settings settings) throws IOException, InterruptedException {
        List<Path> created = new ArrayList<>();
        for (Path missing = settings.directory().toAbsolutePath(); missing != null && !Files.exists(missing);
                missing = missing.getParent()) {
            created.add(missing);
        }
        Files.createDirectories(settings.directory());
        try {
            return new HandoffFloor(settings).run();
        } finally {
            for (Path directory : created) { // the deepest first; each is empty once the run's log is gone
                Files.deleteIfExists(directory);
            }
        }
    }

    private Result run() throws IOException, InterruptedException {
        try (FloorServer server = new FloorServer(settings.directory(), settings.sync(), settings.hops());
             Closeable clients = settings.clientIoThread()
                     ? new FloorClientLoop(server.port(), settings.clients(), this) : clients(server.port())) {
            Thread.sleep(settings.warmup().toMillis());
            long grants0 = granted.sum();
            long syncs0 = server.syncs();
            Thread.sleep(settings.duration().toMillis());
            long handOffs = granted.sum() - grants0;
            long syncs = server.syncs() - syncs0;
            Throwable failure = server.failure();
            if (failure != null) {
                error.compareAndSet(null, "server: " + failure);
            }
            return new Result(settings, handOffs, syncs, violations.get(), error.get());
        }
    }

    /** Starts the clients that read and write their own sockets; closing the result ends them. */
    private Closeable clients(int port) throws IOException {
        List<SocketChannel> connections = new ArrayList<>();
        List<Thread> clients = new ArrayList<>();
        Closeable close = () -> {
            stopping = true;
            for (SocketChannel connection : connections) {
                connection.close(); // ends a client's blocked read
            }
            for (Thread client : clients) {
                try {
                    client.join(CLIENT_END_WAIT.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        };
        try {
            for (int i = 0; i < settings.clients(); i++) {
                SocketChannel connection = SocketChannel.open(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                connection.socket().setTcpNoDelay(true);
                connections.add(connection);
                clients.add(client(i, connection));
            }
        } catch (IOException e) {
            close.close();
            throw e;
        }
        return close;
    }

    private Thread client(int index, SocketChannel connection) {
        Thread thread = new Thread(() -> loop(connection), "handoff-floor-client-" + index);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    /** Acquires, then on each grant checks its token and releases and acquires again in one write. */
    private void loop(SocketChannel connection) {
        ByteBuffer acquire = ByteBuffer.wrap(new byte[] {'A'});
        ByteBuffer releaseAndAcquire = ByteBuffer.wrap(new byte[] {'R', 'A'});
        ByteBuffer grant = ByteBuffer.allocate(FloorServer.GRANT_BYTES);
        try {
            connection.write(acquire);
            while (!stopping) {
                grant.clear();
                while (grant.hasRemaining()) {
                    if (connection.read(grant) < 0) {
                        throw new IOException("the server closed the connection");
                    }
                }
                kind(grant.get(0));
                granted(grant.getLong(1));
                releaseAndAcquire.clear();
                while (releaseAndAcquire.hasRemaining()) {
                    connection.write(releaseAndAcquire);
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!stopping) { // closing the connection at the end interrupts a read: not an error
                clientFailed(e);
            }
        }
    }

    /** Fails unless a client's answer is a grant. */
    void kind(byte kind) {
        if (kind != 'G') {
            throw new IllegalStateException("the server answered '" + (char) kind + "', not 'G'");
        }
    }

    /** Checks and counts a grant of {@code token}; the client releases only after this returns. */
    void granted(long token) {
        long before = lastToken.getAndAccumulate(token, Math::max);
        if (token <= before) {
            violations.incrementAndGet();
        }
        granted.increment();
    }

    /** Records the first failure of a client. */
    void clientFailed(Throwable e) {
        error.compareAndSet(null, "client: " + e);
    }
}

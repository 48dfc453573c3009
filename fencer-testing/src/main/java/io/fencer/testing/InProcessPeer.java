package io.fencer.testing;

import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * One peer in this JVM, which stops and starts again from the same config: its ports and data directory are in the
 * config, so a restart is a crashed-and-restarted server. Shared by {@link FencerTestServer} and
 * {@link FencerTestCluster}.
 */
final class InProcessPeer {
    private static final Duration POLL_INTERVAL = Duration.ofMillis(20);

    private final Supplier<ServerConfig> config;
    private FencerServer server;

    InProcessPeer(Supplier<ServerConfig> config) {
        this.config = config;
    }

    /** Starts the peer; it serves on return, but its group may not have a leader yet. */
    synchronized FencerServer start() {
        if (server != null) {
            throw new IllegalStateException("the server runs already: " + server);
        }
        ServerConfig settings = config.get();
        try {
            server = FencerServer.start(settings);
        } catch (IOException e) {
            throw new UncheckedIOException("the server on 127.0.0.1:" + settings.port() + " did not start", e);
        }
        return server;
    }

    /** Stops the peer, as a crash would (nothing is handed over); does nothing when it is stopped. */
    synchronized void stop() {
        if (server != null) {
            FencerServer running = server;
            server = null;
            running.close();
        }
    }

    /** Returns the running server, or null when stopped. */
    synchronized FencerServer server() {
        return server;
    }

    /** Returns the running server, or throws naming {@code what} when stopped. */
    synchronized FencerServer running(String what) {
        if (server == null) {
            throw new IllegalStateException(what + " is stopped");
        }
        return server;
    }

    synchronized boolean isLeader() {
        return server != null && server.isLeader();
    }

    /**
     * Waits until {@code condition} holds, polling every 20 ms, for at most {@code max}; then throws an
     * {@link IllegalStateException} with {@code failure}'s message, which names what did not happen in that time.
     */
    static void await(BooleanSupplier condition, Duration max, Supplier<String> failure) {
        long deadlineNanos = System.nanoTime() + max.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadlineNanos > 0) {
                throw new IllegalStateException(failure.get() + " within " + max);
            }
            try {
                Thread.sleep(POLL_INTERVAL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting: " + failure.get(), e);
            }
        }
    }

    static Duration checkedWait(Duration wait) {
        if (wait == null || wait.isNegative() || wait.isZero()) {
            throw new IllegalArgumentException("a wait must be positive: " + wait);
        }
        return wait;
    }

    private static final java.util.concurrent.atomic.AtomicInteger IDS = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Returns a peer id no other test server or cluster of this JVM has. Ratis keeps some state per member (peer id
     * and group) for the whole process, and every Fencer group has the same group id: two servers of one JVM that
     * were both "n1" interfered, the first one leading but answering nothing once the second had started and closed
     * ({@code FencerTestServerTest.start_anotherServerStartedAndClosedMeanwhile_keepsServing}).
     */
    static String uniqueId(String prefix) {
        return prefix + IDS.incrementAndGet();
    }
}

package io.fencer.testing;

import io.fencer.core.Ticker;
import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * A real Fencer server in this JVM, for testing code against it as curator-test's {@code TestingServer} serves
 * ZooKeeper: one peer (real Ratis log, real fsync, real gRPC) on free ports of 127.0.0.1 with its data under a
 * directory the test gives. It leads its one-peer group before {@link #start} returns.
 *
 * <pre>{@code
 * try (FencerTestServer server = FencerTestServer.start(tempDir)) {
 *     FencerClient client = Fencer.connect(server.endpoint());
 *     ...
 *     server.restart();   // a crash and a restart: same ports, same data, tokens keep increasing
 * }
 * }</pre>
 *
 * <p>The admin port is off; the client and Raft ports are chosen once, below the ephemeral range
 * ({@link FreePorts}), and kept across {@link #stop()} and {@link #restart()}, so a client keeps its endpoint. Other
 * settings (the HTTP port, lock-delay, limits, quotas) are set through {@link Builder#config}. Not for production:
 * the group's secret is the default one in the data directory.
 */
public final class FencerTestServer implements AutoCloseable {
    /** How long {@link #start} and {@link #restart} wait for the server to lead, by default. */
    public static final Duration STARTUP_MAX_DEFAULT = Duration.ofSeconds(60);

    private final int port;
    private final Duration startupMax;
    private final InProcessPeer peer;

    private FencerTestServer(Builder builder) {
        int[] ports = FreePorts.choose(2);
        this.port = ports[0];
        this.startupMax = builder.startupMax;
        // A peer id of its own in this JVM (see InProcessPeer#uniqueId), kept across restarts.
        this.peer = builder.settings.peer(ServerConfig.defaults(builder.dataDir).withPorts(ports[0], -1, ports[1])
                .withPeers(InProcessPeer.uniqueId("s"), List.of()));
    }

    /** Starts a plaintext server with its data under {@code dataDir} and returns once it leads. */
    public static FencerTestServer start(Path dataDir) {
        return builder(dataDir).start();
    }

    /** Returns a builder of a server with its data under {@code dataDir}, for TLS, an ACL, a ticker or more. */
    public static Builder builder(Path dataDir) {
        return new Builder(dataDir);
    }

    /** Returns the client address, {@code 127.0.0.1:port}; it stays the same across restarts. */
    public String endpoint() {
        return "127.0.0.1:" + port;
    }

    /** Returns the client (gRPC) port; it stays the same across restarts. */
    public int port() {
        return port;
    }

    /**
     * Returns the running {@link FencerServer}: its other ports, {@code isLeader()}, {@code takeSnapshot()},
     * {@code reloadAcl()}. A restart makes a new one.
     *
     * @throws IllegalStateException when the server is stopped
     */
    public FencerServer server() {
        return peer.running("the server on " + endpoint());
    }

    /** Returns true while the server runs. */
    public boolean isRunning() {
        return peer.server() != null;
    }

    /**
     * Stops the server as a crash would: nothing is handed over, its sessions live on in the replicated state (the
     * next start grants them a grace period). Its port refuses connections until {@link #restart()}. Does nothing
     * when stopped.
     */
    public void stop() {
        peer.stop();
    }

    /**
     * Starts the server again on the same ports and data directory, stopping it first if it runs, and returns once
     * it leads: what a restarted process finds on its disk, it has.
     *
     * @throws IllegalStateException when it does not lead within the startup wait
     */
    public void restart() {
        peer.stop();
        startAndAwaitLeader();
    }

    /** Stops the server; its data directory stays, for the test to delete or read. */
    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return "FencerTestServer[" + endpoint() + (isRunning() ? "" : ", stopped") + "]";
    }

    private void startAndAwaitLeader() {
        FencerServer started = peer.start();
        try {
            // A server serves before its one-peer group has elected it: tests start once it leads.
            InProcessPeer.await(started::isLeader, startupMax,
                    () -> "the Fencer test server on " + endpoint() + " did not become leader");
        } catch (RuntimeException e) {
            peer.stop();
            throw e;
        }
    }

    /** Settings of a {@link FencerTestServer}; {@link #start()} starts it. */
    public static final class Builder {
        private final Path dataDir;
        private final PeerSettings settings = new PeerSettings();
        private Duration startupMax = STARTUP_MAX_DEFAULT;

        private Builder(Path dataDir) {
            this.dataDir = Objects.requireNonNull(dataDir, "dataDir");
        }

        /** Serves TLS with these files (see {@link TestTls#serverFiles}); with a client CA, mutual TLS. */
        public Builder tls(TlsFiles tls) {
            settings.tls(tls);
            return this;
        }

        /** Checks every call against the ACL file {@code acl} (see docs/security.md for its format). */
        public Builder acl(Path acl) {
            settings.acl(acl);
            return this;
        }

        /**
         * Measures session leases and lock-delays with {@code ticker}, e.g. a {@link io.fencer.core.ManualTicker}
         * that a test advances to expire sessions without waiting. Raft's own timers keep the real clock.
         */
        public Builder ticker(Ticker ticker) {
            settings.ticker(ticker);
            return this;
        }

        /**
         * Applies {@code customiser} to the config at each start, after the ports, TLS, ACL and ticker are set: for
         * any other setting, e.g. {@code config -> config.withHttpPort(0).withLockDelay(Duration.ofSeconds(1))}.
         * Ports it sets are its own to keep across restarts.
         */
        public Builder config(UnaryOperator<ServerConfig> customiser) {
            settings.customiser(customiser);
            return this;
        }

        /** How long {@link #start()} and a restart wait for the server to lead; 60 s by default. */
        public Builder startupMax(Duration startupMax) {
            this.startupMax = InProcessPeer.checkedWait(startupMax);
            return this;
        }

        /**
         * Starts the server and returns once it leads.
         *
         * @throws IllegalStateException when it does not lead within {@link #startupMax}; it is stopped then
         * @throws java.io.UncheckedIOException when it cannot start (a port taken, an unreadable data directory)
         */
        public FencerTestServer start() {
            FencerTestServer server = new FencerTestServer(this);
            server.startAndAwaitLeader();
            return server;
        }
    }
}

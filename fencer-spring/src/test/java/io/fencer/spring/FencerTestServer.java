package io.fencer.spring;

import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import org.awaitility.Awaitility;

/**
 * A real Fencer server in this JVM for the Spring tests: one peer on free ports, which a test may stop and start
 * again on the same ports and data, as a restarted server.
 */
public final class FencerTestServer implements AutoCloseable {
    private final Path dataDir;
    private final TlsFiles tls;
    private final Path acl;
    private final int port;
    private final int raftPort;
    private FencerServer server;

    private FencerTestServer(Path dataDir, TlsFiles tls, Path acl) {
        this.dataDir = dataDir;
        this.tls = tls;
        this.acl = acl;
        this.port = freePort();
        this.raftPort = freePort();
    }

    /** Starts a plaintext server with its data under {@code dataDir}. */
    public static FencerTestServer start(Path dataDir) {
        return start(dataDir, null);
    }

    /** Starts a server with its data under {@code dataDir}, with TLS when {@code tls} is not null. */
    public static FencerTestServer start(Path dataDir, TlsFiles tls) {
        return start(dataDir, tls, null);
    }

    /** As {@link #start(Path, TlsFiles)}, checking every call against the ACL file {@code acl} when not null. */
    public static FencerTestServer start(Path dataDir, TlsFiles tls, Path acl) {
        FencerTestServer server = new FencerTestServer(dataDir, tls, acl);
        server.startAgain();
        return server;
    }

    /** Returns the client address, {@code 127.0.0.1:port}; it stays the same across restarts. */
    public String endpoint() {
        return "127.0.0.1:" + port;
    }

    /** Stops the server; its port refuses connections until {@link #startAgain()}. */
    public synchronized void stop() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** Starts the server again on the same ports and data. */
    public synchronized void startAgain() {
        if (server != null) {
            throw new IllegalStateException("the server runs already");
        }
        ServerConfig config = ServerConfig.defaults(dataDir).withPorts(port, -1, raftPort);
        config = acl == null ? config : config.withAcl(acl);
        try {
            server = FencerServer.start(tls == null ? config : config.withTls(tls));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // A server may serve before its group has elected it: tests start once it leads.
        FencerServer started = server;
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(started::isLeader);
    }

    /** Returns true while the server runs. */
    public synchronized boolean isRunning() {
        return server != null;
    }

    /** Returns true while the server runs and leads its (one-peer) group. */
    public synchronized boolean isLeader() {
        return server != null && server.isLeader();
    }

    @Override
    public void close() {
        stop();
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

package io.fencer.client.internal;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/** A real gRPC server on 127.0.0.1 and a free port, serving a {@link FakeLocks}. */
final class FakeServer implements AutoCloseable {
    /** The ports {@link #refusedEndpoint} keeps bound; the JVM's exit releases them. */
    private static final Queue<Socket> HELD = new ConcurrentLinkedQueue<>();

    final FakeLocks locks;
    private final Server server;

    private FakeServer(FakeLocks locks, Server server) {
        this.locks = locks;
        this.server = server;
    }

    static FakeServer start() {
        return start(new FakeLocks());
    }

    static FakeServer start(FakeLocks locks) {
        try {
            Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                    .addService(locks).build().start();
            return new FakeServer(locks, server);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    String endpoint() {
        return "127.0.0.1:" + server.getPort();
    }

    /**
     * Returns an endpoint on 127.0.0.1 where nothing listens: connections are refused. The port stays bound, never
     * listening, for the life of this JVM, so no server can take it: a port closed after it was chosen was free for any
     * server's bind to port 0, in this JVM or the module's other test JVM, and CI once met a server there instead of a
     * refusal. A bound port is also never chosen for an outgoing connection.
     */
    static String refusedEndpoint() {
        Socket held = new Socket();
        try {
            held.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        HELD.add(held);
        return "127.0.0.1:" + held.getLocalPort();
    }

    @Override
    public void close() {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

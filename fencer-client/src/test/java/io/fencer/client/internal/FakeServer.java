package io.fencer.client.internal;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;

/** A real gRPC server on 127.0.0.1 and a free port, serving a {@link FakeLocks}. */
final class FakeServer implements AutoCloseable {
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

    /** Returns an endpoint on 127.0.0.1 where nothing listens: connections are refused. */
    static String refusedEndpoint() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return "127.0.0.1:" + socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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

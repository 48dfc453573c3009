package io.fencer.server.rpc;

import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.net.SocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A started gRPC server and the event loops it runs on, which it owns: once the server has terminated, they are
 * shut down. Why: gRPC leaves event loops it was given to their owner, and a port whose loops spin (see
 * {@link ReplySpin}) cannot use gRPC's shared ones.
 */
final class LoopOwningServer extends Server {
    private final Server server;
    private final EventLoopGroup loops;
    private final AtomicBoolean released = new AtomicBoolean();

    LoopOwningServer(Server server, EventLoopGroup loops) {
        this.server = server;
        this.loops = loops;
    }

    @Override
    public Server start() {
        throw new IllegalStateException("the server was started when its loops were given to it");
    }

    @Override
    public int getPort() {
        return server.getPort();
    }

    @Override
    public List<? extends SocketAddress> getListenSockets() {
        return server.getListenSockets();
    }

    @Override
    public List<ServerServiceDefinition> getServices() {
        return server.getServices();
    }

    @Override
    public List<ServerServiceDefinition> getImmutableServices() {
        return server.getImmutableServices();
    }

    @Override
    public List<ServerServiceDefinition> getMutableServices() {
        return server.getMutableServices();
    }

    @Override
    public Server shutdown() {
        server.shutdown();
        return this;
    }

    @Override
    public Server shutdownNow() {
        server.shutdownNow();
        return this;
    }

    @Override
    public boolean isShutdown() {
        return server.isShutdown();
    }

    @Override
    public boolean isTerminated() {
        return releasedIfTerminated(server.isTerminated());
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return releasedIfTerminated(server.awaitTermination(timeout, unit));
    }

    @Override
    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
        releasedIfTerminated(true);
    }

    /** Shuts the loops down once the server has terminated (their channels are closed); returns {@code terminated}. */
    private boolean releasedIfTerminated(boolean terminated) {
        if (terminated && released.compareAndSet(false, true)) {
            loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
        }
        return terminated;
    }

    @Override
    public String toString() {
        return server.toString();
    }
}

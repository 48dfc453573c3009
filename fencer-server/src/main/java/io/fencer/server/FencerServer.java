package io.fencer.server;

import java.io.IOException;

/**
 * A running Fencer server: one peer of a Raft group hosting the lock state machine, its gRPC service
 * {@code fencer.v1.Locks} and the admin HTTP endpoint.
 */
public final class FencerServer implements AutoCloseable {
    private FencerServer() {}

    /** Starts a server and returns once it serves (its group may not have a leader yet). */
    public static FencerServer start(ServerConfig config) throws IOException {
        throw new UnsupportedOperationException("not yet");
    }

    /** Returns the bound gRPC client port. */
    public int port() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Returns the bound admin HTTP port, or -1 when off. */
    public int adminPort() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Returns true while this peer is the group's leader. */
    public boolean isLeader() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Stops serving and closes the Raft server; waits for in-flight calls for a short grace period. */
    @Override
    public void close() {
        throw new UnsupportedOperationException("not yet");
    }

    /** Blocks until the server is closed. */
    public void awaitTermination() throws InterruptedException {
        throw new UnsupportedOperationException("not yet");
    }
}

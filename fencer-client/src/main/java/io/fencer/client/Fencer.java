package io.fencer.client;

/**
 * The entry point of the Fencer Java client.
 *
 * <pre>{@code
 * try (FencerClient fencer = Fencer.connect("127.0.0.1:7070");
 *      Session session = fencer.openSession(Duration.ofSeconds(10));
 *      Grant grant = session.lock("orders").acquire(Duration.ofSeconds(30))) {
 *     store.write(grant.token(), ...);   // the resource refuses the token once a newer grant exists
 * }
 * }</pre>
 */
public final class Fencer {
    private Fencer() {}

    /** Connects to a Fencer group through any of its peers' client addresses ({@code host:port}). */
    public static FencerClient connect(String... endpoints) {
        return newBuilder().endpoints(endpoints).build();
    }

    /** Returns a builder for a client with non-default settings. */
    public static FencerClient.Builder newBuilder() {
        return io.fencer.client.internal.DefaultFencerClient.newBuilder();
    }
}

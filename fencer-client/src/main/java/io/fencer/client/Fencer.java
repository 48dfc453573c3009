package io.fencer.client;

/**
 * The entry point of the Fencer Java client.
 *
 * <pre>{@code
 * try (FencerClient fencer = Fencer.connect("127.0.0.1:7070");
 *      FencedStore store = Fencer.store("127.0.0.1:7070", fencer);
 *      Session session = fencer.openSession(Duration.ofSeconds(10));
 *      Grant grant = session.lock("orders").acquire(Duration.ofSeconds(30))) {
 *     store.put("orders", "order-17", "paid", grant);   // refused once a newer grant of "orders" has written
 * }
 * }</pre>
 *
 * <p>Against servers with TLS ({@code fencer server --tls-cert ... [--tls-ca ...]}), connect through the builders
 * with the CA that issued the servers' certificates and, when they require one, this client's certificate
 * ({@code fencer certs} makes all of them):
 *
 * <pre>{@code
 * FencerClient fencer = Fencer.newBuilder().endpoints("10.0.0.5:7070")
 *         .tls(Path.of("ca.pem"), Path.of("billing.pem"), Path.of("billing-key.pem")).build();
 * FencedStore store = Fencer.newStoreBuilder().endpoint("10.0.0.5:7070").lockService(fencer)
 *         .tls(Path.of("ca.pem"), Path.of("billing.pem"), Path.of("billing-key.pem")).build();
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

    /**
     * Connects to a fenced store at {@code endpoint} ({@code host:port}): a {@code fencer store-server}, or the
     * client port of a {@code fencer server}, which hosts a store beside the lock service. This is the store
     * client's entry point; without a lock service its stale refusals cannot be diagnosed (see
     * {@link #store(String, FencerClient)}).
     */
    public static FencedStore store(String endpoint) {
        return newStoreBuilder().endpoint(endpoint).build();
    }

    /**
     * Connects to a fenced store at {@code endpoint}, diagnosing stale refusals with {@code lockService} (which the
     * store client does not close).
     */
    public static FencedStore store(String endpoint, FencerClient lockService) {
        return newStoreBuilder().endpoint(endpoint).lockService(lockService).build();
    }

    /** Returns a builder for a store client with non-default settings. */
    public static FencedStore.Builder newStoreBuilder() {
        return io.fencer.client.internal.DefaultFencedStore.newBuilder();
    }
}

package io.fencer.server;

import io.fencer.api.v1.StoreGrpc;
import io.fencer.server.admin.AdminHttpServer;
import io.fencer.server.admin.JvmMeters;
import io.fencer.server.auth.AclFileException;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.RefusedCalls;
import io.fencer.server.http.ConnectHttpServer;
import io.fencer.server.rpc.GrpcEndpoints;
import io.fencer.server.store.StoreRole;
import io.fencer.server.tls.TlsMaterial;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running store server: the fenced store ({@code fencer.v1.Store}) alone on its own gRPC port, with the admin
 * HTTP endpoint ({@code /healthz}, {@code /metrics}). This is the resource of a real deployment, separate from the
 * lock service: it needs no connection to it, only the tokens clients bring (and, with token keys, the same keys).
 *
 * <pre>{@code
 * try (FencerStoreServer store = FencerStoreServer.start(StoreServerConfig.defaults(dir).withPorts(0, 0))) {
 *     ... clients write to 127.0.0.1:store.port() ...
 * }
 * }</pre>
 */
public final class FencerStoreServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencerStoreServer.class);

    private final StoreServerConfig config;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CountDownLatch terminated = new CountDownLatch(1);
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final JvmMeters jvm = JvmMeters.bind(registry);
    /** Names the callers of tests without TLS; null in production, where only client certificates do. */
    private final ServerInterceptor testIdentities;
    private volatile Authorizer authorizer;
    private volatile StoreRole store;
    private volatile Server grpc;
    private volatile AdminHttpServer admin;
    private volatile ConnectHttpServer http;

    private FencerStoreServer(StoreServerConfig config, ServerInterceptor testIdentities) {
        this.config = config;
        this.testIdentities = testIdentities;
    }

    /**
     * Opens the store and starts serving.
     *
     * @throws io.fencer.core.UnavailableException when the data directory cannot be opened (e.g. another process
     *     holds it)
     * @throws IOException when a port cannot be bound
     */
    public static FencerStoreServer start(StoreServerConfig config) throws IOException {
        return start(config, null);
    }

    /** Starts a store server whose callers {@code testIdentities} names: for tests without TLS only. */
    static FencerStoreServer start(StoreServerConfig config, ServerInterceptor testIdentities) throws IOException {
        FencerStoreServer server = new FencerStoreServer(Objects.requireNonNull(config, "config"), testIdentities);
        try {
            server.startAll();
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        return server;
    }

    private void startAll() throws IOException {
        // Read first: a bad certificate or ACL file must stop the start before the store opens or a port binds.
        TlsMaterial tls = config.tls() == null ? null : config.tls().load();
        authorizer = config.acl() == null ? Authorizer.allowingEveryone() : Authorizer.fromFile(config.acl());
        // No lock service here: a CreateScope's grant is checked by its signature alone (ScopeClaims).
        store = StoreRole.open(config.dataDir(), config.store().withKeys(config.tokenKeys()), registry, authorizer,
                null, io.fencer.server.store.RefusalListener.NONE, config.ports().backupStallTimeout());
        ServerServiceDefinition service = ServerInterceptors.intercept(store.service(),
                new RefusedCalls(registry, config.store().ticker()));
        if (testIdentities != null) {
            service = ServerInterceptors.intercept(service, testIdentities);
        }
        // Event loops that never spin: the store's writes wait for its workers, not for a Raft commit, and its
        // one-client cycle was not measured with a spin.
        grpc = GrpcEndpoints.start(config.host(), config.port(), StoreRole.INBOUND_MESSAGE_BYTES_MAX,
                List.of(service), tls, null, config.ports(), registry, config.store().ticker());
        if (config.adminPort() >= 0) {
            admin = AdminHttpServer.start(config.host(), config.adminPort(), tls, this::health, registry::scrape,
                    config.ports(), registry, config.store().ticker());
        }
        if (config.httpPort() >= 0) {
            http = ConnectHttpServer.start(config.host(), config.httpPort(), tls, List.of(service),
                    List.of(StoreGrpc.getServiceDescriptor()), config.ports(), registry, config.store().ticker());
        }
        LOG.info("fencer store server serving on {}:{} (admin {}, http {}, tokens {}, {}, data {}, java {})",
                config.host(), port(), admin == null ? "off" : config.host() + ":" + admin.port(),
                http == null ? "off" : config.host() + ":" + http.port(),
                config.tokenKeys() == null ? "unsigned" : "signed", FencerServer.describe(tls), config.dataDir(),
                Runtime.version());
    }

    private AdminHttpServer.Health health() {
        return AdminHttpServer.storeHealth(!closed.get(), store.engine().unitsOpen());
    }

    /**
     * Reads the ACL file again; calls that start from now on are checked against its rules. A file that does not
     * parse leaves the rules in force (and is logged, naming the line).
     *
     * @throws AclFileException when the file cannot be read or does not parse
     * @throws IllegalStateException when the server was started without an ACL file
     */
    public void reloadAcl() {
        Authorizer current = authorizer;
        if (current == null) {
            throw new IllegalStateException("the store server is not started");
        }
        current.reload();
    }

    /** Returns the bound gRPC port. */
    public int port() {
        Server server = grpc;
        return server == null ? 0 : server.getPort();
    }

    /** Returns the bound admin HTTP port, or -1 when off. */
    public int adminPort() {
        AdminHttpServer server = admin;
        return server == null ? -1 : server.port();
    }

    /** Returns the bound HTTP port (Connect protocol), or -1 when off. */
    public int httpPort() {
        ConnectHttpServer server = http;
        return server == null ? -1 : server.port();
    }

    /** Stops serving, waits a short grace period for calls in flight, and closes the store. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            if (http != null) {
                http.close();
            }
            Server server = grpc;
            if (server != null) {
                server.shutdown();
                if (store != null) {
                    store.shutdownStreams();
                }
                GrpcEndpoints.awaitCalls(server);
            }
            if (admin != null) {
                admin.close();
            }
            if (store != null) {
                store.close();
            }
            jvm.close();
            registry.close();
            LOG.info("fencer store server closed");
        } finally {
            terminated.countDown();
        }
    }

    /** Returns the store role (for tests). */
    StoreRole store() {
        return store;
    }

    /** Blocks until the server is closed. */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    @Override
    public String toString() {
        return "FencerStoreServer[" + config.host() + ":" + port() + ", " + config.dataDir() + "]";
    }
}

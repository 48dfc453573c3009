package io.fencer.server;

import io.fencer.core.TokenKeys;
import io.fencer.server.net.PortLimits;
import io.fencer.server.tls.TlsFiles;
import io.fencer.store.StoreOptions;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The settings of a store server ({@link FencerStoreServer}): the fenced store alone, without the lock service.
 *
 * @param dataDir the store's RocksDB directory
 * @param host the address to bind (default 127.0.0.1)
 * @param port the gRPC port (default 7080; 0 = any free port)
 * @param adminPort the admin HTTP port for /healthz and /metrics (default 7081; 0 = any free; -1 = off)
 * @param tokenKeys the keys sequencers must be signed with; null = plain (unsigned) sequencers are accepted
 * @param store the store's limits and ticker (its keys are replaced by {@code tokenKeys})
 * @param acl the ACL file every call is checked against (see {@link io.fencer.server.auth.AclFile}); null = every
 *     caller may make every call (the default)
 * @param tls the TLS files: the gRPC port serves TLS only and the admin port HTTPS; with a client CA, clients must
 *     present its certificates; null = plaintext
 * @param httpPort the HTTP port serving the unary Store methods in the Connect protocol (HTTPS with {@code tls});
 *     -1 = off (the default here; the CLI's default is the port + 3), 0 = any free port
 * @param ports the bounds of the gRPC, admin and HTTP ports against slow clients and connection floods; default
 *     {@link PortLimits#DEFAULT}
 */
public record StoreServerConfig(Path dataDir, String host, int port, int adminPort, TokenKeys tokenKeys,
        StoreOptions store, Path acl, TlsFiles tls, int httpPort, PortLimits ports) {
    public static final int DEFAULT_PORT = 7080;
    public static final int DEFAULT_ADMIN_PORT = 7081;

    public StoreServerConfig {
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(store, "store");
        checkPort("port", port, 0);
        checkPort("adminPort", adminPort, -1);
        checkPort("httpPort", httpPort, -1);
        Objects.requireNonNull(ports, "ports");
    }

    /** Returns settings without an HTTP port. */
    public StoreServerConfig(Path dataDir, String host, int port, int adminPort, TokenKeys tokenKeys,
            StoreOptions store, Path acl, TlsFiles tls) {
        this(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, -1, PortLimits.DEFAULT);
    }

    /** Returns settings without an ACL file, in plaintext. */
    public StoreServerConfig(Path dataDir, String host, int port, int adminPort, TokenKeys tokenKeys,
            StoreOptions store) {
        this(dataDir, host, port, adminPort, tokenKeys, store, null, null);
    }

    /** Returns the default settings with {@code dataDir}: 127.0.0.1:7080, admin 7081, unsigned tokens. */
    public static StoreServerConfig defaults(Path dataDir) {
        return new StoreServerConfig(dataDir, "127.0.0.1", DEFAULT_PORT, DEFAULT_ADMIN_PORT, null,
                StoreOptions.defaults(), null, null, -1, PortLimits.DEFAULT);
    }

    public StoreServerConfig withHost(String host) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    public StoreServerConfig withPorts(int port, int adminPort) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    public StoreServerConfig withTokenKeys(TokenKeys tokenKeys) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    public StoreServerConfig withStore(StoreOptions store) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    /** Returns these settings checking every call against the ACL file {@code acl} (null = no checks). */
    public StoreServerConfig withAcl(Path acl) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    /** Returns these settings serving TLS with {@code tls}, or plaintext when null. */
    public StoreServerConfig withTls(TlsFiles tls) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    /** Returns these settings serving the HTTP port on {@code httpPort} (-1 = off, 0 = any free port). */
    public StoreServerConfig withHttpPort(int httpPort) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    /** Returns these settings with {@code ports} as the ports' timeouts and connection caps. */
    public StoreServerConfig withPortLimits(PortLimits ports) {
        return new StoreServerConfig(dataDir, host, port, adminPort, tokenKeys, store, acl, tls, httpPort, ports);
    }

    private static void checkPort(String name, int port, int lowest) {
        if (port < lowest || port > 65_535) {
            throw new IllegalArgumentException(name + " " + port + " is outside [" + lowest + ", 65535]");
        }
    }
}

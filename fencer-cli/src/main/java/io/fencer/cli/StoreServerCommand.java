package io.fencer.cli;

import io.fencer.server.FencerStoreServer;
import io.fencer.server.StoreServerConfig;
import io.fencer.store.StoreOptions;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer store-server}: runs the fenced key-value store alone (the resource that refuses stale tokens) until
 * SIGINT or SIGTERM. It needs no lock server: clients bring the tokens. With {@code --acl} every call is checked
 * against the ACL file, which SIGHUP makes the server read again.
 */
@Command(name = "store-server", mixinStandardHelpOptions = true,
        description = "Runs the fenced store alone (no lock service) until SIGINT or SIGTERM.")
final class StoreServerCommand implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", defaultValue = "fencer-store-data",
            description = "Data directory of the store, RocksDB (default: ${DEFAULT-VALUE} in the working "
                    + "directory).")
    Path dataDir;

    @Option(names = "--host", paramLabel = "HOST", defaultValue = "127.0.0.1",
            description = "Address to bind (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "7080",
            description = "gRPC port; 0 = any free port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--admin-port", paramLabel = "PORT", defaultValue = "7081",
            description = "Admin HTTP port for /healthz and /metrics; -1 = off (default: ${DEFAULT-VALUE}).")
    int adminPort;

    @Option(names = "--http-port", paramLabel = "PORT",
            description = "HTTP port serving every unary Store method in the Connect protocol, JSON or binary "
                    + "bodies, each as a POST to its path, as in /fencer.v1.Store/Write (HTTPS with --tls-*); 0 = off "
                    + "(default: port + 3, 7083 for the default port; any free port when --port is 0).")
    Integer httpPort;

    @Option(names = "--token-key", paramLabel = "FILE",
            description = "Token key file (from 'fencer keygen'): refuse tokens not signed with its keys "
                    + "(default: accept unsigned tokens).")
    Path tokenKeyFile;

    @Option(names = "--acl", paramLabel = "FILE",
            description = "ACL file of 'IDENTITY PERMISSION PREFIX' lines (read, write, admin) every call is checked "
                    + "against; SIGHUP reloads it (default: every caller may do everything).")
    Path aclFile;

    @Mixin
    ServerTlsOptions tls;

    @Mixin
    PortLimitOptions portLimits;

    @Mixin
    StoreLimitOptions storeLimits;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        StoreServerConfig config = config();
        FencerStoreServer server = FencerStoreServer.start(config);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "fencer-store-server-shutdown"));
        if (config.acl() != null) {
            ServerCommand.installAclReload(server::reloadAcl);
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println("fencer store-server serving on " + config.host() + ":" + server.port() + " ("
                + ServerCommand.adminDescription(config.host(), server.adminPort(), config.tls() != null) + ", "
                + ServerCommand.httpDescription(config.host(), server.httpPort(), config.tls() != null) + ", "
                + ServerCommand.tlsDescription(config.tls()) + ", data " + config.dataDir() + ")");
        out.flush();
        server.awaitTermination();
        return Main.EXIT_OK;
    }

    /** Returns the store server settings these options describe. */
    StoreServerConfig config() {
        checkPort("--port", port, 0);
        checkPort("--admin-port", adminPort, -1);
        if (httpPort != null) {
            checkPort("--http-port", httpPort, 0);
        }
        // In the config, -1 is off and 0 any free port; on the command line 0 is off, as for `fencer server`.
        int http = httpPort != null ? (httpPort == 0 ? -1 : httpPort) : port == 0 ? 0 : port + 3;
        if (httpPort == null) {
            ServerCommand.checkDerivedPort(spec, "HTTP port", "--http-port", 3, http);
        }
        // One port twice would fail the start with the JDK's bare "Address already in use", naming neither.
        checkApart("--admin-port", adminPort, "--port", port);
        checkApart("--http-port", http, "--port", port);
        checkApart("--http-port", http, "--admin-port", adminPort);
        return StoreServerConfig.defaults(ServerCommand.dataDirectory(spec, dataDir)).withHost(host).withHttpPort(http)
                .withPorts(port, adminPort).withTokenKeys(KeygenCommand.load(spec, tokenKeyFile))
                .withAcl(aclFile == null ? null : aclFile.toAbsolutePath().normalize())
                .withTls(tls.files(host)).withPortLimits(portLimits.limits())
                .withStore(storeLimits.apply(StoreOptions.defaults()));
    }

    /** Refuses {@code option}'s port when it is {@code other}'s; 0 (any free port) and -1 (off) take none. */
    private void checkApart(String option, int value, String other, int otherValue) {
        if (value > 0 && value == otherValue) {
            throw new ParameterException(spec.commandLine(), option + " " + value + " is the same port as " + other
                    + ": give every port its own number");
        }
    }

    private void checkPort(String option, int value, int lowest) {
        if (value < lowest || value > 65_535) {
            throw new ParameterException(spec.commandLine(), option + " " + value + " is outside [" + lowest
                    + ", 65535]");
        }
    }
}

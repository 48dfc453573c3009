package io.fencer.chaos.process;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The command line of the store server process the harness starts, {@code fencer store-server}: the options the
 * harness uses, written in one place. The CLI's tests read {@link #toArguments()} with the real
 * {@code store-server} command and check that every option arrives.
 *
 * <p>Each option is one token, {@code --name=value}, so a value is never taken for an option or an {@code @file}.
 *
 * @param dataDirectory the store's data directory (RocksDB)
 * @param port the gRPC port
 * @param adminPort the admin HTTP port ({@code /healthz}, {@code /metrics})
 * @param host the address the store binds (its network host's address when the run has network faults)
 */
public record StoreServerArguments(Path dataDirectory, int port, int adminPort, String host) {
    /** The subcommand that runs a store server. */
    static final String SUBCOMMAND = "store-server";

    /** The arguments of a store bound to the loopback address. */
    public StoreServerArguments(Path dataDirectory, int port, int adminPort) {
        this(dataDirectory, port, adminPort, ServerArguments.LOOPBACK);
    }

    public StoreServerArguments {
        Objects.requireNonNull(dataDirectory, "dataDirectory");
        Objects.requireNonNull(host, "host");
    }

    /** Returns the subcommand and its options, {@code store-server --data=DIR --port=PORT --admin-port=PORT ...}. */
    public List<String> toArguments() {
        List<String> arguments = List.of(SUBCOMMAND, "--data=" + dataDirectory, "--port=" + port,
                "--admin-port=" + adminPort, "--http-port=0"); // off: port + 3 may be another server's port
        // the loopback is the store's default: older command lines stay as they were
        return host.equals(ServerArguments.LOOPBACK) ? arguments
                // plaintext on purpose: a run's private namespaces on one machine, which only the harness reaches
                : java.util.stream.Stream.concat(arguments.stream(), java.util.stream.Stream.of("--host=" + host,
                        "--insecure")).toList();
    }
}

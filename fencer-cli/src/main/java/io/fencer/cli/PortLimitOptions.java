package io.fencer.cli;

import io.fencer.server.net.PortLimits;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The options of {@code fencer server} and {@code fencer store-server} that bound their ports against slow clients
 * and connection floods ({@link PortLimits}); their defaults are {@link PortLimits#DEFAULT}'s.
 */
final class PortLimitOptions {
    @Option(names = "--handshake-timeout", paramLabel = "DURATION", defaultValue = "10s",
            converter = Durations.Converter.class,
            description = "Every port: how long a new connection may take to finish its TLS handshake (on the gRPC "
                    + "port, with or without TLS, also its HTTP/2 preface) (default: ${DEFAULT-VALUE}).")
    Duration handshakeTimeout;

    @Option(names = "--header-read-timeout", paramLabel = "DURATION", defaultValue = "5s",
            converter = Durations.Converter.class,
            description = "Admin and HTTP ports: how long a client may take to send a request's line and headers "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration headerReadTimeout;

    @Option(names = "--body-read-timeout", paramLabel = "DURATION", defaultValue = "10s",
            converter = Durations.Converter.class,
            description = "Admin and HTTP ports: how long a client may take to send a request's body "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration bodyReadTimeout;

    @Option(names = "--http-idle-timeout", paramLabel = "DURATION", defaultValue = "30s",
            converter = Durations.Converter.class,
            description = "Admin and HTTP ports: how long a keep-alive connection may wait for its next request "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration httpIdleTimeout;

    @Option(names = "--http-connections-max", paramLabel = "N", defaultValue = "1024",
            description = "Most connections open at once on each of the admin and HTTP ports; more are closed as "
                    + "they are accepted (default: ${DEFAULT-VALUE}).")
    int httpConnectionsMax;

    @Option(names = "--http-connections-per-address-max", paramLabel = "N", defaultValue = "256",
            description = "Most connections from one remote address on each of the admin and HTTP ports "
                    + "(default: ${DEFAULT-VALUE}; raise it for 'fencer bench lock --http' with more clients).")
    int httpConnectionsPerAddressMax;

    @Option(names = "--grpc-idle-timeout", paramLabel = "DURATION", defaultValue = "30m",
            converter = Durations.Converter.class,
            description = "gRPC port: how long a connection may stay without calls before it is closed; its client "
                    + "reconnects when it next calls (default: ${DEFAULT-VALUE}).")
    Duration grpcIdleTimeout;

    @Option(names = "--grpc-connections-max", paramLabel = "N", defaultValue = "4096",
            description = "Most connections open at once on the gRPC port, lowered to half the process's file "
                    + "descriptor limit when that is lower (default: ${DEFAULT-VALUE}).")
    int grpcConnectionsMax;

    @Option(names = "--grpc-connections-per-address-max", paramLabel = "N", defaultValue = "512",
            description = "Most gRPC connections from one remote address (default: ${DEFAULT-VALUE}; a client holds "
                    + "one or two per server).")
    int grpcConnectionsPerAddressMax;

    @Option(names = "--backup-stall-timeout", paramLabel = "DURATION", defaultValue = "1m",
            converter = Durations.Converter.class,
            description = "gRPC port: how long a backup may wait for its client to take its next piece before the "
                    + "server ends it, freeing its place among the backups in flight (default: ${DEFAULT-VALUE}).")
    Duration backupStallTimeout;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Returns the limits these options name; an option out of range is a usage error naming it. */
    PortLimits limits() {
        try {
            return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                    httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                    grpcConnectionsPerAddressMax, backupStallTimeout);
        } catch (IllegalArgumentException e) {
            String message = e.getMessage();
            for (Map.Entry<String, String> name : OPTION_NAMES.entrySet()) {
                message = message.replace(name.getKey(), name.getValue());
            }
            throw new ParameterException(command.commandLine(), message);
        }
    }

    /** The option of each limit, to name in a usage error what the user typed. */
    private static final Map<String, String> OPTION_NAMES = Map.of("handshakeTimeout", "--handshake-timeout",
            "headerReadTimeout", "--header-read-timeout", "bodyReadTimeout", "--body-read-timeout",
            "httpIdleTimeout", "--http-idle-timeout", "httpConnectionsMax", "--http-connections-max",
            "httpConnectionsPerAddressMax", "--http-connections-per-address-max", "grpcIdleTimeout",
            "--grpc-idle-timeout", "grpcConnectionsMax", "--grpc-connections-max", "grpcConnectionsPerAddressMax",
            "--grpc-connections-per-address-max", "backupStallTimeout", "--backup-stall-timeout");
}

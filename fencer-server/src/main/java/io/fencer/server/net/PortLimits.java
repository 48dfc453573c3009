package io.fencer.server.net;

import java.time.Duration;

/**
 * The bounds of a server's listening ports against slow clients and connection floods, each enforced by closing
 * the connection (with a log line at most once per interval per address, and a metric): the gRPC client port, the
 * admin port and the HTTP port. The two HTTP ports (admin, Connect) each have their own counts under the same
 * bounds.
 *
 * @param handshakeTimeout how long a new connection may take to complete its TLS handshake, on every port (and, on
 *     the gRPC port, its HTTP/2 preface and settings, with or without TLS); default 10 s
 * @param headerReadTimeout how long an HTTP client may take to send a request's line and headers, from their first
 *     byte (on a new connection, from the connection or its handshake); default 5 s
 * @param bodyReadTimeout how long an HTTP client may take to send a request's body once its headers arrived;
 *     default 10 s
 * @param httpIdleTimeout how long an HTTP keep-alive connection may wait for its next request; default 30 s
 * @param httpConnectionsMax most connections open on each HTTP port (admin, HTTP) at once; default 1,024
 * @param httpConnectionsPerAddressMax most connections from one remote address on each HTTP port; default 256
 * @param grpcIdleTimeout how long a gRPC connection may stay without any call before the server closes it
 *     (gracefully: clients reconnect when they next call); default 30 min
 * @param grpcConnectionsMax most connections open on the gRPC port at once; default 4,096, lowered at start to half
 *     the process's file descriptor limit when that is lower (see {@link #effectiveConnectionsMax})
 * @param grpcConnectionsPerAddressMax most gRPC connections from one remote address; default 512 (a Fencer client
 *     holds one or two per endpoint, so one host runs hundreds of client processes)
 * @param backupStallTimeout how long a backup (lock or store) may wait for its client to take its next piece before
 *     the server ends it and frees its place among the backups in flight, its file or snapshot: a client that opens a
 *     backup and stops reading would otherwise hold them while its connection lives; checked once per timeout, so a
 *     stalled backup ends between one and two timeouts after its last piece went out; default 1 min
 */
public record PortLimits(Duration handshakeTimeout, Duration headerReadTimeout, Duration bodyReadTimeout,
        Duration httpIdleTimeout, int httpConnectionsMax, int httpConnectionsPerAddressMax, Duration grpcIdleTimeout,
        int grpcConnectionsMax, int grpcConnectionsPerAddressMax, Duration backupStallTimeout) {
    /** The longest timeout of any kind: past it a "timeout" no longer bounds anything an operator would notice. */
    public static final Duration TIMEOUT_MAX = Duration.ofHours(24);
    /** The most connections any cap may allow: far beyond what one process's file descriptors allow anyway. */
    public static final int CONNECTIONS_MAX = 1_000_000;
    public static final PortLimits DEFAULT = new PortLimits(Duration.ofSeconds(10), Duration.ofSeconds(5),
            Duration.ofSeconds(10), Duration.ofSeconds(30), 1_024, 256, Duration.ofMinutes(30), 4_096, 512,
            Duration.ofMinutes(1));

    public PortLimits {
        checkTimeout("handshakeTimeout", handshakeTimeout);
        checkTimeout("headerReadTimeout", headerReadTimeout);
        checkTimeout("bodyReadTimeout", bodyReadTimeout);
        checkTimeout("httpIdleTimeout", httpIdleTimeout);
        checkTimeout("grpcIdleTimeout", grpcIdleTimeout);
        checkTimeout("backupStallTimeout", backupStallTimeout);
        checkCaps("http", httpConnectionsMax, httpConnectionsPerAddressMax);
        checkCaps("grpc", grpcConnectionsMax, grpcConnectionsPerAddressMax);
    }

    private static void checkTimeout(String name, Duration timeout) {
        if (timeout == null || timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(TIMEOUT_MAX) > 0) {
            throw new IllegalArgumentException(name + " " + timeout + " must lie in [1ms, " + TIMEOUT_MAX + "]");
        }
    }

    private static void checkCaps(String port, int connectionsMax, int perAddressMax) {
        if (connectionsMax < 1 || connectionsMax > CONNECTIONS_MAX) {
            throw new IllegalArgumentException(port + "ConnectionsMax " + connectionsMax + " must lie in [1, "
                    + CONNECTIONS_MAX + "]");
        }
        if (perAddressMax < 1 || perAddressMax > connectionsMax) {
            throw new IllegalArgumentException(port + "ConnectionsPerAddressMax " + perAddressMax
                    + " must lie in [1, " + port + "ConnectionsMax " + connectionsMax + "]");
        }
    }

    public PortLimits withHandshakeTimeout(Duration handshakeTimeout) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    /** Returns these limits with the HTTP ports' timeouts: headers, body, and keep-alive idle. */
    public PortLimits withHttpTimeouts(Duration headerReadTimeout, Duration bodyReadTimeout,
            Duration httpIdleTimeout) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    /** Returns these limits with each HTTP port's connection caps. */
    public PortLimits withHttpConnections(int httpConnectionsMax, int httpConnectionsPerAddressMax) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    public PortLimits withGrpcIdleTimeout(Duration grpcIdleTimeout) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    /** Returns these limits with the gRPC port's connection caps. */
    public PortLimits withGrpcConnections(int grpcConnectionsMax, int grpcConnectionsPerAddressMax) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    /** Returns these limits with {@code backupStallTimeout}. */
    public PortLimits withBackupStallTimeout(Duration backupStallTimeout) {
        return new PortLimits(handshakeTimeout, headerReadTimeout, bodyReadTimeout, httpIdleTimeout,
                httpConnectionsMax, httpConnectionsPerAddressMax, grpcIdleTimeout, grpcConnectionsMax,
                grpcConnectionsPerAddressMax, backupStallTimeout);
    }

    /**
     * Returns the cap a port can keep: {@code connectionsMax}, or half of {@code fileDescriptorsMax} when that is
     * lower (the other half is for the data files, the Raft log, the other ports and the JVM itself): a cap above the
     * process's file descriptor limit would let a flood take every descriptor before the cap refused anything.
     *
     * @param fileDescriptorsMax the process's limit, or a negative number when unknown (the cap is kept)
     */
    public static int effectiveConnectionsMax(int connectionsMax, long fileDescriptorsMax) {
        if (fileDescriptorsMax <= 0) {
            return connectionsMax;
        }
        return (int) Math.max(1, Math.min(connectionsMax, fileDescriptorsMax / 2));
    }
}

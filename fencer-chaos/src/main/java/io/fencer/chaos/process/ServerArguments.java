package io.fencer.chaos.process;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The command line of a lock server process the harness starts, {@code fencer server}: the options the harness
 * uses, written in one place. The CLI's tests read {@link #toArguments()} with the real {@code server} command and
 * check that every option arrives, so the two sides cannot drift apart.
 *
 * <p>Each option is one token, {@code --name=value}, so a value is never taken for an option or an {@code @file}.
 *
 * @param dataDirectory the server's data directory (Raft log, snapshots, the hosted store)
 * @param port the gRPC client port
 * @param adminPort the admin HTTP port ({@code /healthz}, {@code /metrics})
 * @param raftPort the Raft port
 * @param id this peer's id, which names its entry in {@code peers}
 * @param peers every peer of the group, this one included; empty for a group of one
 * @param host the address the server binds (its network host's address when the run has network faults)
 * @param raftSecretFile the group secret every peer proves on the Raft port, the same file for every peer of the
 *     group (the first server to start makes it); null for a group of one, which keeps its own in its data directory
 */
public record ServerArguments(Path dataDirectory, int port, int adminPort, int raftPort, String id,
        List<Peer> peers, String host, Path raftSecretFile) {
    /** The subcommand that runs a lock server. */
    static final String SUBCOMMAND = "server";
    /** The address servers bind when every process of a run shares the host's loopback. */
    public static final String LOOPBACK = "127.0.0.1";

    /** The arguments of a server bound to the loopback address. */
    public ServerArguments(Path dataDirectory, int port, int adminPort, int raftPort, String id, List<Peer> peers,
            Path raftSecretFile) {
        this(dataDirectory, port, adminPort, raftPort, id, peers, LOOPBACK, raftSecretFile);
    }

    public ServerArguments {
        Objects.requireNonNull(dataDirectory, "dataDirectory");
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(host, "host");
        peers = List.copyOf(peers);
        if (!peers.isEmpty() && peers.stream().noneMatch(peer -> peer.id().equals(id))) {
            throw new IllegalArgumentException("server " + id + " is not among its peers " + peers);
        }
        if (peers.size() > 1 && raftSecretFile == null) {
            throw new IllegalArgumentException("server " + id + " of a group of " + peers.size() + " needs a group "
                    + "secret file");
        }
    }

    /**
     * One peer of a group, as {@code --peers} spells it: {@code id=host:port:raftPort}.
     *
     * @param id the peer's id; no {@code =} or {@code ,} in it
     * @param host the peer's host; no {@code :} or {@code ,} in it
     * @param port the peer's gRPC client port
     * @param raftPort the peer's Raft port
     */
    public record Peer(String id, String host, int port, int raftPort) {
        public Peer {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(host, "host");
            if (id.isEmpty() || id.contains("=") || id.contains(",")) {
                throw new IllegalArgumentException("peer id '" + id + "' is empty or has '=' or ','");
            }
            if (host.isEmpty() || host.contains(":") || host.contains(",")) {
                throw new IllegalArgumentException("peer host '" + host + "' is empty or has ':' or ','");
            }
        }

        String toArgument() {
            return id + "=" + host + ":" + port + ":" + raftPort;
        }
    }

    /** Returns the subcommand and its options, {@code server --data=DIR --port=PORT ...}. */
    public List<String> toArguments() {
        List<String> arguments = new ArrayList<>(List.of(SUBCOMMAND, "--data=" + dataDirectory, "--port=" + port,
                "--admin-port=" + adminPort, "--raft-port=" + raftPort, "--id=" + id,
                "--http-port=0")); // off: the harness speaks gRPC, and port + 3 may be another server's port
        if (!host.equals(LOOPBACK)) {
            arguments.add("--host=" + host); // the loopback is the server's default: older command lines stay
            // plaintext on purpose: a run's private namespaces on one machine, which only the harness reaches
            arguments.add("--insecure");
        }
        if (!peers.isEmpty()) {
            arguments.add("--peers=" + peers.stream().map(Peer::toArgument).collect(Collectors.joining(",")));
        }
        if (raftSecretFile != null) {
            arguments.add("--raft-secret-file=" + raftSecretFile);
        }
        return List.copyOf(arguments);
    }

    /**
     * Returns the arguments of a peer that joins a running group instead of founding one: {@link #toArguments()}
     * (which must name no {@code peers}) with {@code --join} and {@code --join-wait}.
     *
     * @param group client addresses of peers of the group, {@code host:port}
     * @param joinWait how long the peer waits to be added before it gives up
     */
    public List<String> toJoinArguments(List<String> group, java.time.Duration joinWait) {
        if (!peers.isEmpty() || group.isEmpty()) {
            throw new IllegalArgumentException("a joining peer takes the group from --join alone: peers " + peers
                    + ", group " + group);
        }
        List<String> arguments = new ArrayList<>(toArguments());
        arguments.add("--join=" + String.join(",", group));
        arguments.add("--join-wait=" + Math.max(1, joinWait.toSeconds()) + "s");
        return List.copyOf(arguments);
    }
}

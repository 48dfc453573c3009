package io.fencer.cli;

import io.fencer.cli.exec.HangupSignals;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.SkewedTicker;
import io.fencer.server.FencerServer;
import io.fencer.server.PeerAuth;
import io.fencer.server.IdentityQuotas;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.GroupSecret;
import io.fencer.server.tls.TlsFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer server}: runs one peer of a Fencer group until SIGINT or SIGTERM.
 *
 * <p>The server hosts the fenced store on the same port unless {@code --no-store}; {@code --token-key} signs every
 * token it grants. Without {@code --peers} the server is a group of one. With {@code --peers}, this peer's host and
 * ports come from its own entry (its {@code --id}), so every peer can be started from the same list; {@code --peers}
 * founds the group, and on a restart with existing data the group's durable configuration (changed at run time with
 * {@code fencer peers}) is in force, a different {@code --peers} being logged and ignored. With {@code --join} the
 * server starts as a peer an existing group is to add ({@link JoinSteps}). With
 * {@code --acl} every call is checked against the ACL file, which SIGHUP makes the server read again.
 * With {@code --tls-cert} and {@code --tls-key} every port is TLS; a plaintext server binds only a loopback address
 * unless {@code --insecure}.
 *
 * <p>Peers prove to each other on the Raft port that they hold the group's secret ({@code --raft-secret-file}, the
 * same file on every peer, made at the first start if absent; a group of one keeps its own in {@code DATA/raft.secret}
 * without being told). With TLS and a CA the certificates authenticate peers as well, and the secret file is
 * optional. {@code --insecure-raft} turns the Raft port's authentication off. {@code --sessions-per-identity-max} and its siblings set
 * the per-identity quotas.
 */
@Command(name = "server", mixinStandardHelpOptions = true,
        description = "Runs a Fencer server (one peer of a group) until SIGINT or SIGTERM.")
final class ServerCommand implements Callable<Integer> {
    static final int DEFAULT_PORT = 7070;

    @Option(names = "--data", paramLabel = "DIR", defaultValue = "fencer-data",
            description = "Data directory: Raft log and snapshots (default: ${DEFAULT-VALUE} in the working "
                    + "directory).")
    Path dataDir;

    @Option(names = "--host", paramLabel = "HOST",
            description = "Address to bind (default: 127.0.0.1, or this peer's host in --peers).")
    String host;

    @Option(names = "--port", paramLabel = "PORT",
            description = "gRPC client port; 0 = any free port (default: 7070, or this peer's port in --peers).")
    Integer port;

    @Option(names = "--admin-port", paramLabel = "PORT",
            description = "Admin HTTP port for /healthz and /metrics; -1 = off (default: port + 1, e.g. 7071).")
    Integer adminPort;

    @Option(names = "--raft-port", paramLabel = "PORT",
            description = "Raft port (default: port + 2, or this peer's Raft port in --peers).")
    Integer raftPort;

    @Option(names = "--id", paramLabel = "ID", defaultValue = "n1",
            description = "This peer's id in --peers (default: ${DEFAULT-VALUE}).")
    String id;

    @Option(names = "--peers", split = ",", paramLabel = "ID=HOST:PORT[:RAFTPORT]", converter = Converters.Peer.class,
            description = {"Every peer of the group, this one included, comma-separated",
                "(default: this peer alone). It founds the group: on a restart with",
                "existing data the group's durable configuration is in force (see",
                "'fencer peers'), and a different --peers is logged and ignored."})
    List<ServerConfig.Peer> peers = List.of();

    @Option(names = "--join", split = ",", paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
            description = {"Join an existing group instead of founding one: client",
                "addresses of its peers. This peer waits until the group adds it",
                "('fencer peers add ID --raft HOST:PORT --client HOST:PORT'),",
                "at most --join-wait; restart a joined peer with the same flags."})
    List<String> join = List.of();

    @Option(names = "--join-wait", paramLabel = "DURATION", defaultValue = "5m",
            converter = Durations.Converter.class,
            description = {"How long --join waits to be added (default: ${DEFAULT-VALUE}); a wait",
                "that runs out while the group copies its state to this peer goes",
                "on while the copy does."})
    Duration joinWait;

    @Option(names = "--token-key", paramLabel = "FILE",
            description = "Token key file (from 'fencer keygen'): sign every token with its first key, and make the "
                    + "hosted store refuse tokens not signed with its keys (default: unsigned tokens).")
    Path tokenKeyFile;

    @Option(names = "--no-store",
            description = "Do not host the fenced store beside the lock service (default: hosted on the same port, "
                    + "data in DIR/store).")
    boolean noStore;

    @Option(names = "--acl", paramLabel = "FILE",
            description = "ACL file of 'IDENTITY PERMISSION PREFIX' lines (lock, read, write, admin) every call is "
                    + "checked against, and of 'IDENTITY quota sessions|locks|waiters|watchers N' lines that set an "
                    + "identity's "
                    + "quotas; SIGHUP reloads it (default: every caller may do everything).")
    Path aclFile;

    @Option(names = "--sessions-per-identity-max", paramLabel = "N",
            description = "Most sessions one identity may have open: a client certificate's CN, or for a caller "
                    + "without one its address (anonymous@ADDRESS); an ACL file may set other quotas for some "
                    + "identities (default: ${DEFAULT-VALUE}, a tenth of the server's sessions).")
    int sessionsPerIdentityMax = IdentityQuotas.DEFAULT.sessionsPerIdentityMax();

    @Option(names = "--locks-per-identity-max", paramLabel = "N",
            description = "Most locks one identity's sessions may hold or wait for at once (default: ${DEFAULT-VALUE},"
                    + " a tenth of the server's lock records).")
    int locksPerIdentityMax = IdentityQuotas.DEFAULT.locksPerIdentityMax();

    @Option(names = "--waiters-per-identity-max", paramLabel = "N",
            description = "Most waits one identity's sessions may have queued at once (default: ${DEFAULT-VALUE}, a "
                    + "tenth of the waiters one lock may queue).")
    int waitersPerIdentityMax = IdentityQuotas.DEFAULT.waitersPerIdentityMax();

    @Option(names = "--watchers-per-identity-max", paramLabel = "N",
            description = "Most Watch streams one identity may have open on this peer at once (default: "
                    + "${DEFAULT-VALUE}, a tenth of a peer's watchers).")
    int watchersPerIdentityMax = IdentityQuotas.DEFAULT.watchersPerIdentityMax();

    @Option(names = "--lock-delay", paramLabel = "DURATION", defaultValue = "0s", converter = Durations.Converter.class,
            description = "How long a lock freed by session expiry stays unavailable; at most the longest session "
                    + "TTL, 1h (default: ${DEFAULT-VALUE}).")
    Duration lockDelay;

    @Option(names = "--reply-spin", paramLabel = "DURATION", defaultValue = "300us",
            converter = Durations.Converter.class,
            description = "How long an event loop of the client port polls, instead of sleeping, for the answer to a "
                    + "lone call or a lone client's next call: fewer CPU wake-ups per command on VMs whose idle CPUs "
                    + "halt; costs up to a quarter of the CPUs (at least one) while lone clients call back to back, "
                    + "nothing otherwise; 0us = off, at most 10ms (default: ${DEFAULT-VALUE}).")
    Duration replySpin;

    @Option(names = "--linger", paramLabel = "DURATION", defaultValue = "1ms", converter = Durations.Converter.class,
            description = "The longest a lone command waits for another to share its Raft log entry, once lone commands"
                    + " have lately found company (the window is half the recent entry latency, at most this): on a "
                    + "contended lock the next holder's Release and the releaser's next Acquire then share one commit; "
                    + "a lone client never waits, but its release answered before durable (one peer) waits this long "
                    + "at most for its next command; 0 = off, at most 10ms (default: ${DEFAULT-VALUE}).")
    Duration linger;

    @Option(names = "--grants-ahead", paramLabel = "N", defaultValue = "8",
            description = "On a group of one peer, the most grants of one lock answered when the holder's release "
                    + "arrives, before that release is durable, to clients that ask (the Java client does): a "
                    + "contended lock then changes hands at the clients' round trips, not at the disk's; a crash "
                    + "loses at most this many grants of a lock, each reported lost to its holder, and never "
                    + "issues a token twice; 0 = off, at most 64 (default: ${DEFAULT-VALUE}).")
    int grantsAhead;

    @Option(names = "--http-port", paramLabel = "PORT",
            description = "HTTP port of the Connect protocol: each unary method of Locks and Store is a POST to "
                    + "its path, as /fencer.v1.Locks/Acquire, with a JSON or binary body (HTTPS with --tls-*); it serves "
                    + "the live web console at /console too; "
                    + "0 = off (default: port + 3, 7073 for the default port; any free port when --port is 0).")
    Integer httpPort;

    @Option(names = "--raft-secret-file", paramLabel = "FILE",
            description = "The group secret every peer proves on the Raft port before any Raft message: the same file "
                    + "on every peer (copy it to each, keep it 0600). Made with a new random secret if FILE does not "
                    + "exist (default: a group of one keeps its own in DIR/raft.secret; a larger group without TLS "
                    + "and --tls-ca uses " + PeerAuth.GROUP_SECRET_FILE + " beside DIR, which peers on one host share).")
    Path raftSecretFile;

    @Option(names = "--insecure-raft",
            description = "Authenticate no peer on the Raft port (without TLS, anyone who can reach it can depose "
                    + "the leader and append to the log): for tests only.")
    boolean insecureRaft;

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
        ServerConfig config = config();
        JoinSteps joining = join.isEmpty() ? null : new JoinSteps(spec, join, config, tls);
        if (joining != null && !joining.check()) {
            return Main.EXIT_NOT_JOINED;
        }
        FencerServer server = joining == null ? FencerServer.start(config) : FencerServer.join(config);
        if (joining != null && !joining.awaitAdded(JoinSteps.Joiner.of(server), joinWait)) {
            return Main.EXIT_NOT_JOINED;
        }
        Thread shutdown = new Thread(server::close, "fencer-server-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdown);
        if (config.acl() != null && !installAclReload(server::reloadAcl)) {
            spec.commandLine().getErr().println("fencer: SIGHUP cannot reload the ACL file " + config.acl()
                    + " in this process (SIGHUP was ignored at start, as under nohup, or signals are unavailable):"
                    + " restart the server to change the rules");
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println("fencer server " + config.id() + " serving on " + config.host() + ":" + server.port() + " ("
                + adminDescription(config.host(), server.adminPort(), config.tls() != null) + ", "
                + httpDescription(config.host(), server.httpPort(), config.tls() != null) + ", store "
                + (config.store() == null ? "off" : "on") + ", " + tlsDescription(config.tls()) + ", data "
                + config.dataDir() + ")");
        out.flush();
        server.awaitTermination();
        return Main.EXIT_OK;
    }

    /** Returns the server settings these options describe; a contradiction among them is a usage error. */
    ServerConfig config() {
        try {
            ServerConfig.Peer.checkId(id);
        } catch (InvalidArgumentException e) {
            throw usage("--id: " + e.getMessage());
        }
        Optional<ServerConfig.Peer> self = peers.stream().filter(peer -> peer.id().equals(id)).findFirst();
        if (!join.isEmpty() && !peers.isEmpty()) {
            throw usage("--join and --peers contradict each other: a joining peer takes the group's configuration "
                    + "from the group; give --join alone");
        }
        if (!join.isEmpty() && joinWait.compareTo(JoinSteps.WAIT_MAX) > 0) {
            throw usage("--join-wait " + Durations.format(joinWait) + " is longer than the "
                    + Durations.format(JoinSteps.WAIT_MAX) + " allowed");
        }
        if (!peers.isEmpty() && self.isEmpty()) {
            throw usage("--id " + id + " is not among --peers " + peers.stream().map(ServerConfig.Peer::id)
                    .collect(Collectors.joining(", ")));
        }
        long distinctIds = peers.stream().map(ServerConfig.Peer::id).distinct().count();
        if (distinctIds != peers.size()) {
            throw usage("--peers names a peer id twice: " + peers.stream().map(ServerConfig.Peer::id)
                    .collect(Collectors.joining(", ")));
        }
        String boundHost = choose("--host", host, self.map(ServerConfig.Peer::host), "127.0.0.1");
        int clientPort = choose("--port", port, self.map(ServerConfig.Peer::port), DEFAULT_PORT);
        int raft = choose("--raft-port", raftPort, self.map(ServerConfig.Peer::raftPort),
                clientPort == 0 ? 0 : clientPort + 2);
        int admin = adminPort != null ? adminPort : clientPort == 0 ? 0 : clientPort + 1;
        int http = checkPorts(self.isPresent(), boundHost, clientPort, admin, raft);
        if (raft == 0 && (peers.size() > 1 || !join.isEmpty())) {
            throw usage("--raft-port 0 (any free port) works only for a single peer; " + peers.size() + " given");
        }
        if (replySpin.compareTo(ServerConfig.REPLY_SPIN_MAX) > 0) {
            throw usage("--reply-spin " + Durations.format(replySpin) + " is longer than the "
                    + Durations.format(ServerConfig.REPLY_SPIN_MAX) + " allowed");
        }
        if (linger.compareTo(ServerConfig.LINGER_MAX) > 0) {
            throw usage("--linger " + Durations.format(linger) + " is longer than the "
                    + Durations.format(ServerConfig.LINGER_MAX) + " allowed");
        }
        if (grantsAhead < 0 || grantsAhead > ServerConfig.GRANTS_AHEAD_MAX) {
            throw usage("--grants-ahead " + grantsAhead + " must lie in [0, " + ServerConfig.GRANTS_AHEAD_MAX + "]");
        }
        if (sessionsPerIdentityMax < 1 || locksPerIdentityMax < 1 || waitersPerIdentityMax < 1
                || watchersPerIdentityMax < 1) {
            throw usage("--sessions-per-identity-max, --locks-per-identity-max, --waiters-per-identity-max and "
                    + "--watchers-per-identity-max must be at least 1; got " + sessionsPerIdentityMax + ", "
                    + locksPerIdentityMax + ", " + waitersPerIdentityMax + ", " + watchersPerIdentityMax);
        }
        Path data = dataDirectory(spec, dataDir);
        ServerConfig defaults = ServerConfig.defaults(data);
        Duration lockDelayMax = Duration.ofMillis(defaults.limits().ttlMillisMax());
        if (lockDelay.compareTo(lockDelayMax) > 0) {
            throw usage("--lock-delay " + Durations.format(lockDelay) + " is longer than the "
                    + Durations.format(lockDelayMax) + " allowed (the longest session TTL: a holder learns that its "
                    + "session expired within its TTL)");
        }
        TlsFiles tlsFiles = tls.files(boundHost);
        return new ServerConfig(data, id, boundHost, clientPort, admin, raft, peers, lockDelay, defaults.limits(),
                SkewedTicker.fromSystemProperty(), KeygenCommand.load(spec, tokenKeyFile),
                noStore ? null : storeLimits.apply(defaults.store()),
                aclFile == null ? null : aclFile.toAbsolutePath().normalize(), tlsFiles, http,
                defaults.watch(), replySpin, peerAuth(data, tlsFiles), portLimits.limits(),
                new IdentityQuotas(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                        watchersPerIdentityMax), linger, grantsAhead);
    }

    /**
     * Checks this peer's ports, {@code self} when they came from its --peers entry, and returns the HTTP port as the
     * config takes it (-1 off, 0 any free port).
     */
    private int checkPorts(boolean self, String boundHost, int clientPort, int admin, int raft) {
        checkPort("--port", clientPort, 0);
        // A port derived from --port near the top runs past 65535: name it as derived, never as a value given.
        if (raftPort == null && !self) {
            checkDerivedPort(spec, "Raft port", "--raft-port", 2, raft);
        }
        checkPort("--raft-port", raft, 0);
        if (adminPort == null) {
            checkDerivedPort(spec, "admin port", "--admin-port", 1, admin);
        }
        checkPort("--admin-port", admin, -1);
        if (httpPort != null) {
            checkPort("--http-port", httpPort, 0);
        }
        // In the config, -1 is off and 0 any free port; on the command line --http-port 0 is off.
        int http = httpPort != null ? (httpPort == 0 ? -1 : httpPort) : clientPort == 0 ? 0 : clientPort + 3;
        if (httpPort == null) {
            checkDerivedPort(spec, "HTTP port", "--http-port", 3, http);
        }
        checkPortsApart(boundHost, clientPort, admin, raft, http);
        return http;
    }

    /**
     * Returns how this peer authenticates the others on the Raft port; reads (or makes) the secret file now, so that a
     * bad one is a usage error naming the file, never showing the secret.
     */
    private PeerAuth peerAuth(Path data, TlsFiles tlsFiles) {
        if (insecureRaft) {
            if (raftSecretFile != null) {
                throw usage("--insecure-raft and --raft-secret-file contradict each other: give one");
            }
            return PeerAuth.insecure();
        }
        if (raftSecretFile == null) {
            if (peers.size() <= 1 && join.isEmpty()) {
                return PeerAuth.defaultFor(data);
            }
            if (tlsFiles != null && tlsFiles.clientCertificatesRequired()) {
                return PeerAuth.tlsOnly();
            }
            // Beside the data directory, so that peers started on one host with sibling data directories (the
            // README's three peers, a test harness) share one secret without being told; peers on other hosts need a
            // copy, and until they have one they are refused with a line that says so.
            Path beside = data.getParent() == null ? data : data.getParent();
            return secretFile(beside.resolve(PeerAuth.GROUP_SECRET_FILE), true);
        }
        return secretFile(raftSecretFile.toAbsolutePath().normalize(), false);
    }

    /** Reads or makes the secret file {@code file}; a bad one is a usage error naming the file, never the secret. */
    private PeerAuth secretFile(Path file, boolean byDefault) {
        try {
            GroupSecret.Loaded loaded = GroupSecret.readOrCreate(file);
            if (loaded.created()) {
                PrintWriter err = spec.commandLine().getErr();
                err.println("fencer: created the group secret " + file + ": give every peer of the group this same "
                        + "file" + (byDefault ? " (the default beside the data directory: peers on other hosts need a "
                        + "copy of it, or --raft-secret-file)" : ""));
                err.flush();
            }
        } catch (IOException e) {
            throw usage("--raft-secret-file " + file + " cannot be read or made: " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw usage("--raft-secret-file: " + e.getMessage());
        }
        return PeerAuth.secretFile(file);
    }

    /**
     * Makes SIGHUP run {@code reload}; a file that does not parse was logged, naming the line, and changed nothing.
     * Returns false where signals cannot be handled (see {@link HangupSignals#install}).
     */
    static boolean installAclReload(Runnable reload) {
        return HangupSignals.install(() -> {
            try {
                reload.run();
            } catch (RuntimeException keptTheOldRules) {
                // logged by the server with the file's line; the rules read before stay in force
            }
        });
    }

    /** Returns the explicit option value, else this peer's entry's, else the default; explicit must agree. */
    private <T> T choose(String option, T explicit, Optional<T> fromPeer, T fallback) {
        if (explicit != null && fromPeer.isPresent() && !fromPeer.get().equals(explicit)) {
            throw usage(option + " " + explicit + " disagrees with peer " + id + "'s entry in --peers ("
                    + fromPeer.get() + ")");
        }
        return explicit != null ? explicit : fromPeer.orElse(fallback);
    }

    /**
     * Refuses two of this peer's ports, or two ports of --peers entries on one host, that are one port: the start
     * would fail binding it with the JDK's bare "Address already in use", naming neither the port nor the option,
     * and a --peers list with one address twice founds a group whose quorum can never be reached.
     */
    private void checkPortsApart(String boundHost, int clientPort, int admin, int raft, int http) {
        Map<String, String> taken = new HashMap<>();
        String self = peers.isEmpty() ? "" : " of peer " + id;
        claim(taken, boundHost, clientPort, "--port" + self);
        claim(taken, boundHost, admin, "--admin-port" + self);
        claim(taken, boundHost, raft, "--raft-port" + self);
        claim(taken, boundHost, http, "--http-port" + self);
        for (ServerConfig.Peer peer : peers) {
            if (!peer.id().equals(id)) {
                claim(taken, peer.host(), peer.port(), "the client port of peer " + peer.id() + " in --peers");
                claim(taken, peer.host(), peer.raftPort(), "the Raft port of peer " + peer.id() + " in --peers");
            }
        }
    }

    /** Records {@code host:port} as {@code what}'s; 0 (any free port) and -1 (off) take no port. */
    private void claim(Map<String, String> taken, String host, int port, String what) {
        if (port <= 0) {
            return;
        }
        String earlier = taken.putIfAbsent(host + ":" + port, what);
        if (earlier != null) {
            throw usage(what + " is " + host + ":" + port + ", the same as " + earlier
                    + ": give every port its own number");
        }
    }

    /**
     * Checks the {@code port} this peer derives as {@code --port} + {@code offset} for want of {@code option}: the
     * error names it as derived, and the option that sets it, since the user never gave that number.
     */
    static void checkDerivedPort(CommandSpec spec, String port, String option, int offset, int value) {
        if (value > 65_535) {
            throw new ParameterException(spec.commandLine(), "the " + port + " " + value + " (--port + " + offset
                    + ", as " + option + " was not given) is outside [0, 65535]: give " + option);
        }
    }

    /**
     * Returns {@code dir} absolute, once sure it is a directory or can be made one: a file there, or in place of one
     * of its parents, would fail the start with a bare "already exists" naming the path alone.
     */
    static Path dataDirectory(CommandSpec spec, Path dir) {
        Path data = dir.toAbsolutePath().normalize();
        for (Path existing = data; existing != null; existing = existing.getParent()) {
            if (Files.exists(existing)) {
                if (!Files.isDirectory(existing)) {
                    throw new ParameterException(spec.commandLine(), "--data " + data
                            + (existing.equals(data) ? "" : ": " + existing) + " is a file, not a directory");
                }
                break;
            }
        }
        return data;
    }

    private void checkPort(String option, int value, int lowest) {
        if (value < lowest || value > 65_535) {
            throw usage(option + " " + value + " is outside [" + lowest + ", 65535]");
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    static String httpDescription(String host, int httpPort, boolean tls) {
        return httpPort < 0 ? "http off" : "http " + (tls ? "https" : "http") + "://" + host + ":" + httpPort;
    }

    static String adminDescription(String host, int adminPort, boolean tls) {
        return adminPort < 0 ? "admin off" : "admin " + (tls ? "https" : "http") + "://" + host + ":" + adminPort;
    }

    static String tlsDescription(TlsFiles tls) {
        if (tls == null) {
            return "plaintext";
        }
        return "TLS" + (tls.clientCertificatesRequired() ? ", client certificates of " + tls.clientCa() + " required"
                : "");
    }
}

package io.fencer.server;

import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Event;
import io.fencer.server.admin.AdminHttpServer;
import io.fencer.server.admin.AdminService;
import io.fencer.server.admin.JvmMeters;
import io.fencer.server.auth.AclFileException;
import io.fencer.lock.LockView;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.auth.Quota;
import io.fencer.server.auth.RefusedCalls;
import io.fencer.server.http.ConnectHttpServer;
import io.fencer.server.http.RecentRefusals;
import io.fencer.server.locks.GrantLog;
import io.fencer.server.locks.LocksService;
import io.fencer.server.locks.PendingAcquires;
import io.fencer.server.locks.ServerMetrics;
import io.fencer.server.locks.SessionKeeper;
import io.fencer.server.locks.SessionSecrets;
import io.fencer.server.net.DiskReserve;
import io.fencer.server.peers.PeersService;
import io.fencer.server.raft.AppliedListener;
import io.fencer.server.raft.FormatLevelGate;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.raft.RestoreSeed;
import io.fencer.server.rpc.EventLoopDelays;
import io.fencer.server.rpc.GrpcEndpoints;
import io.fencer.server.rpc.MalformedRequests;
import io.fencer.server.rpc.ReplySpin;
import io.fencer.server.rpc.StreamFlow;
import io.fencer.server.store.ReplicatedStore;
import io.fencer.server.store.StoreRole;
import io.fencer.server.tls.TlsMaterial;
import io.fencer.server.watch.WatchHub;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running Fencer server: one peer of a Raft group hosting the lock state machine, its gRPC service
 * {@code fencer.v1.Locks} and the admin HTTP endpoint; and, unless {@link ServerConfig#store()} is null, the fenced
 * store ({@code fencer.v1.Store}) on the same gRPC port, with its data in {@code dataDir/store}. The store is not
 * replicated: each peer serves its own. With {@link ServerConfig#tls()} every port is TLS: the client port, the
 * admin port (HTTPS) and the Raft port, where peers authenticate each other.
 *
 * <p>Only the leader serves calls; other peers answer UNAVAILABLE with reason NOT_LEADER and the leader's
 * address. A peer that halted applying its log (see {@link RaftLockStateMachine}) serves no call at all: each answers
 * UNAVAILABLE naming the halt, and {@code /healthz} answers 503. The data directory holds the Raft log and snapshots ({@code dataDir/raft}); a server restarted on the
 * same directory recovers its state, and its sessions get a fresh lease when it leads again.
 */
public final class FencerServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencerServer.class);
    /** The largest Locks request accepted; every valid request is far smaller. */
    static final int INBOUND_MESSAGE_BYTES_MAX = 64 * 1024;

    private final ServerConfig config;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CountDownLatch terminated = new CountDownLatch(1);
    private final ScheduledExecutorService timers;
    private final RaftLockStateMachine stateMachine;
    private final PendingAcquires pending = new PendingAcquires();
    /** Names the callers of tests without TLS; null in production, where only client certificates do. */
    private final ServerInterceptor testIdentities;
    private volatile Authorizer authorizer;
    private volatile RaftNode raft;
    private volatile Proposer proposer;
    private volatile SessionKeeper keeper;
    private volatile FormatLevelGate formatLevels;
    private volatile ServerMetrics metrics;
    /** The Java runtime's meters on {@link #metrics}' registry. */
    private volatile JvmMeters jvm;
    private volatile LocksService service;
    private final WatchHub watches;
    private volatile StoreRole store;
    /**
     * The replicated store opened before the Raft node starts; {@link #store} closes it once it serves it. Kept here
     * so that a start that fails in between still closes it: its RocksDB lock would otherwise stay held in this JVM,
     * and every later start of this peer in it would fail on that lock.
     */
    private volatile ReplicatedStore openedReplica;
    private volatile Server grpc;
    private volatile AdminHttpServer admin;
    private volatile ConnectHttpServer http;

    /** True for a peer started to join an existing group ({@link #join}) rather than found one. */
    private final boolean joining;

    private FencerServer(ServerConfig config, ServerInterceptor testIdentities, RaftLockStateMachine stateMachine,
            boolean joining) {
        this.config = config;
        this.joining = joining;
        this.testIdentities = testIdentities;
        this.stateMachine = stateMachine;
        this.watches = new WatchHub(config.watch(), config.id());
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fencer-timers-" + config.id());
            thread.setDaemon(true);
            return thread;
        });
        executor.setRemoveOnCancelPolicy(true); // cancelled wait timeouts must not pile up
        this.timers = executor;
    }

    /** Starts a server and returns once it serves (its group may not have a leader yet). */
    public static FencerServer start(ServerConfig config) throws IOException {
        return start(config, null);
    }

    /**
     * Starts a server whose callers {@code testIdentities} names, outside the transport's own identities: for
     * tests without TLS only, hence package-private.
     */
    static FencerServer start(ServerConfig config, ServerInterceptor testIdentities) throws IOException {
        Objects.requireNonNull(config, "config");
        return start(config, testIdentities, new RaftLockStateMachine(config.limits(), config.ticker()));
    }

    /**
     * Starts a server on {@code stateMachine}, which must be new and made with the config's limits: for tests that
     * make its applies fail, hence package-private.
     */
    static FencerServer start(ServerConfig config, ServerInterceptor testIdentities, RaftLockStateMachine stateMachine)
            throws IOException {
        return start(config, testIdentities, stateMachine, false);
    }

    /**
     * Starts a peer that an existing group is to add ({@code fencer server --join}), rather than one that founds a
     * group: it starts with no configuration of its own, neither standing for election nor serving, until the
     * group's leader adds it ({@code fencer.v1.Peers.Add}) and sends it the log. Restart a joined peer the same way:
     * its durable configuration is then in force. {@code config.peers()} must be empty and {@code config.raftPort()}
     * the port the group is told in the Add.
     */
    public static FencerServer join(ServerConfig config) throws IOException {
        Objects.requireNonNull(config, "config");
        if (!config.peers().isEmpty()) {
            throw new IllegalArgumentException("a joining peer takes the group's configuration from the group: give "
                    + "no peers (--peers) with --join");
        }
        return start(config, null, new RaftLockStateMachine(config.limits(), config.ticker()), true);
    }

    /** As {@link #join}, with test identities (package-private: for tests without TLS only). */
    static FencerServer join(ServerConfig config, ServerInterceptor testIdentities) throws IOException {
        return start(config, testIdentities, new RaftLockStateMachine(config.limits(), config.ticker()), true);
    }

    private static FencerServer start(ServerConfig config, ServerInterceptor testIdentities,
            RaftLockStateMachine stateMachine, boolean joining) throws IOException {
        check(Objects.requireNonNull(config, "config"));
        Objects.requireNonNull(stateMachine, "stateMachine");
        FencerServer server = new FencerServer(config, testIdentities, stateMachine, joining);
        try {
            server.startAll();
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        return server;
    }

    private static void check(ServerConfig config) {
        checkPort("port", config.port(), 0);
        checkPort("adminPort", config.adminPort(), -1);
        checkPort("httpPort", config.httpPort(), -1);
        checkPort("raftPort", config.raftPort(), 0);
        if (config.lockDelay().isNegative()) {
            throw new IllegalArgumentException("lockDelay must not be negative: " + config.lockDelay());
        }
        Set<String> ids = new HashSet<>();
        for (ServerConfig.Peer peer : config.peers()) {
            if (!ids.add(peer.id())) {
                throw new IllegalArgumentException("peer id '" + peer.id() + "' appears twice in " + config.peers());
            }
            checkPort("port of peer " + peer.id(), peer.port(), 1);
            checkPort("raftPort of peer " + peer.id(), peer.raftPort(), 1);
        }
        if (!config.peers().isEmpty() && !ids.contains(config.id())) {
            throw new IllegalArgumentException("peer id '" + config.id() + "' is not among the peers "
                    + config.peers());
        }
        if (config.peerAuth().mode() == PeerAuth.Mode.TLS_ONLY
                && (config.tls() == null || !config.tls().clientCertificatesRequired())) {
            throw new IllegalArgumentException("peers authenticated by their TLS certificates alone need TLS with a CA "
                    + "(the client CA): give the TLS files, or a group secret");
        }
        if (config.tls() != null && !config.tls().clientCertificatesRequired() && config.peers().size() > 1) {
            throw new IllegalArgumentException("TLS in a group of " + config.peers().size() + " peers needs a CA "
                    + "(the client CA): peers present certificates of it to each other on the Raft port");
        }
    }

    private static void checkPort(String name, int port, int lowest) {
        if (port < lowest || port > 65_535) {
            throw new IllegalArgumentException(name + " " + port + " is outside [" + lowest + ", 65535]");
        }
    }

    private void startAll() throws IOException {
        // First: a malformed ACL file must stop the start before any peer joins the group.
        authorizer = config.acl() == null ? Authorizer.allowingEveryone() : Authorizer.fromFile(config.acl());
        // Read first: a bad certificate must stop the start before anything binds or joins the group.
        TlsMaterial tls = config.tls() == null ? null : config.tls().load();
        Files.createDirectories(config.dataDir());
        RestoreSeed.checkFinished(config.dataDir()); // before anything is written there: a restore may run again
        SessionKeeperHolder keeperHolder = new SessionKeeperHolder();
        MetricsHolder metricsHolder = new MetricsHolder();
        listenToStateMachine(keeperHolder, metricsHolder);

        ReplicatedStore replicatedStore = replicatedStore(config, joining);
        openedReplica = replicatedStore;
        if (replicatedStore != null) {
            stateMachine.replicate(replicatedStore); // before the start, which loads the snapshot into it
        }
        raft = RaftNode.start(config, joining, tls, stateMachine, this::port);
        proposer = new Proposer(raft, stateMachine, config.ticker(),
                (task, delayNanos) -> EventLoopDelays.delay(timers, task, delayNanos), config.linger(),
                DiskReserve.of(config.dataDir(), config.ticker()));
        proposer.enableHandOffs(config.grantsAhead());
        keeper = new SessionKeeper(config.ticker(), config.lockDelay(), raft, stateMachine, proposer);
        metrics = new ServerMetrics(stateMachine::counts, pending::size, raft::isLeader);
        jvm = JvmMeters.bind(metrics.registry());
        keeperHolder.set(keeper);
        metricsHolder.set(metrics);
        keeper.start();
        formatLevels = FormatLevelGate.start(raft, stateMachine, proposer);
        startEndpoints(tls, replicatedStore);
    }

    /**
     * Registers what follows the state machine's events. Before the Raft node starts: loading the snapshot and
     * replaying the log already emit events, and those that need the node (the keeper, the metrics) are reached
     * through holders set once it runs.
     */
    private void listenToStateMachine(SessionKeeperHolder keeperHolder, MetricsHolder metricsHolder) {
        stateMachine.addListener(pending);
        stateMachine.addListener(watches);
        stateMachine.addListener(keeperHolder);
        stateMachine.addListener(metricsHolder);
        stateMachine.addListener(new GrantLog());
        stateMachine.addLeadershipHook(keeperHolder::wakeUp);
        stateMachine.addLeadershipHook(this::endCallsOfARemovedPeer);
        stateMachine.addHaltHook(halt -> {
            // Calls waiting for an event of the log end now: none will come. New calls are refused by the service.
            UnavailableException halted = new UnavailableException(halt.message());
            pending.failAll(halted);
            watches.failStreams(halted);
        });
    }

    /**
     * Once the group's configuration leaves this peer out (Ratis closes a leader that removed itself as the change
     * commits), ends the calls that wait for its log, UNAVAILABLE naming the peers left: an Acquire waiting for a
     * grant and the Watch streams would otherwise wait for entries this peer will never apply, a watcher taking its
     * silence for a lock that does not change. Their clients go on at another peer.
     */
    private void endCallsOfARemovedPeer() {
        RaftNode node = raft;
        String outside = node == null || closed.get() ? null : node.notInGroup();
        if (outside != null) {
            UnavailableException removed = new UnavailableException(outside);
            pending.failAll(removed);
            watches.failStreams(removed);
        }
    }

    /** Makes the services (locks, admin, peers, the store) and serves them on their ports, once the Raft node runs. */
    private void startEndpoints(TlsMaterial tls, ReplicatedStore replicatedStore) throws IOException {
        int port = config.peers().isEmpty() ? config.port() : selfPeer().port();
        service = new LocksService(raft, proposer, keeper, pending, stateMachine, config.limits(), timers,
                config.tokenKeys(), new SessionSecrets(config.ticker()), metrics::recordRequest, authorizer, watches,
                this::quotasOf, config.grantsAhead());
        RefusedCalls refusals = new RefusedCalls(metrics.registry(), config.ticker());
        service.registerStreamMetrics(metrics.registry());
        proposer.registerMetrics(metrics.registry());
        stateMachine.registerMetrics(metrics.registry());
        raft.registerMetrics(metrics.registry());
        watches.register(metrics.registry());
        List<ServerServiceDefinition> services = new ArrayList<>();
        services.add(intercepted(MalformedRequests.guard(service.bindService(), INBOUND_MESSAGE_BYTES_MAX),
                refusals));
        AdminService backups = new AdminService(raft, stateMachine, proposer, authorizer, System::currentTimeMillis,
                timers, config.ports().backupStallTimeout());
        services.add(intercepted(MalformedRequests.guard(backups.bindService(), INBOUND_MESSAGE_BYTES_MAX), refusals));
        services.add(intercepted(MalformedRequests.guard(new PeersService(raft, authorizer).bindService(),
                INBOUND_MESSAGE_BYTES_MAX), refusals));
        // The console's feed of refused store writes; every peer keeps those of the writes it served.
        RecentRefusals refused = replicatedStore == null && config.store() == null ? null
                : new RecentRefusals(config.ticker());
        if (replicatedStore != null) {
            replicatedStore.attach(raft, proposer, stateMachine);
            store = StoreRole.replicated(replicatedStore, config.tokenKeys(), metrics.registry(), authorizer,
                    this::describeLock, refused::record, config.ports().backupStallTimeout());
            services.add(intercepted(store.service(), refusals));
        } else if (config.store() != null) {
            Path local = config.dataDir().resolve("store");
            store = StoreRole.open(local, config.store().withKeys(config.tokenKeys()), metrics.registry(), authorizer,
                    this::describeLock, refused::record, config.ports().backupStallTimeout(),
                    () -> checkAlone(local));
            services.add(intercepted(store.service(), refusals));
        }
        // Each service's guard enforces its own limit; the transport reads up to twice the largest (GrpcEndpoints).
        int inboundMessageBytesMax = store == null ? INBOUND_MESSAGE_BYTES_MAX : StoreRole.INBOUND_MESSAGE_BYTES_MAX;
        ReplySpin replySpin = config.replySpin().isZero() ? null : new ReplySpin(config.replySpin());
        if (replySpin != null) {
            replySpin.register(metrics.registry());
        }
        grpc = GrpcEndpoints.start(config.host(), port, inboundMessageBytesMax, services, tls, replySpin,
                config.ports(), metrics.registry(), config.ticker());
        if (config.httpPort() >= 0) {
            List<ServiceDescriptor> descriptors = store == null ? List.of(LocksGrpc.getServiceDescriptor())
                    : List.of(LocksGrpc.getServiceDescriptor(), StoreGrpc.getServiceDescriptor());
            http = ConnectHttpServer.startWithConsole(config.host(), config.httpPort(), tls, services, descriptors,
                    config.ports(), metrics.registry(), config.ticker(),
                    (identity, lock) -> authorizer.allows(identity, Permission.ADMIN, lock),
                    (identity, scope) -> authorizer.allows(identity, Permission.READ, scope), refused);
        }
        if (config.adminPort() >= 0) {
            admin = AdminHttpServer.start(config.host(), config.adminPort(), tls, config.id(), raft, metrics::scrape,
                    config.ports(), metrics.registry(), config.ticker());
        }
        LOG.info("fencer server {} serving on {}:{} (admin {}, http {}, store {}, tokens {}, {}, data {}, java {})",
                config.id(), config.host(), port(), admin == null ? "off" : config.host() + ":" + admin.port(),
                http == null ? "off" : config.host() + ":" + http.port(),
                store == null ? "off" : replicatedStore != null ? "replicated" : "on", config.tokenKeys() == null ? "unsigned" : "signed", describe(tls),
                config.dataDir(), Runtime.version());
    }

    /**
     * Opens the replicated store when this peer hosts the store in a group of several peers ({@code --peers} of more
     * than one, or {@code --join}), or returns null: a single peer keeps the single-node store.
     *
     * <p>A peer whose data directory holds a single-node store with at least one scope (a group upgraded from a
     * release whose peers each kept their own, or a single server turned into a group) refuses to start: serving
     * that store would make the group serve different stores on different peers (a client following the leader writes to whichever the
     * leader serves), and serving the replicated store instead would hide its data and its accepted tokens, which
     * older tokens would then pass. The operator moves the directory away and imports it ({@code fencer store
     * import}), which loses no accepted token (docs/store.md).
     */
    private static ReplicatedStore replicatedStore(ServerConfig config, boolean joining) throws IOException {
        if (config.store() == null || (config.peers().size() < 2 && !joining)) {
            return null;
        }
        Path local = config.dataDir().resolve("store");
        if (io.fencer.store.StoreEngine.holdsScopes(local)) {
            throw new IllegalStateException(singleNodeStoreHeld(local));
        }
        if (Files.isDirectory(local)) {
            // Every peer of the previous release made one, written to or not: one without a scope holds nothing.
            LOG.info("the single-node store in {} holds no scope: this peer serves the group's replicated store",
                    local);
        }
        return ReplicatedStore.open(config.dataDir().resolve("store-replica"),
                config.store().withKeys(config.tokenKeys()));
    }

    /**
     * Refuses a call to this peer's single-node store once its group has grown beyond it (peers added with {@code
     * peers add}): the peers that joined serve the replicated store, and a client following the leader would write to
     * whichever store the leader serves. Backups stay served, for the import.
     */
    private void checkAlone(Path local) {
        int peers = raft.configurationSize();
        if (peers > 1) {
            throw new UnavailableException("this peer serves a single-node store, but its group now has " + peers
                    + " peers, which serve one replicated store: the store calls of this peer are refused. Stop it,"
                    + " move " + local + " away (mv " + local + " " + local.resolveSibling("store.single")
                    + "), start it again with --peers naming the group's peers, and import the moved store into the"
                    + " group: fencer store import --from-dir " + local.resolveSibling("store.single")
                    + " --server PEERS (docs/store.md)");
        }
    }

    /** The refusal of a peer of a group whose data directory holds a single-node store ({@link #replicatedStore}). */
    static String singleNodeStoreHeld(Path local) {
        Path moved = local.resolveSibling("store.single");
        return "this peer's data directory holds a single-node store in " + local + ", but the peers of a group"
                + " serve one replicated store: serving either would make the group serve different stores, or hide"
                + " this one's data and accepted tokens. Move it away (mv " + local + " " + moved + "), start the"
                + " peer, and once every peer runs this release, import it into the group: fencer store import"
                + " --from-dir " + moved + " --server PEERS (docs/store.md, moving to the replicated store); or start"
                + " with --no-store to serve no store";
    }

    /**
     * Returns the state of {@code lock} as this peer has applied it, or empty when it keeps none: what the hosted
     * store checks a CreateScope's grant, and a scope's first write, against.
     */
    private Optional<LockView> describeLock(String lock) {
        return stateMachine.readLocal(machine -> machine.describe(lock));
    }

    /** Returns the quotas of {@code quotaIdentity}: the ACL file's where it sets them, else the server's. */
    private IdentityQuotas quotasOf(String quotaIdentity) {
        IdentityQuotas defaults = config.quotas();
        Authorizer rules = authorizer;
        return new IdentityQuotas(
                rules.quota(quotaIdentity, Quota.SESSIONS).orElse(defaults.sessionsPerIdentityMax()),
                rules.quota(quotaIdentity, Quota.LOCKS).orElse(defaults.locksPerIdentityMax()),
                rules.quota(quotaIdentity, Quota.WAITERS).orElse(defaults.waitersPerIdentityMax()),
                rules.quota(quotaIdentity, Quota.WATCHERS).orElse(defaults.watchersPerIdentityMax()));
    }

    /** Returns how a server's ports are secured, for its start-up line. */
    static String describe(TlsMaterial tls) {
        if (tls == null) {
            return "plaintext";
        }
        return "TLS " + tls.files().certificate() + (tls.clientCertificatesRequired()
                ? ", client certificates of " + tls.files().clientCa() + " required" : ", no client certificates");
    }

    /** Returns {@code service} with the metrics and the count of refused calls (and a test's identities). */
    private ServerServiceDefinition intercepted(ServerServiceDefinition service, RefusedCalls refusals) {
        ServerServiceDefinition counted = ServerInterceptors.intercept(service, metrics, refusals);
        return testIdentities == null ? counted : ServerInterceptors.intercept(counted, testIdentities);
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
            throw new IllegalStateException("the server is not started");
        }
        current.reload();
    }

    private ServerConfig.Peer selfPeer() {
        return config.peers().stream().filter(peer -> peer.id().equals(config.id())).findFirst()
                .orElseThrow(() -> new IllegalStateException("peer " + config.id() + " vanished"));
    }

    /** Returns the bound gRPC client port. */
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

    /**
     * Takes a snapshot of the lock state now (Ratis takes one every 10,000 entries by itself) and returns the log
     * index it covers; for operators' tools and tests.
     */
    public long takeSnapshot() throws IOException {
        RaftNode node = raft;
        if (node == null) {
            throw new IllegalStateException("the server is not running");
        }
        return node.takeSnapshot(Duration.ofSeconds(20));
    }

    /** Returns true while this peer is the group's leader. */
    public boolean isLeader() {
        RaftNode node = raft;
        return node != null && !closed.get() && node.isLeader();
    }

    /** Returns the leader's client address ({@code host:port}) as this peer knows it, or empty when unknown. */
    public String leaderAddress() {
        RaftNode node = raft;
        return node == null || closed.get() ? "" : node.leaderClientAddress();
    }

    /** Stops serving and closes the Raft server; waits for in-flight calls for a short grace period. */
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
                service.shutdown();
                watches.close();
                if (store != null) {
                    store.shutdownStreams();
                }
            }
            if (admin != null) {
                admin.close();
            }
            if (formatLevels != null) {
                formatLevels.close();
            }
            if (keeper != null) {
                keeper.close();
            }
            pending.failAll(new UnavailableException("the server is shutting down"));
            if (proposer != null) {
                proposer.close();
            }
            GrpcEndpoints.awaitCalls(server);
            if (store != null && !store.replicated()) {
                store.close();
            }
            if (raft != null) {
                raft.close();
            }
            if (store != null && store.replicated()) {
                store.close(); // after the Raft node, which applies entries to it until it closes
            } else if (openedReplica != null) {
                openedReplica.close(); // a start that failed before the store served it
            }
            timers.shutdownNow();
            if (jvm != null) {
                jvm.close();
            }
            if (metrics != null) {
                metrics.close();
            }
            LOG.info("fencer server {} closed", config.id());
        } finally {
            terminated.countDown();
        }
    }

    /** Returns the index of the last log entry applied on this peer (for tests and measurements). */
    long appliedIndex() {
        RaftNode node = raft;
        return node == null ? 0 : node.appliedIndex();
    }

    /**
     * Returns why this peer is not in its group's configuration, as a sentence, or null while it is: a peer started
     * with {@link #join} that the group has not added yet, or a peer the group removed.
     */
    public String notInGroup() {
        RaftNode node = raft;
        return node == null ? "the server is not running" : node.notInGroup();
    }

    /**
     * Returns how many peers this peer's configuration holds, voters and learners, itself included, or 0 when the
     * server is not running; for tests.
     */
    int configurationSize() {
        RaftNode node = raft;
        return node == null ? 0 : node.configurationSize();
    }

    /**
     * Returns how long ago another peer last sent this one anything on the Raft port, or null when none has (or the
     * server is not running): {@code fencer server --join} waits on past its wait while the group copies its state.
     */
    public Duration sincePeerTraffic() {
        RaftNode node = raft;
        return node == null ? null : node.sincePeerTraffic();
    }

    /** Returns this peer's Raft term (for tests). */
    long currentTerm() {
        RaftNode node = raft;
        return node == null ? 0 : node.currentTerm();
    }

    /** Returns a session as this peer's lock state holds it, or empty (for tests). */
    java.util.Optional<io.fencer.lock.SessionView> session(long sessionId) {
        return stateMachine.readLocal(machine -> machine.session(sessionId));
    }

    /** Returns the sizes of this peer's lock state as of its last apply (for tests). */
    RaftLockStateMachine.Counts stateMachineCounts() {
        return stateMachine.counts();
    }

    /** Returns how many Watch streams this peer serves now (for tests). */
    int watchStreams() {
        return watches.streamCount();
    }

    /** Returns the hosted store role, or null when the store is off (for tests). */
    StoreRole store() {
        return store;
    }

    /** Returns the lock service's flow-control counters of {@code Locks.KeepAlive} streams (for tests). */
    StreamFlow keepAliveFlow() {
        return service.keepAliveFlow();
    }

    /** Returns the lock service's flow-control counters of {@code Locks.Pipeline} streams (for tests). */
    StreamFlow pipelineFlow() {
        return service.pipelineFlow();
    }

    /** Returns how many Acquire calls wait on this peer (for tests). */
    int pendingAcquires() {
        return pending.size();
    }

    /** Blocks until the server is closed. */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    @Override
    public String toString() {
        return "FencerServer[" + config.id() + " on " + config.host() + ":" + port() + "]";
    }

    /** Hands events to the keeper once it exists; the events of the log replay before it are not needed. */
    private static final class SessionKeeperHolder implements AppliedListener {
        private volatile SessionKeeper keeper;

        void set(SessionKeeper keeper) {
            this.keeper = keeper;
        }

        void wakeUp() {
            SessionKeeper current = keeper;
            if (current != null) {
                current.wakeUp();
            }
        }

        @Override
        public void onApplied(List<Event> events) {
            SessionKeeper current = keeper;
            if (current != null) {
                current.onApplied(events);
            }
        }
    }

    /** Hands events to the metrics once they exist. */
    private static final class MetricsHolder implements AppliedListener {
        private volatile ServerMetrics metrics;

        void set(ServerMetrics metrics) {
            this.metrics = metrics;
        }

        @Override
        public void onApplied(List<Event> events) {
            ServerMetrics current = metrics;
            if (current != null) {
                current.onApplied(events);
            }
        }
    }
}

package io.fencer.server.raft;

import io.fencer.core.FencerException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.UnavailableException;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsMaterial;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.stream.Stream;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SnapshotManagementRequest;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.impl.FencerLeaderLease;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This peer's membership in the lock service's Raft group: the Ratis server, its storage under
 * {@code dataDir/raft}, and answers about leadership.
 */
public final class RaftNode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RaftNode.class);
    /** The one group of every Fencer deployment: a fixed id, so every peer and every restart agree on it. */
    static final RaftGroupId GROUP_ID =
            RaftGroupId.valueOf(UUID.nameUUIDFromBytes("fencer.v1.locks".getBytes(StandardCharsets.UTF_8)));
    /** Entries between automatic snapshots. */
    static final long SNAPSHOT_ENTRIES_GAP = 10_000;
    static final int SNAPSHOTS_RETAINED = 2;
    /** The largest chunk of a snapshot sent to a follower in one call. */
    static final SizeInBytes SNAPSHOT_CHUNK_SIZE_MAX = SizeInBytes.valueOf("4MB");
    /**
     * The shortest election timeout: a follower that heard no leader for this long may stand for election.
     * Generous enough for a loaded 2-core machine, short enough for a failover within seconds.
     */
    static final Duration ELECTION_TIMEOUT_MIN = Duration.ofMillis(400);
    /** The longest election timeout; also how long a Ratis leader goes on leading without hearing a majority. */
    static final Duration ELECTION_TIMEOUT_MAX = Duration.ofMillis(800);
    /**
     * The JVM system property that, when {@code true}, brings back the unsafe acknowledgement of earlier releases:
     * Ratis's leader lease off, keepalives acknowledged on {@code isLeader()} alone and no takeover bound. For tests
     * only (a chaos control run shows its lease checker catches it); read as each server starts.
     */
    public static final String UNSAFE_LEASE_ACK_PROPERTY = "fencer.testing.unsafeLeaseAck";

    /** Returns true when the JVM system property {@value #UNSAFE_LEASE_ACK_PROPERTY} is {@code true}. */
    public static boolean unsafeLeaseAckRequested() {
        return Boolean.getBoolean(UNSAFE_LEASE_ACK_PROPERTY);
    }

    /** Ratis's leader lease lasts this share of {@link #ELECTION_TIMEOUT_MIN} after a majority's acknowledgement. */
    static final double LEADER_LEASE_TIMEOUT_RATIO = 0.9;

    /**
     * The size of group a joining peer sizes its Raft port for (it does not know the group's yet): the largest
     * group documented, five peers, and one spare connection.
     */
    static final int PEERS_ASSUMED_JOINING = 6;

    /** The state of a division that works: {@link #divisionState()} says so. */
    public static final String RUNNING = LifeCycle.State.RUNNING.name();

    private final RaftServer server;
    private final RaftServer.Division division;
    private final RaftLockStateMachine stateMachine;
    /** Where commands and reads are submitted: the division itself when it takes them (see {@link #submit}). */
    private final RaftClientAsynchronousProtocol submitter;
    private final RaftPeerId selfId;
    private final Map<RaftPeerId, String> clientAddresses;
    private final IntSupplier boundClientPort;
    private final String host;
    private final RaftGroupId groupId;

    private RaftNode(RaftServer server, RaftGroupId groupId, RaftLockStateMachine stateMachine, RaftPeerId selfId,
            Map<RaftPeerId, String> clientAddresses, IntSupplier boundClientPort, String host) throws IOException {
        this.server = server;
        this.groupId = groupId;
        this.stateMachine = stateMachine;
        this.division = server.getDivision(groupId);
        this.submitter = division instanceof RaftClientAsynchronousProtocol direct ? direct : server;
        this.selfId = selfId;
        this.clientAddresses = clientAddresses;
        this.boundClientPort = boundClientPort;
        this.host = host;
    }

    /**
     * Builds and starts the Ratis server of this peer.
     *
     * @param tls the TLS of the Raft port: mutual, each peer presenting its certificate and checking the other's
     *     against {@link TlsMaterial#peerTrust()}; null = plaintext
     * @param boundClientPort this peer's gRPC client port once bound (0 before), for the leader's address
     */
    public static RaftNode start(ServerConfig config, TlsMaterial tls, RaftLockStateMachine stateMachine,
            IntSupplier boundClientPort) throws IOException {
        return start(config, false, tls, stateMachine, boundClientPort);
    }

    /**
     * Builds and starts the Ratis server of this peer.
     *
     * @param joining true to start as a peer that an existing group is to add ({@code fencer server --join}): with no
     *     configuration of its own (Ratis's "initializing" state: it neither stands for election nor serves) until
     *     the leader sends it the group's log; {@code config.peers()} must then be empty
     * @param tls the TLS of the Raft port: mutual, each peer presenting its certificate and checking the other's
     *     against {@link TlsMaterial#peerTrust()}; null = plaintext
     * @param boundClientPort this peer's gRPC client port once bound (0 before), for the leader's address
     */
    public static RaftNode start(ServerConfig config, boolean joining, TlsMaterial tls,
            RaftLockStateMachine stateMachine, IntSupplier boundClientPort) throws IOException {
        if (joining && !config.peers().isEmpty()) {
            throw new IllegalArgumentException("a joining peer takes the group's configuration from the group: "
                    + "give --join or --peers, not both");
        }
        PortReservation reserved = config.peers().isEmpty() && config.raftPort() == 0
                ? PortReservation.any(config.host()) : null;
        try {
            return start(config, joining, tls, stateMachine, boundClientPort, reserved);
        } finally {
            if (reserved != null) {
                reserved.close(); // let go by the transport as it bound the port; here too when the start failed first
            }
        }
    }

    /** As above, with "any free" Raft port ({@code raftPort} 0 of a lone peer) held in {@code reserved}, else null. */
    private static RaftNode start(ServerConfig config, boolean joining, TlsMaterial tls,
            RaftLockStateMachine stateMachine, IntSupplier boundClientPort, PortReservation reserved)
            throws IOException {
        RaftPeerId selfId = RaftPeerId.valueOf(config.id());
        List<RaftPeer> peers = new ArrayList<>();
        Map<RaftPeerId, String> clientAddresses = new LinkedHashMap<>();
        int raftPort;
        if (config.peers().isEmpty()) {
            raftPort = reserved != null ? reserved.port() : config.raftPort();
            if (!joining) {
                peers.add(peer(config.id(), config.host(), raftPort, config.host() + ":" + config.port()));
            }
        } else {
            ServerConfig.Peer self = config.peers().stream().filter(p -> p.id().equals(config.id())).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("peer id '" + config.id()
                            + "' is not among the peers " + config.peers()));
            raftPort = self.raftPort();
            for (ServerConfig.Peer peer : config.peers()) {
                peers.add(peer(peer.id(), peer.host(), peer.raftPort(), peer.clientAddress()));
                clientAddresses.put(RaftPeerId.valueOf(peer.id()), peer.clientAddress());
            }
        }
        PeerHandshake.idBytes(config.id());
        for (RaftPeer peer : peers) {
            PeerHandshake.idBytes(peer.getId().toString()); // every id must fit in a handshake
        }
        Path raftDirectory = config.dataDir().resolve("raft");
        io.fencer.lock.BackupFile.Contents seed = RestoreSeed.read(config.dataDir(), stateMachine.limits());
        RaftGroupId groupId = RestoreSeed.groupId(seed);
        if (seed != null) {
            stateMachine.seed(seed.machine(stateMachine.limits()));
            LOG.info("restored peer: starts from the seed {} (restored from a backup of group {} at log index {}),"
                    + " in group {}", config.dataDir().resolve(RestoreSeed.FILE_NAME), seed.sourceGroup(),
                    seed.appliedIndex(), groupId.getUuid());
        }
        RestoreSeed.checkStorage(config.dataDir(), groupId, seed);
        boolean existing = Files.isDirectory(raftDirectory.resolve(groupId.getUuid().toString()));
        Files.createDirectories(raftDirectory);
        RaftProperties properties = properties(config, raftDirectory, raftPort);
        LogChannelCheck.warnIfRatisChannel();
        PeerTransport.checkHeap(Math.max(peers.size(), joining ? PEERS_ASSUMED_JOINING : 1),
                PeerTransport.frameBytesMax(properties), Runtime.getRuntime().maxMemory());
        GroupSecret secret = groupSecret(config, tls, joining ? PEERS_ASSUMED_JOINING : peers.size(), raftPort);
        RaftServer server = RaftServer.newBuilder()
                .setServerId(selfId)
                .setGroup(RaftGroup.valueOf(groupId, peers))
                .setStateMachine(stateMachine)
                .setProperties(properties)
                .setParameters(PeerTransport.parameters(tls, secret, config.ticker(), reserved))
                .setOption(existing ? RaftStorage.StartupOption.RECOVER : RaftStorage.StartupOption.FORMAT)
                .build();
        startOrClose(server);
        LOG.info("raft peer {} started on {}:{} ({} storage in {}, peers authenticated by {}), {}", config.id(),
                config.host(), raftPort, existing ? "recovered" : "new", raftDirectory,
                describeAuth(config.peerAuth(), tls), joining ? "joining an existing group" : "group " + peers);
        RaftNode node = new RaftNode(server, groupId, stateMachine, selfId, clientAddresses, boundClientPort,
                config.host());
        if (existing) {
            node.reportStartupConfiguration(peers, joining);
        }
        return node;
    }

    /**
     * Logs the configuration in force after a restart on existing data: the durable one from the log and snapshots,
     * whatever {@code --peers} says, which only founds a new group. A difference is logged as a warning naming both,
     * so that a mismatch is seen rather than silently winning.
     */
    private void reportStartupConfiguration(List<RaftPeer> flags, boolean joining) {
        org.apache.ratis.server.RaftConfiguration durable = division.getRaftConf();
        List<String> inForce = describePeers(durable.getCurrentPeers());
        List<String> given = describePeers(flags);
        if (durable.getLogEntryIndex() < 0 && joining) {
            LOG.info("peer {} has no configuration yet: it waits to be added (`fencer peers add {} ...`)", selfId,
                    selfId);
        } else if (joining || flags.size() <= 1
                || new java.util.HashSet<>(inForce).equals(new java.util.HashSet<>(given))) {
            LOG.info("peer {}: the group's durable configuration is in force: {}", selfId, inForce);
        } else {
            LOG.warn("peer {}: the group's durable configuration {} differs from --peers {}: the durable one is in "
                    + "force (--peers only founds a new group; membership changes with `fencer peers`)", selfId,
                    inForce, given);
        }
    }

    private static List<String> describePeers(java.util.Collection<RaftPeer> peers) {
        return peers.stream().map(peer -> peer.getId() + "=" + peer.getAddress()
                + (peer.getStartupRole() == RaftPeerRole.LISTENER ? " (learner)" : "")).sorted().toList();
    }

    /**
     * Returns the secret peers prove on the Raft port, reading (or making) its file, or null when they prove none.
     *
     * @throws IllegalArgumentException when the secret file is malformed, or TLS alone was asked for without TLS
     */
    private static GroupSecret groupSecret(ServerConfig config, TlsMaterial tls, int peers, int raftPort)
            throws IOException {
        PeerAuth auth = config.peerAuth();
        switch (auth.mode()) {
            case SECRET:
                return auth.secret();
            case SECRET_FILE:
                GroupSecret.Loaded loaded = GroupSecret.readOrCreate(auth.file());
                if (loaded.warning() != null) {
                    LOG.warn("{}", loaded.warning());
                }
                if (loaded.created() && peers > 1) {
                    LOG.info("created the group secret {}: give every peer of the group this same file", auth.file());
                }
                return loaded.secret();
            case TLS_ONLY:
                if (tls == null || !tls.clientCertificatesRequired()) {
                    throw new IllegalArgumentException("peers authenticated by their TLS certificates alone need TLS "
                            + "with a CA (the client CA), which peers present certificates of to each other");
                }
                return null;
            case INSECURE:
                LOG.warn("the Raft port {} authenticates no peer{}", config.host() + ":" + raftPort,
                        tls == null ? " (--insecure-raft, no TLS): anyone who can reach it can depose the leader, "
                                + "keep the group leaderless and append commands to the log (expire sessions, grant "
                                + "locks); use it for tests only"
                                : " beyond their TLS certificates (--insecure-raft)");
                return null;
            default:
                throw new IllegalStateException("unknown peer authentication " + auth.mode());
        }
    }

    private static String describeAuth(PeerAuth auth, TlsMaterial tls) {
        String certificates = tls == null ? "" : "TLS certificates";
        return switch (auth.mode()) {
            case SECRET, SECRET_FILE -> (tls == null ? "" : certificates + " and ") + "the group " + auth;
            case TLS_ONLY -> certificates;
            case INSECURE -> tls == null ? "nothing (insecure)" : certificates;
        };
    }

    /**
     * Returns true when {@code dataDir} holds this group's Raft storage: a restart, where the durable configuration
     * is in force, rather than a first start.
     */
    public static boolean hasGroupStorage(Path dataDir) {
        Path raft = dataDir.resolve("raft");
        if (!Files.isDirectory(raft)) {
            return false;
        }
        try (Stream<Path> groups = Files.list(raft)) {
            // Fencer's group or a restored group's (named by its seed): any group directory means a restart
            return groups.anyMatch(group -> Files.isDirectory(group)
                    && isGroupDirectoryName(group.getFileName().toString()));
        } catch (IOException e) {
            return true; // unreadable: treat as existing data, which is never founded over
        }
    }

    /** Returns true for the name of a group's storage directory in {@code DIR/raft}: the group's UUID. */
    static boolean isGroupDirectoryName(String name) {
        return name.matches("[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}");
    }

    /**
     * Starts {@code server}, or closes it when the start fails (a snapshot this peer refuses to load): Ratis keeps
     * its storage directory locked, its port bound and its threads running until closed, so a failed start in a
     * process that goes on (a test, an embedding application) could not be retried.
     */
    private static void startOrClose(RaftServer server) throws IOException {
        try {
            server.start();
        } catch (IOException | RuntimeException e) {
            try {
                server.close();
            } catch (IOException | RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /** Registers this peer's metrics of the Raft port: the connections it refused, by reason. */
    public void registerMetrics(MeterRegistry registry) {
        if (server.getServerRpc() instanceof PeerRpc rpc) {
            rpc.registerMetrics(registry);
        }
        registerRefusedEntries(registry);
        Gauge.builder("fencer.raft.log.bytes", this, RaftNode::logBytes).baseUnit("bytes")
                .description("Bytes of this peer's Raft log segments on disk; a segment goes once a snapshot covers it"
                        + " and every peer of the configuration committed it, so a peer left down keeps it growing")
                .register(registry);
    }

    /** Returns the bytes of this peer's log segments on disk, or NaN when its storage cannot be listed. */
    double logBytes() {
        Path current = division.getRaftStorage().getStorageDir().getCurrentDir().toPath();
        try (Stream<Path> files = Files.list(current)) {
            return files.filter(file -> file.getFileName().toString().startsWith("log_"))
                    .mapToLong(file -> file.toFile().length()).sum(); // 0 for a segment deleted meanwhile
        } catch (IOException | UncheckedIOException e) {
            return Double.NaN;
        }
    }

    private static RaftPeer peer(String id, String host, int raftPort, String clientAddress) {
        return RaftPeer.newBuilder().setId(id).setAddress(host + ":" + raftPort).setClientAddress(clientAddress)
                .build();
    }

    private static RaftProperties properties(ServerConfig config, Path raftDirectory, int raftPort) {
        RaftProperties properties = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(properties, List.of(raftDirectory.toFile()));
        RaftServerConfigKeys.setRemovedGroupsDir(properties, raftDirectory.resolve("removed-groups").toFile());
        PeerTransport.configure(properties, config.host(), raftPort, config.id());
        RaftServerConfigKeys.Read.setOption(properties, RaftServerConfigKeys.Read.Option.LINEARIZABLE);
        // The lease tells the leader, at no cost, whether a majority acknowledged it lately (see holdsLeaderLease).
        // The test-only unsafe mode restores the earlier configuration whole, so its controls show the old defect.
        RaftServerConfigKeys.Read.setLeaderLeaseEnabled(properties, !unsafeLeaseAckRequested());
        RaftServerConfigKeys.Read.setLeaderLeaseTimeoutRatio(properties, LEADER_LEASE_TIMEOUT_RATIO);
        // A frame of the Raft port holds at most a snapshot chunk or an appender buffer (PeerFrames.frameBytesMax), and
        // every admitted connection may buffer one: chunks of 4 MB instead of Ratis's 16 keep each frame within 8 MiB,
        // so that five peers fit in a quarter of a 256 MiB heap (PeerTransport.checkHeap).
        RaftServerConfigKeys.Log.Appender.setSnapshotChunkSizeMax(properties, SNAPSHOT_CHUNK_SIZE_MAX);
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, SNAPSHOT_ENTRIES_GAP);
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, SNAPSHOTS_RETAINED);
        RaftServerConfigKeys.setStagingTimeout(properties,
                TimeDuration.valueOf(Membership.STAGING_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties,
                TimeDuration.valueOf(ELECTION_TIMEOUT_MIN.toMillis(), TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties,
                TimeDuration.valueOf(ELECTION_TIMEOUT_MAX.toMillis(), TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(properties,
                TimeDuration.valueOf(config.peers().size() > 1 ? 200 : 10, TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(properties,
                TimeDuration.valueOf(config.peers().size() > 1 ? 400 : 50, TimeUnit.MILLISECONDS));
        // Our proposer never retries a call id, so Ratis's retry cache only costs memory: keep it short.
        RaftServerConfigKeys.RetryCache.setExpiryTime(properties, TimeDuration.valueOf(5, TimeUnit.SECONDS));
        // Log writes are batched by Ratis (one fsync for everything queued); allow deep queues under load.
        RaftServerConfigKeys.Log.setQueueElementLimit(properties, 16_384);
        RaftServerConfigKeys.Write.setElementLimit(properties, 16_384);
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf("32MB"));
        // Commit-index metadata entries would double the log entries (and their CPU) under load; Raft does not need
        // them: a restarted peer learns the commit index from the leader, or commits its log when it leads.
        RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
        // A follower appends what the leader sends on the thread that received it. Ratis's default ("compose")
        // first hands each append to CompletableFuture's default executor, then to its server executor; with two
        // cores or fewer that executor starts a new thread per task on JDK 17 (the common pool has parallelism 1):
        // one thread per replicated entry on every follower (measured: 3,281 in 15 s on one), and three peers
        // committed 15-24% fewer entries per second (bare Ratis, one entry after another). Inline appends only
        // queue the entries for the log worker, under the log's lock, as every write of the leader's does.
        RaftServerConfigKeys.Log.setAppendEntriesComposeEnabled(properties, false);
        return properties;
    }

    RaftServer server() {
        return server;
    }

    RaftPeerId selfId() {
        return selfId;
    }

    RaftServer.Division division() {
        return division;
    }

    /** Returns the leader's commit index as this peer knows it. */
    long commitIndex() {
        return division.getRaftLog().getLastCommittedIndex();
    }

    /** Returns the index of the last entry of this peer's log (-1 when empty). */
    long lastLogIndex() {
        return division.getRaftLog().getNextIndex() - 1;
    }

    /**
     * Returns why this peer serves nothing as a member of the group, or null while it is in the group's
     * configuration: it was removed from the group (its latest configuration leaves it out), or it was started with
     * {@code --join} and not added yet.
     */
    public String notInGroup() {
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        // Every call of the lock service asks: the common answer reads the configuration without copying it.
        if (holdsSelf(conf.getCurrentPeers(RaftPeerRole.FOLLOWER))
                || holdsSelf(conf.getCurrentPeers(RaftPeerRole.LISTENER))) {
            return null;
        }
        List<RaftPeer> current = new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.FOLLOWER));
        current.addAll(conf.getCurrentPeers(RaftPeerRole.LISTENER));
        if (current.isEmpty()) {
            return "peer " + selfId + " has not been added to the group yet: run `fencer peers add " + selfId
                    + " --raft HOST:PORT --client HOST:PORT` against the group";
        }
        // The client addresses of the peers left: one of them leads, and is where this peer's clients must go.
        List<String> left = current.stream().map(peer -> peer.getId() + " at " + clientAddress(peer.getId()))
                .sorted().toList();
        return "peer " + selfId + " was removed from the group, which is now " + left + ": it serves nothing, and"
                + " the operator should stop it";
    }

    private boolean holdsSelf(java.util.Collection<RaftPeer> peers) {
        for (RaftPeer peer : peers) {
            if (peer.getId().equals(selfId)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Takes a snapshot of the lock state now, as Ratis does every {@value #SNAPSHOT_ENTRIES_GAP} entries, and returns
     * the log index it covers. In process only: the Raft port serves no such call ({@link PeerRpc}).
     *
     * @throws IOException when Ratis does not take it within {@code timeout}
     */
    public long takeSnapshot(Duration timeout) throws IOException {
        RaftClientReply reply = server.snapshotManagement(SnapshotManagementRequest.newCreate(ClientId.randomId(),
                selfId, groupId, 0, timeout.toMillis(), 1));
        if (!reply.isSuccess()) {
            throw new IOException("peer " + selfId + " took no snapshot: " + reply.getException());
        }
        return reply.getLogIndex();
    }

    /** Returns the group's format level as this peer has applied the log. */
    int groupFormatLevel() {
        return stateMachine.readLocal(io.fencer.lock.LockStateMachine::formatLevel);
    }

    /** Returns the Raft group this peer belongs to: Fencer's one group, or a restored group's own. */
    public RaftGroupId groupId() {
        return groupId;
    }

    /**
     * Returns how long ago another peer last sent this one anything on its Raft port (null when none has yet, or
     * Ratis runs another transport): while the group copies its state to a peer it is adding, a short time.
     */
    public Duration sincePeerTraffic() {
        PeerRpc rpc = peerRpc();
        return rpc == null ? null : rpc.sinceAdmittedRead();
    }

    /** Returns the server's Raft port transport, or null when Ratis runs another (never, outside tests). */
    PeerRpc peerRpc() {
        return server.getServerRpc() instanceof PeerRpc rpc ? rpc : null;
    }

    /** Returns the ids of every peer of the current configuration, voters and learners, this one too. */
    java.util.Collection<RaftPeerId> configurationPeers() {
        java.util.Set<RaftPeerId> ids = new java.util.LinkedHashSet<>();
        for (RaftPeer peer : division.getRaftConf().getAllPeers()) {
            ids.add(peer.getId());
        }
        for (RaftPeer peer : division.getRaftConf().getAllPeers(RaftPeerRole.LISTENER)) {
            ids.add(peer.getId());
        }
        return ids;
    }

    /**
     * Returns how many peers the current configuration holds, voters and learners, this one included. A release and
     * a hand-off on one peer ask, so a settled configuration is counted without a copy: Ratis keeps a configuration's
     * voters and learners apart (a learner id among the voters fails its construction), so their sizes add up; while
     * a change is under way the two configurations' peers are merged as {@link #configurationPeers} does.
     */
    public int configurationSize() {
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        if (conf.getPreviousPeers(RaftPeerRole.FOLLOWER).isEmpty()
                && conf.getPreviousPeers(RaftPeerRole.LISTENER).isEmpty()) {
            return conf.getCurrentPeers(RaftPeerRole.FOLLOWER).size()
                    + conf.getCurrentPeers(RaftPeerRole.LISTENER).size();
        }
        return configurationPeers().size();
    }

    /** Returns this peer's id. */
    public String peerId() {
        return selfId.toString();
    }

    /**
     * Returns true while this peer is the group's leader (it may not have applied earlier terms yet). The one place
     * where Fencer asks: a peer whose configuration leaves it out leads nobody, whatever Ratis says. Ratis closes a
     * leader that removed itself once the change commits and leaves its role LEADER for ever, while the peers left
     * elect another; and from the moment the change is in its log, the group it would lead is not its own.
     */
    public boolean isLeader() {
        return division.getInfo().isLeader() && notInGroup() == null;
    }

    /** True when this peer is the leader and has applied every entry of earlier terms (Ratis "leader ready"). */
    public boolean isLeaderReady() {
        DivisionInfo info = division.getInfo();
        return info.isLeaderReady() && isLeader();
    }

    /**
     * Refuses a call only the leader serves, on any other peer, with the error that sends its client on:
     * UNAVAILABLE naming why when this peer serves nothing (removed from the group, not added yet, its Raft division
     * not running; a client tries another peer), else NOT_LEADER naming the leader it knows.
     */
    public void checkLeader() {
        if (!isLeader()) {
            throw notLeader();
        }
    }

    /** Returns the error of {@link #checkLeader} for this peer, which does not lead. */
    public FencerException notLeader() {
        String outside = notInGroup();
        if (outside != null) {
            return new UnavailableException(outside);
        }
        String state = divisionState();
        if (!RUNNING.equals(state)) {
            return new UnavailableException("this peer's Raft division is " + state + ", not running:"
                    + " it serves no calls (a peer removed from the group closes it once the group tells it so); its"
                    + " log says why, and /healthz shows its state");
        }
        return new NotLeaderException(leaderClientAddress());
    }

    /**
     * Returns true when this peer leads in {@code term} and holds Ratis's leader lease now: a majority of the group
     * acknowledged a heartbeat this peer sent less than {@link #leaderLeaseTimeout()} ago (a group of one always
     * holds it). Any leader of a later term was elected after that acknowledgement, since a peer that voted in a later
     * term would have refused the heartbeat. Costs no message: Ratis's heartbeats keep the lease fresh.
     */
    public boolean holdsLeaderLease(long term) {
        // The term read before and after: a peer leads at most once per term, so the lease is of that leadership.
        return currentTerm() == term && isLeader() && FencerLeaderLease.held(division) && currentTerm() == term;
    }

    /**
     * Returns how long Ratis's leader lease lasts after a majority's acknowledgement: ratio × minimum timeout
     * (Ratis compares the lease's age in whole milliseconds, so it may hold up to 1 ms longer).
     */
    public static Duration leaderLeaseTimeout() {
        return Duration.ofMillis((long) (ELECTION_TIMEOUT_MIN.toMillis() * LEADER_LEASE_TIMEOUT_RATIO));
    }

    /**
     * Returns the takeover bound B: the longest a deposed leader of this group could still acknowledge a keepalive,
     * measured from the start of its successor's term; a new leader adds it to every session's deadline.
     *
     * <p>Derivation. A leader acknowledges a keepalive only while it {@link #holdsLeaderLease holds the lease}, and
     * renews from the keepalive's arrival {@code a}. The lease rests on a majority's acknowledgement of a heartbeat
     * sent at {@code s}; a successor's election needs a vote from one of that majority, cast after it acknowledged,
     * so the successor's term begins after {@code s}; the lease lasts until {@code s + lease timeout}. Hence
     * {@code a < s + lease timeout < successor start + lease timeout}: B = lease timeout
     * ({@value #LEADER_LEASE_TIMEOUT_RATIO} × {@code ELECTION_TIMEOUT_MIN} = 360 ms) would do, without relying on
     * followers refusing votes while they hear a leader. Ratis, however, also counts a follower's <em>refusal</em>
     * (a reply of a later term) as an acknowledgement for the lease, in the moment before the refused leader steps
     * down, and a Ratis leader steps down at the latest {@code ELECTION_TIMEOUT_MAX} after it last heard a majority.
     * B is therefore {@code ELECTION_TIMEOUT_MAX} (800 ms), which is at least the lease timeout and covers that
     * moment. Both clocks are assumed to run at the same rate within a small drift over ttl + B, as every lease
     * assumes; the client's drift margin covers its own clock.
     */
    public static Duration takeoverBound() {
        Duration lease = leaderLeaseTimeout();
        return ELECTION_TIMEOUT_MAX.compareTo(lease) >= 0 ? ELECTION_TIMEOUT_MAX : lease;
    }

    /** Returns the Raft term this peer is in. */
    public long currentTerm() {
        return division.getInfo().getCurrentTerm();
    }

    /**
     * Returns the life-cycle state of this peer's Raft division: {@link #RUNNING} while it works; NEW or STARTING
     * before, PAUSING or PAUSED while it installs a snapshot, CLOSING or CLOSED once closed (by an operator, or by
     * Ratis itself after a failure it could not survive), EXCEPTION after a failure to start or close.
     */
    public String divisionState() {
        return division.getInfo().getLifeCycleState().name();
    }

    /** Returns where and why this peer halted applying the log, or null while it applies it (see {@link ApplyHalt}). */
    public ApplyHalt halt() {
        return stateMachine.halt();
    }

    /**
     * Registers the count of log entries the Raft port refused before the log, in AppendEntries calls holding an entry
     * Ratis could not apply ({@code fencer.raft.entries.refused}, {@code why="raft-port"}; see {@link LogEntryShapes}).
     */
    private void registerRefusedEntries(MeterRegistry registry) {
        FunctionCounter.builder("fencer.raft.entries.refused", server, RaftNode::refusedByRaftPort)
                .tag("why", "raft-port")
                .description("Log entries refused: undecodable (a no-op), malformed (some commands no-ops), raft-port"
                        + " (refused before the log)")
                .register(registry);
    }

    private static double refusedByRaftPort(RaftServer server) {
        return server.getServerRpc() instanceof PeerRpc rpc ? rpc.entriesRefused() : 0;
    }

    /** Returns LEADER, FOLLOWER, CANDIDATE or LISTENER; REMOVED for a leader the group's configuration left out. */
    public String role() {
        RaftPeerRole role = division.getInfo().getCurrentRole();
        if (role == RaftPeerRole.LEADER && !isLeader()) {
            return "REMOVED"; // Ratis keeps the role of a leader it closed as LEADER
        }
        return role == null ? "UNKNOWN" : role.name();
    }

    /** Returns the index of the last log entry applied on this peer. */
    public long appliedIndex() {
        return division.getInfo().getLastAppliedIndex();
    }

    /** Returns the leader's gRPC client address ({@code host:port}), or empty when no leader is known. */
    public String leaderClientAddress() {
        RaftPeerId leader = division.getInfo().getLeaderId();
        if (leader == null || leader.equals(selfId) && !isLeader()) {
            return ""; // a removed leader still names itself: it would send its clients back to itself
        }
        return clientAddress(leader);
    }

    /** Returns the gRPC client address of a peer of the group, or empty when unknown. */
    String clientAddress(RaftPeerId peer) {
        // The current configuration first: it follows membership changes, where --peers was only the founding one.
        RaftPeer known = division.getRaftConf().getPeer(peer, RaftPeerRole.FOLLOWER, RaftPeerRole.LISTENER);
        if (known != null && known.getClientAddress() != null && !known.getClientAddress().isEmpty()
                && !(peer.equals(selfId) && clientAddresses.isEmpty() && known.getClientAddress().endsWith(":0"))) {
            return known.getClientAddress();
        }
        String address = clientAddresses.get(peer); // the advertised addresses of a configured group
        if (address != null) {
            return address;
        }
        if (peer.equals(selfId)) { // a group of this peer alone: the address it is bound to
            return host + ":" + boundClientPort.getAsInt();
        }
        return "";
    }

    /**
     * Submits {@code request} to this peer's division on the calling thread.
     *
     * <p>Why the division and not {@code RaftServer}: Ratis 3.3's server hands each request to its client executor
     * and blocks the caller until that thread has appended it, so every command cost two thread wake-ups more — the
     * executor's, then the caller's — and held a gRPC event loop meanwhile. Ratis's division (its
     * {@code RaftServerImpl}) appends under its own lock on the calling thread and returns the same future; a Ratis
     * whose division does not take requests leaves the server's path in place.
     */
    CompletableFuture<RaftClientReply> submit(RaftClientRequest request) {
        try {
            return submitter.submitClientRequestAsync(request);
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void close() {
        LogWorkerWakeUp.watch(division); // else the close waits out the idle log worker's one-second poll
        try {
            server.close();
        } catch (IOException e) {
            LOG.warn("closing the raft server failed", e);
        }
    }

    @Override
    public String toString() {
        return "RaftNode[" + selfId + ", " + Objects.toString(division.getInfo().getCurrentRole()) + "]";
    }
}

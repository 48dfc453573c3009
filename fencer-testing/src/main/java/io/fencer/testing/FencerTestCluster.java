package io.fencer.testing;

import io.fencer.core.Ticker;
import io.fencer.server.FencerServer;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.GroupSecret;
import io.fencer.server.tls.TlsFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

/**
 * A real group of Fencer peers in this JVM, as curator-test's {@code TestingCluster} is for ZooKeeper: three (or
 * {@code n}) peers replicating through Ratis on free ports of 127.0.0.1, each with its data under
 * {@code dataRoot/n1}, {@code dataRoot/n2} …, authenticating each other with a group secret made for this cluster.
 * A test stops and restarts single peers to play crashes and failovers.
 *
 * <pre>{@code
 * try (FencerTestCluster cluster = FencerTestCluster.start(tempDir, 3)) {
 *     FencerClient client = Fencer.connect(cluster.endpoints());   // follows the leader
 *     ...
 *     cluster.stop(cluster.leaderIndex());                         // the leader crashes
 *     cluster.leader();                                             // waits until another one leads
 * }
 * }</pre>
 *
 * <p>Peers are numbered from 0 in the methods ({@code stop(0)} stops {@code n1}). Each peer keeps its ports and
 * data across {@link #stop(int)} and {@link #restart(int)}.
 */
public final class FencerTestCluster implements AutoCloseable {
    /** How long {@link #start} and {@link #leader()} wait for a leader, by default. */
    public static final Duration ELECTION_MAX_DEFAULT = Duration.ofSeconds(60);
    /** The most peers a test cluster may have: Raft groups are small, and each peer costs threads and memory. */
    public static final int PEERS_MAX = 7;

    private final List<ServerConfig.Peer> peers;
    private final List<InProcessPeer> members = new ArrayList<>();
    private final Duration electionMax;

    private FencerTestCluster(Builder builder) {
        this.electionMax = builder.electionMax;
        int[] ports = FreePorts.choose(2 * builder.peers);
        List<ServerConfig.Peer> group = new ArrayList<>();
        String prefix = InProcessPeer.uniqueId("c") + "-n"; // ids of their own in this JVM (InProcessPeer#uniqueId)
        for (int i = 0; i < builder.peers; i++) {
            group.add(new ServerConfig.Peer(prefix + (i + 1), "127.0.0.1", ports[2 * i], ports[2 * i + 1]));
        }
        this.peers = List.copyOf(group);
        // One secret for the group, in memory: every peer and every restart proves the same one.
        PeerAuth auth = PeerAuth.secret(GroupSecret.generate());
        for (ServerConfig.Peer peer : peers) {
            members.add(builder.settings.peer(ServerConfig.defaults(builder.dataRoot.resolve(peer.id()))
                    .withPorts(peer.port(), -1, peer.raftPort()).withPeers(peer.id(), peers).withPeerAuth(auth)));
        }
    }

    /** Starts {@code peers} plaintext peers with their data under {@code dataRoot} and returns once one leads. */
    public static FencerTestCluster start(Path dataRoot, int peers) {
        return builder(dataRoot).peers(peers).start();
    }

    /** Returns a builder of a cluster with its peers' data under {@code dataRoot}; three peers by default. */
    public static Builder builder(Path dataRoot) {
        return new Builder(dataRoot);
    }

    /** Returns how many peers the group has, running or stopped. */
    public int size() {
        return peers.size();
    }

    /** Returns every peer's client address, comma-separated in peer order, as the client's endpoints. */
    public String endpoints() {
        return peers.stream().map(ServerConfig.Peer::clientAddress).collect(Collectors.joining(","));
    }

    /** Returns peer {@code index}'s client address, {@code 127.0.0.1:port}; it stays the same across restarts. */
    public String endpoint(int index) {
        return peer(index).clientAddress();
    }

    /** Returns peer {@code index}'s id: {@code n1} for index 0. */
    public String id(int index) {
        return peer(index).id();
    }

    /**
     * Returns peer {@code index}'s running server.
     *
     * @throws IllegalStateException when that peer is stopped
     */
    public FencerServer server(int index) {
        return member(index).running("peer " + id(index));
    }

    /** Returns true while peer {@code index} runs. */
    public boolean isRunning(int index) {
        return member(index).server() != null;
    }

    /**
     * Waits until exactly one running peer leads and returns its index.
     *
     * @throws IllegalStateException when no single running peer leads within the election wait (e.g. too few peers
     *     run for a majority), or at once when every peer is stopped
     */
    public int leaderIndex() {
        if (running().isEmpty()) {
            throw new IllegalStateException("no leader: every peer is stopped, of " + endpoints());
        }
        int[] leader = {-1};
        InProcessPeer.await(() -> {
            List<Integer> leaders = leaders();
            leader[0] = leaders.size() == 1 ? leaders.get(0) : -1;
            return leader[0] >= 0;
        }, electionMax, () -> "no single leader among the running peers " + running() + " of " + endpoints());
        return leader[0];
    }

    /** Waits until exactly one running peer leads and returns it (see {@link #leaderIndex()}). */
    public FencerServer leader() {
        return server(leaderIndex());
    }

    /** Stops peer {@code index} as a crash would (nothing handed over); does nothing when it is stopped. */
    public void stop(int index) {
        member(index).stop();
    }

    /**
     * Starts peer {@code index} again on its ports and data, stopping it first if it runs. It rejoins the group on
     * return; it may not know the leader yet ({@link #leader()} waits for one).
     */
    public void restart(int index) {
        InProcessPeer member = member(index);
        member.stop();
        member.start();
    }

    /** Stops every peer; their data directories stay. */
    @Override
    public void close() {
        RuntimeException failure = null;
        for (InProcessPeer member : members) {
            try {
                member.stop();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "FencerTestCluster[" + endpoints() + ", running " + running() + "]";
    }

    static int checkPeers(int peers) {
        if (peers < 1 || peers > PEERS_MAX) {
            throw new IllegalArgumentException("peers must be between 1 and " + PEERS_MAX + ": " + peers);
        }
        return peers;
    }

    private List<Integer> leaders() {
        List<Integer> leaders = new ArrayList<>();
        for (int i = 0; i < members.size(); i++) {
            if (members.get(i).isLeader()) {
                leaders.add(i);
            }
        }
        return leaders;
    }

    private List<String> running() {
        List<String> running = new ArrayList<>();
        for (int i = 0; i < members.size(); i++) {
            if (isRunning(i)) {
                running.add(id(i));
            }
        }
        return running;
    }

    private ServerConfig.Peer peer(int index) {
        Objects.checkIndex(index, peers.size());
        return peers.get(index);
    }

    private InProcessPeer member(int index) {
        Objects.checkIndex(index, members.size());
        return members.get(index);
    }

    private void startAll() {
        try {
            for (InProcessPeer member : members) {
                member.start();
            }
            leaderIndex();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Settings of a {@link FencerTestCluster}; {@link #start()} starts it. */
    public static final class Builder {
        private final Path dataRoot;
        private int peers = 3;
        private final PeerSettings settings = new PeerSettings();
        private Duration electionMax = ELECTION_MAX_DEFAULT;

        private Builder(Path dataRoot) {
            this.dataRoot = Objects.requireNonNull(dataRoot, "dataRoot");
        }

        /**
         * How many peers the group has: 3 by default, at most {@value #PEERS_MAX}.
         *
         * @throws IllegalArgumentException when {@code peers} is not between 1 and {@value #PEERS_MAX}
         */
        public Builder peers(int peers) {
            this.peers = checkPeers(peers);
            return this;
        }

        /**
         * Serves TLS with these files on every port, the Raft port included (the peers share the certificate, see
         * {@link TestTls#serverFiles}); the group secret is proved inside TLS.
         */
        public Builder tls(TlsFiles tls) {
            settings.tls(tls);
            return this;
        }

        /** Checks every call on every peer against the ACL file {@code acl}. */
        public Builder acl(Path acl) {
            settings.acl(acl);
            return this;
        }

        /** Measures session leases and lock-delays on every peer with {@code ticker} (Raft keeps the real clock). */
        public Builder ticker(Ticker ticker) {
            settings.ticker(ticker);
            return this;
        }

        /**
         * Applies {@code customiser} to each peer's config at each start, after the ports, peers, group secret, TLS,
         * ACL and ticker are set: for any other setting, e.g. {@code config -> config.withLockDelay(...)}.
         */
        public Builder config(UnaryOperator<ServerConfig> customiser) {
            settings.customiser(customiser);
            return this;
        }

        /** How long {@link #start()} and {@link FencerTestCluster#leader()} wait for a leader; 60 s by default. */
        public Builder electionMax(Duration electionMax) {
            this.electionMax = InProcessPeer.checkedWait(electionMax);
            return this;
        }

        /**
         * Starts every peer and returns once one leads.
         *
         * @throws IllegalStateException when none leads within {@link #electionMax}; every peer is stopped then
         */
        public FencerTestCluster start() {
            FencerTestCluster cluster = new FencerTestCluster(this);
            cluster.startAll();
            return cluster;
        }
    }
}

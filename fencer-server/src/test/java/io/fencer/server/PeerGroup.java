package io.fencer.server;

import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ChangePeersResponse;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.PromotePeerRequest;
import io.fencer.api.v1.RemovePeerRequest;
import io.fencer.server.rpc.TestIdentities;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import io.grpc.ServerInterceptor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * Peers of one group in this JVM for the membership tests: founders started with {@code --peers}, joiners started
 * with {@code join}, each on fixed free ports so that a restart is the same peer; and the Peers calls.
 */
final class PeerGroup implements AutoCloseable {
    static final Duration ELECTION_MAX = Duration.ofSeconds(60);
    /** Ratis keeps some state per peer id for the JVM: every group of these tests has ids of its own. */
    private static final AtomicInteger GROUPS = new AtomicInteger();

    /** One peer's fixed settings. */
    record Member(String id, int port, int raftPort, boolean founder) {
        String clientAddress() {
            return "127.0.0.1:" + port;
        }

        String raftAddress() {
            return "127.0.0.1:" + raftPort;
        }
    }

    private final Path dataRoot;
    private final String prefix = "m" + GROUPS.incrementAndGet() + "-";
    private final byte[] secret = TestServers.newSecretBytes();
    private final UnaryOperator<ServerConfig> customiser;
    private final ServerInterceptor identities;
    private final List<Member> members = new ArrayList<>();
    private final Map<String, FencerServer> running = new LinkedHashMap<>();
    private final Map<String, ManagedChannel> channels = new LinkedHashMap<>();

    PeerGroup(Path dataRoot, int founders, UnaryOperator<ServerConfig> customiser, boolean testIdentities) {
        this.dataRoot = dataRoot;
        this.customiser = customiser;
        this.identities = testIdentities ? TestIdentities.fromHeader() : null;
        for (int i = 1; i <= founders; i++) {
            members.add(new Member(prefix + "n" + i, FreePorts.one(), FreePorts.one(), true));
        }
    }

    /** Returns the id of the {@code index}-th peer (1-based) of this group. */
    String id(int index) {
        return prefix + "n" + index;
    }

    Member member(String id) {
        return members.stream().filter(m -> m.id().equals(id)).findFirst().orElseThrow();
    }

    /** Starts every founder. */
    PeerGroup startFounders() throws Exception {
        for (Member member : members) {
            if (member.founder()) {
                start(member.id());
            }
        }
        return this;
    }

    /** Declares a new peer (not yet started) and returns it. */
    Member newJoiner(int index) {
        Member member = new Member(id(index), FreePorts.one(), FreePorts.one(), false);
        members.add(member);
        return member;
    }

    /** Starts (or restarts) peer {@code id}: a founder with the founders as --peers, a joiner with join. */
    FencerServer start(String id) throws Exception {
        Member member = member(id);
        ServerConfig config = customiser.apply(ServerConfig.defaults(dataRoot.resolve(id))
                .withPeerAuth(TestServers.groupSecret(secret)));
        FencerServer server;
        if (member.founder()) {
            List<ServerConfig.Peer> peers = members.stream().filter(Member::founder)
                    .map(m -> new ServerConfig.Peer(m.id(), "127.0.0.1", m.port(), m.raftPort())).toList();
            server = FencerServer.start(config.withPorts(0, 0, 0).withPeers(id, peers), identities);
        } else {
            server = FencerServer.join(config.withPorts(member.port(), 0, member.raftPort()).withPeers(id,
                    List.of()), identities);
        }
        running.put(id, server);
        return server;
    }

    /**
     * Restarts founder {@code id} with {@code --peers} naming {@code ids}, as a grown group's founder is restarted to
     * serve the group's replicated store.
     */
    FencerServer startNaming(String id, List<String> ids) throws Exception {
        ServerConfig config = customiser.apply(ServerConfig.defaults(dataRoot.resolve(id))
                .withPeerAuth(TestServers.groupSecret(secret)));
        List<ServerConfig.Peer> peers = ids.stream().map(this::member)
                .map(m -> new ServerConfig.Peer(m.id(), "127.0.0.1", m.port(), m.raftPort())).toList();
        FencerServer server = FencerServer.start(config.withPorts(0, 0, 0).withPeers(id, peers), identities);
        running.put(id, server);
        return server;
    }

    /**
     * Takes a snapshot on peer {@code id} above log index {@code index} and returns its index. A change answers once
     * committed, maybe before this peer applied it, and Ratis takes no snapshot at an index it already has one for, so
     * this asks again until the snapshot is a new one.
     */
    long snapshotAbove(String id, long index) {
        long[] taken = new long[1];
        await().atMost(ELECTION_MAX).ignoreExceptions().until(() -> {
            taken[0] = server(id).takeSnapshot();
            return taken[0] > index;
        });
        return taken[0];
    }

    /** Stops peer {@code id} as a crash would. */
    void stop(String id) throws Exception {
        ManagedChannel channel = channels.remove(id);
        if (channel != null) {
            TestServers.close(channel);
        }
        FencerServer server = running.remove(id);
        if (server != null) {
            server.close();
        }
    }

    /** Returns the ids of the running peers. */
    List<String> running() {
        return List.copyOf(running.keySet());
    }

    FencerServer server(String id) {
        return running.get(id);
    }

    ManagedChannel channel(String id) {
        return channels.computeIfAbsent(id, key -> TestServers.channel(member(key).port()));
    }

    /**
     * Waits for one leader among the running peers that serves, and returns its id; with test identities, one that
     * answers List to "ops" (the ACL's administrator). A leader that loses its place before it serves (an election
     * on a loaded machine) is not waited for: the next one is.
     */
    String awaitLeader() {
        String[] found = new String[1];
        dumpingThreads("no leader that serves among " + running.keySet(), () -> await().atMost(ELECTION_MAX)
                .pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() -> {
                    List<String> leaders = running.entrySet().stream().filter(e -> e.getValue().isLeader())
                            .map(Map.Entry::getKey).toList();
                    found[0] = leaders.size() == 1 ? leaders.get(0) : null;
                    return found[0] != null && serves(found[0]) && running.get(found[0]).isLeader();
                }));
        String leader = found[0];
        // Membership changes need format level 5, which the leader raises once every peer has said it reads it.
        io.fencer.api.v1.AdminGrpc.AdminBlockingStub admin = io.fencer.api.v1.AdminGrpc.newBlockingStub(channel(leader));
        io.fencer.api.v1.AdminGrpc.AdminBlockingStub asOps = identities == null ? admin
                : admin.withInterceptors(io.fencer.server.rpc.TestIdentities.as("ops"));
        await().atMost(ELECTION_MAX).ignoreExceptions().until(() -> asOps.status(
                io.fencer.api.v1.StatusRequest.getDefaultInstance()).getGroupFormatLevel() >= 5);
        return leader;
    }

    /** Returns true when peer {@code id} answers writes, reads and keepalives (or, with identities, List to "ops"). */
    private boolean serves(String id) throws InterruptedException {
        if (identities != null) {
            return peersAs(id, "ops").list(ListPeersRequest.getDefaultInstance()).getPeersCount() > 0;
        }
        TestServers.stub(channel(id)).describe(io.fencer.api.v1.DescribeRequest.newBuilder().setLock("warm-up")
                .build());
        return TestServers.keepAliveOnce(channel(id), Long.MAX_VALUE).getExpired();
    }

    /** Returns a follower among the running founders. */
    String aFollower(String leader) {
        return running.keySet().stream().filter(id -> !id.equals(leader)).findFirst().orElseThrow();
    }

    PeersGrpc.PeersBlockingStub peers(String id) {
        return PeersGrpc.newBlockingStub(channel(id)).withInterceptors(TestServers.CALL_DEADLINE);
    }

    PeersGrpc.PeersBlockingStub peersAs(String id, String identity) {
        return peers(id).withInterceptors(TestIdentities.as(identity));
    }

    ListPeersResponse list(String via) {
        return peers(via).list(ListPeersRequest.getDefaultInstance());
    }

    ChangePeersResponse add(String via, Member member) {
        return peers(via).add(AddPeerRequest.newBuilder().setId(member.id()).setRaftAddress(member.raftAddress())
                .setClientAddress(member.clientAddress()).build());
    }

    ChangePeersResponse promote(String via, String id) {
        return peers(via).promote(PromotePeerRequest.newBuilder().setId(id).build());
    }

    ChangePeersResponse remove(String via, String id) {
        return peers(via).remove(RemovePeerRequest.newBuilder().setId(id).build());
    }

    /**
     * Waits until the leader's List shows {@code id} live and caught up with the commit index, holding the
     * configuration that names it.
     */
    void awaitCaughtUp(String leader, String id) {
        dumpingThreads("peer " + id + " never caught up with leader " + leader, () -> await().atMost(ELECTION_MAX)
                .ignoreExceptions().until(() -> {
                    ListPeersResponse list = list(leader);
                    PeerInfo peer = list.getPeersList().stream().filter(p -> p.getId().equals(id)).findFirst()
                            .orElseThrow();
                    return peer.getLive() && peer.getMatchIndex() + 10 >= list.getCommitIndex()
                            && peer.getMatchIndex() >= list.getConfigurationIndex();
                }));
    }

    /**
     * Runs {@code wait}, an await of the peers; when it times out, fails saying {@code what} did not happen, with
     * every thread of this JVM, where the peers run: a rare timeout in a full run is then its own diagnosis.
     */
    static void dumpingThreads(String what, Runnable wait) {
        try {
            wait.run();
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError(what + "; " + ThreadDumps.all(), e);
        }
    }

    /** Returns the configuration's ids and roles, e.g. {@code [n1 VOTER, n4 LEARNER]}: what tests compare. */
    static List<String> shape(ListPeersResponse list) {
        return list.getPeersList().stream().map(p -> p.getId() + " " + p.getRole().name().replace("PEER_ROLE_", ""))
                .toList();
    }

    @Override
    public void close() throws Exception {
        for (String id : new ArrayList<>(running.keySet())) {
            stop(id);
        }
    }
}

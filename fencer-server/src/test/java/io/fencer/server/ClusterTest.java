package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StatusRequest;
import io.fencer.core.Ticker;
import io.fencer.lock.Command.AcquireAll;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Three peers in one JVM: leader election, NOT_LEADER redirection, and failover with monotonic tokens. */
class ClusterTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration ELECTION_MAX = Duration.ofSeconds(60);
    private static final int APPEND_CYCLES = 100;

    @TempDir
    Path dataRoot;
    private final List<ServerConfig.Peer> peers = new ArrayList<>();
    private final Map<String, FencerServer> servers = new ConcurrentHashMap<>();
    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    /** The group's secret, which every peer is given and a test speaking on a Raft port as a peer proves. */
    private final byte[] secret = TestServers.newSecretBytes();
    private IdentityQuotas quotas = IdentityQuotas.DEFAULT;

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel channel : channels.values()) {
            TestServers.close(channel);
        }
        servers.values().forEach(FencerServer::close);
    }

    @Test
    void failover_electsNewLeaderAndTokensKeepIncreasing() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub leaderStub = stubOf(leader);
        TestServers.TestSession session = openSession(leaderStub, TTL_MILLIS);
        long highest = 0;
        for (int i = 0; i < 5; i++) {
            AcquireResponse granted = acquire(leaderStub, session, "orders", 0);
            assertThat(granted.getToken().getValue()).isGreaterThan(highest);
            highest = granted.getToken().getValue();
            release(leaderStub, session, granted.getToken());
        }
        AcquireResponse held = acquire(leaderStub, session, "held", 0);
        OpenSessionRequest open = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId("open-before-failover").build();
        long openedBefore = leaderStub.openSession(open).getSessionId();
        for (FencerServer follower : followersOf(leader)) {
            await().atMost(ELECTION_MAX).until(() -> !follower.leaderAddress().isEmpty());
            ErrorDetail redirected = failure(() -> TestServers.stub(channelOf(follower))
                    .describe(DescribeRequest.newBuilder().setLock("orders").build()));
            assertThat(redirected.getReason()).isEqualTo(Reason.REASON_NOT_LEADER);
            assertThat(redirected.getLeaderAddress()).isEqualTo("127.0.0.1:" + leader.port());
        }

        kill(leader);
        FencerServer newLeader = awaitLeader();
        LocksGrpc.LocksBlockingStub newStub = stubOf(newLeader);

        assertThat(newLeader).isNotSameAs(leader);
        assertThat(describe(newStub, "held").getHolder()).as("the grant survives").isEqualTo(held.getToken());
        TestServers.TestSession other = openSession(newStub, TTL_MILLIS);
        AcquireResponse after = acquire(newStub, other, "orders", 0);
        assertThat(after.getToken().getValue()).isGreaterThan(highest);
        release(newStub, session, held.getToken()); // the secret survives: its hash is replicated
        // The new leader never saw the secret of the open before: a retry cannot get it, nor a new one.
        SessionHijackTest.assertUnauthenticated(() -> newStub.openSession(open), openedBefore);
        AcquireResponse heldAgain = acquire(newStub, other, "held", 0);
        assertThat(heldAgain.getToken().getValue()).isGreaterThan(held.getToken().getValue());
    }

    @Test
    void formatLevel_heldWhileAPeerCannotSayAndRaisedOnEveryPeerOnceAllReadIt() throws Exception {
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        start("n1", Ticker.system());
        start("n2", Ticker.system());
        FencerServer leader = awaitLeader();
        acquire(stubOf(leader), openSession(stubOf(leader), TTL_MILLIS), "orders", 0);
        Thread.sleep(3 * io.fencer.server.raft.FormatLevelGate.INTERVAL_MILLIS); // several looks of the gate

        int whileDown = groupFormatLevel(leader);
        start("n3", Ticker.system());

        assertThat(whileDown).as("a peer that cannot say what it reads holds the level").isEqualTo(4);
        for (FencerServer server : servers.values()) {
            await().atMost(ELECTION_MAX).until(() -> groupFormatLevel(server) == 5);
        }
        assertThat(describe(stubOf(awaitLeader()), "orders").getLastToken()).isEqualTo(1);
    }

    private int groupFormatLevel(FencerServer server) {
        return AdminGrpc.newBlockingStub(channelOf(server)).status(StatusRequest.getDefaultInstance())
                .getGroupFormatLevel();
    }

    @Test
    void peer_withoutQuorum_answersNotLeaderWithoutAddressAndIsUnhealthy() throws Exception {
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        FencerServer lonely = FencerServer.start(ServerConfig.defaults(dataRoot.resolve("n1")).withPorts(0, 0, 0)
                .withPeers("n1", peers));
        servers.put("n1", lonely);

        ErrorDetail detail = failure(() -> TestServers.stub(channelOf(lonely))
                .describe(DescribeRequest.newBuilder().setLock("orders").build()));
        HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + lonely.adminPort() + "/healthz")).build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(lonely.isLeader()).isFalse();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_NOT_LEADER);
        assertThat(detail.getLeaderAddress()).isEmpty();
        assertThat(health.statusCode()).isEqualTo(503);
        assertThat(health.body()).contains("\"status\":\"no-leader\"", "\"leader\":\"\"");
    }

    /**
     * Watch on a follower: the same events at the same positions as on the leader, and the stream survives the
     * leader's death, going on with the new leader's events.
     */
    @Test
    void watch_onAFollower_seesTheLeadersEventsAtTheSamePositionsAcrossAFailover() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        FencerServer follower = followersOf(leader).get(0);
        Watching onLeader = Watching.start(channelOf(leader), Watching.from("", 0, 0));
        long from = onLeader.next().getRevision();
        LocksGrpc.LocksBlockingStub leaderStub = stubOf(leader);
        TestServers.TestSession session = openSession(leaderStub, TTL_MILLIS);
        release(leaderStub, session, acquire(leaderStub, session, "orders", 0).getToken());
        List<io.fencer.api.v1.LockEvent> leaderEvents = onLeader.next(2);

        Watching onFollower = await().atMost(ELECTION_MAX).ignoreExceptions().until(() -> {
            Watching watching = Watching.start(channelOf(follower), Watching.from("", from, 0));
            watching.next(); // a follower that has not applied `from - 1` yet refuses it as a future revision
            return watching;
        }, java.util.Objects::nonNull);
        assertThat(onFollower.next(2)).as("a follower's view: the leader's events, positions included")
                .isEqualTo(leaderEvents);

        kill(leader);
        FencerServer newLeader = awaitLeader();
        LocksGrpc.LocksBlockingStub newStub = stubOf(newLeader);
        AcquireResponse after = acquire(newStub, session, "orders", 0);

        io.fencer.api.v1.LockEvent granted = onFollower.next();
        assertThat(granted.getToken()).as("the same stream, after the failover").isEqualTo(after.getToken());
        assertThat(granted.getRevision()).isGreaterThan(leaderEvents.get(1).getRevision());
        onFollower.cancel();
    }

    /**
     * Regression: every follower handed each replicated entry to CompletableFuture's default executor before
     * appending it (Ratis's "composed" appends). With two cores or fewer that executor starts a new thread per task
     * on JDK 17 (3,281 threads in 15 s on one follower, measured); with more cores, or on later JDKs, it is the
     * common pool, shared with whatever else runs there. The group's appends now stay on Ratis's own threads.
     */
    @Test
    void followers_appendingReplicatedEntries_startNoThreadPerEntryAndLeaveTheCommonPoolAlone() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub stub = stubOf(leader);
        TestServers.TestSession session = openSession(stub, TTL_MILLIS);
        lockCycles(stub, session, APPEND_CYCLES); // the pools' threads of first use start now
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long startedBefore = threads.getTotalStartedThreadCount();
        long commonPoolTasksBefore = ForkJoinPool.commonPool().getStealCount();

        lockCycles(stub, session, APPEND_CYCLES);
        long started = threads.getTotalStartedThreadCount() - startedBefore;
        long commonPoolTasks = ForkJoinPool.commonPool().getStealCount() - commonPoolTasksBefore;

        int appends = 2 * APPEND_CYCLES * followersOf(leader).size(); // each call one entry, on each follower
        assertThat(started).as("threads started in this JVM while its followers appended %d entries", appends)
                .isLessThan(appends / 20);
        assertThat(commonPoolTasks).as("tasks the common pool ran meanwhile").isLessThan(appends / 20);
    }

    /**
     * Bad input on the Raft port from a peer that passed the handshake: a length beyond the largest frame, a frame
     * too short for its header and an AppendEntries whose body is no protobuf each end only that connection, a call
     * of an unknown kind is refused with its kind and the connection stays, and the group goes on committing over its
     * own links. A stranger's call, without the handshake, gets no answer at all.
     */
    @Test
    void raftPort_garbageOversizedAndUnreadableFrames_endOnlyThatConnectionAndTheGroupCommits() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub stub = stubOf(leader);
        TestServers.TestSession session = openSession(stub, TTL_MILLIS);
        int raftPort = peers.get(1).raftPort();

        try (Socket unknownKind = peerSocket(1)) {
            assertThat(RaftPortFrames.callUnknownKind(unknownKind, 1)).contains("no call of kind 99");
            assertThat(RaftPortFrames.callUnknownKind(unknownKind, 2)).as("the same connection still answers")
                    .contains("no call of kind 99");
        }
        try (Socket stranger = raftSocket(raftPort)) {
            RaftPortFrames.write(stranger, RaftPortFrames.UNKNOWN_KIND, 1, new byte[0]);
            assertThat(RaftPortFrames.closedAfterHello(stranger)).as("a call without the handshake").isTrue();
        }
        try (Socket oversized = peerSocket(1)) {
            new DataOutputStream(oversized.getOutputStream()).writeInt(Integer.MAX_VALUE);
            assertThat(RaftPortFrames.closedByServer(oversized)).as("a frame of 2 GiB announced").isTrue();
        }
        try (Socket truncated = peerSocket(1)) {
            DataOutputStream out = new DataOutputStream(truncated.getOutputStream());
            out.writeInt(3);
            out.write(new byte[] {2, 0, 0});
            assertThat(RaftPortFrames.closedByServer(truncated)).as("a frame shorter than its header").isTrue();
        }
        try (Socket unreadable = peerSocket(1)) {
            byte[] notProtobuf = new byte[64];
            Arrays.fill(notProtobuf, (byte) 0xff);
            RaftPortFrames.write(unreadable, 2, 3, notProtobuf); // kind 2: AppendEntries
            assertThat(RaftPortFrames.closedByServer(unreadable)).as("an unreadable AppendEntries").isTrue();
        }

        lockCycles(stub, session, 10);
        assertThat(servers.values().stream().filter(FencerServer::isLeader).toList()).containsExactly(leader);
    }

    /**
     * A holder of the secret opening connections cannot make the Raft port hold more than its cap of admitted ones
     * (64 in a large heap): of 68 of them at most 64 minus the peers' own links stay open, the others are closed at
     * once (which ones depends on the order the transport's threads take them up, not on the order they were made),
     * the peers' links opened before stand (the group commits), and a connection is taken again once these are gone.
     */
    @Test
    void raftPort_admittedConnectionsBeyondTheCap_areClosedWhileThePeersLinksStand() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub stub = stubOf(leader);
        TestServers.TestSession session = openSession(stub, TTL_MILLIS);
        lockCycles(stub, session, 5); // the peers' links are open
        int connectionsMax = 64;
        int beyond = 4;
        int peerLinksMax = 2 * (peers.size() - 1); // one per other peer, two while one is being replaced
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < connectionsMax + beyond; i++) {
                held.add(peerSocket(0)); // the port answers the handshake, then closes one beyond the cap
            }
            List<Socket> closed = new ArrayList<>();
            await().atMost(ELECTION_MAX).until(() -> {
                for (Socket socket : held) {
                    if (!closed.contains(socket) && RaftPortFrames.closedByServer(socket, Duration.ofMillis(20))) {
                        closed.add(socket);
                    }
                }
                return closed.size() >= beyond;
            });
            assertThat(closed).as("admitted connections closed by the cap").hasSizeBetween(beyond,
                    beyond + peerLinksMax);
            lockCycles(stub, session, 10);
        } finally {
            for (Socket socket : held) {
                socket.close();
            }
        }
        await().atMost(ELECTION_MAX).ignoreExceptions().untilAsserted(() -> {
            try (Socket again = peerSocket(0)) {
                assertThat(RaftPortFrames.callUnknownKind(again, 1)).contains("no call of kind 99");
            }
        });
    }

    /**
     * Strangers cannot take the peers' places: connections that have not passed the handshake are few (4 per remote
     * address), the ones beyond are closed at once, those held are closed when the handshake's deadline passes, and
     * meanwhile the group commits over its links and a peer's connection from another address is admitted.
     */
    @Test
    void raftPort_strangersHoldingUnadmittedConnections_areBoundedAndClosedAtTheDeadline() throws Exception {
        startThreePeers();
        FencerServer leader = awaitLeader();
        LocksGrpc.LocksBlockingStub stub = stubOf(leader);
        TestServers.TestSession session = openSession(stub, TTL_MILLIS);
        lockCycles(stub, session, 5); // the peers' links are open
        int raftPort = peers.get(0).raftPort();
        int strangers = 12;
        int perAddressMax = 4;
        List<Socket> held = new ArrayList<>();
        long startNanos = System.nanoTime();
        try {
            for (int i = 0; i < strangers; i++) {
                held.add(raftSocket(raftPort)); // from 127.0.0.1, saying nothing
            }
            List<Socket> closedAtOnce = new ArrayList<>();
            await().atMost(Duration.ofSeconds(3)).until(() -> {
                for (Socket socket : held) {
                    if (!closedAtOnce.contains(socket) && RaftPortFrames.closedAfterHello(socket,
                            Duration.ofMillis(20))) {
                        closedAtOnce.add(socket);
                    }
                }
                return closedAtOnce.size() >= strangers - perAddressMax;
            });
            assertThat(strangers - closedAtOnce.size()).as("the strangers' connections left open: at most the bound "
                    + "per address, and some until the deadline").isBetween(1, perAddressMax);
            try (Socket otherAddress = new Socket("127.0.0.1", raftPort, InetAddress.getByName("127.0.0.2"), 0)) {
                otherAddress.setSoTimeout(20_000);
                RaftPortFrames.handshake(otherAddress, secret, "n2", "n1");
                assertThat(RaftPortFrames.callUnknownKind(otherAddress, 1)).as("a peer from another address")
                        .contains("no call of kind 99");
            }
            lockCycles(stub, session, 10);
            for (Socket socket : held) {
                if (!closedAtOnce.contains(socket)) {
                    assertThat(RaftPortFrames.closedAfterHello(socket, Duration.ofSeconds(20)))
                            .as("a silent stranger's connection, at the deadline").isTrue();
                }
            }
            assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).as("the held ones lasted until the deadline")
                    .isGreaterThanOrEqualTo(Duration.ofSeconds(4));
        } finally {
            for (Socket socket : held) {
                socket.close();
            }
        }
        lockCycles(stub, session, 5);
    }

    /** Opens a connection to peer {@code index}'s Raft port and passes the handshake as peer "n9". */
    private Socket peerSocket(int index) throws IOException {
        Socket socket = raftSocket(peers.get(index).raftPort());
        RaftPortFrames.handshake(socket, secret, "n9", peers.get(index).id());
        return socket;
    }

    /**
     * Quotas count what the replicated state holds: a new leader, which never saw the opens, refuses the identity
     * whose sessions (opened through the old leader) fill its quota, and serves the identity once one ends.
     */
    @Test
    void failover_newLeaderCountsQuotasFromTheReplicatedState() throws Exception {
        quotas = new IdentityQuotas(2, 100, 10);
        startThreePeers();
        FencerServer leader = awaitLeader();
        TestServers.TestSession first = openSession(stubOf(leader), TTL_MILLIS);
        openSession(stubOf(leader), TTL_MILLIS);

        kill(leader);
        FencerServer newLeader = awaitLeader();
        ErrorDetail refused = failure(() -> openSession(stubOf(newLeader), TTL_MILLIS));
        TestServers.closeSession(stubOf(newLeader), first);
        TestServers.TestSession after = openSession(stubOf(newLeader), TTL_MILLIS);

        assertThat(refused.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(refused.getIdentity()).isEqualTo("anonymous@127.0.0.1");
        assertThat(refused.getLimit()).isEqualTo("sessionsPerIdentityMax");
        assertThat(after.id()).isPositive();
    }

    private static Socket raftSocket(int port) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(20_000);
        return socket;
    }

    /**
     * Regression: the proposer bounded an entry's store bytes only, so 256 multi-locks of 64 long names made one entry
     * of 4,283,175 bytes, past Ratis's 4 MiB appender buffer: Ratis refused it whole ("Log entry size … exceeds the
     * max buffer limit"), every command in it failed INTERNAL, and the leader lost its term.
     */
    @Test
    void commit_ofManyMultiLocksOfLongNamesAtOnce_keepsEachEntryWithinRatisBufferAndTheLeader() throws Exception {
        quotas = IdentityQuotas.DEFAULT.withWaitersPerIdentityMax(100_000);
        startThreePeers();
        FencerServer leader = awaitLeader();
        List<TestServers.TestSession> sessions = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            sessions.add(openSession(stubOf(leader), TTL_MILLIS));
        }
        LocksGrpc.LocksFutureStub calls = LocksGrpc.newFutureStub(channelOf(leader)).withDeadlineAfter(90,
                TimeUnit.SECONDS);
        List<ListenableFuture<AcquireResponse>> answers = new ArrayList<>();
        for (int call = 0; call < 1_500; call++) {
            TestServers.TestSession session = sessions.get(call % sessions.size());
            int each = call;
            answers.add(calls.acquireAll(TestServers.acquireAllRequest(session, "many-" + call + "-" + "r".repeat(100),
                    0, i -> String.format(Locale.ROOT, "%05d-%02d-%s", each, i, "x".repeat(246)), 0,
                    AcquireAll.LOCKS_MAX)));
        }

        List<AcquireResponse> granted = Futures.allAsList(answers).get(120, TimeUnit.SECONDS);

        assertThat(granted).allSatisfy(answer -> assertThat(answer.getAcquired()).isTrue());
        assertThat(leader.isLeader()).as("the leader kept its term").isTrue();
    }

    /** Acquires and releases one lock {@code count} times in a row: one log entry per call. */
    private static void lockCycles(LocksGrpc.LocksBlockingStub stub, TestServers.TestSession session, int count) {
        for (int i = 0; i < count; i++) {
            release(stub, session, acquire(stub, session, "orders", 0).getToken());
        }
    }

    private void startThreePeers() throws Exception {
        for (String id : List.of("n1", "n2", "n3")) {
            peers.add(new ServerConfig.Peer(id, "127.0.0.1", FreePorts.one(), FreePorts.one()));
        }
        for (ServerConfig.Peer peer : peers) {
            start(peer.id(), Ticker.system());
        }
    }

    private FencerServer start(String id, Ticker ticker) throws Exception {
        ServerConfig config = ServerConfig.defaults(dataRoot.resolve(id)).withPorts(0, -1, 0)
                .withPeers(id, peers).withTicker(ticker).withPeerAuth(TestServers.groupSecret(secret))
                .withQuotas(quotas);
        FencerServer server = FencerServer.start(config);
        servers.put(id, server);
        return server;
    }

    /** Waits until exactly one live peer leads and serves, and returns it. */
    private FencerServer awaitLeader() {
        await().atMost(ELECTION_MAX).until(() -> servers.values().stream().filter(FencerServer::isLeader).count() == 1);
        FencerServer leader = servers.values().stream().filter(FencerServer::isLeader).findFirst().orElseThrow();
        TestServers.awaitServing(leader, channelOf(leader));
        return leader;
    }

    private List<FencerServer> followersOf(FencerServer leader) {
        return servers.values().stream().filter(server -> server != leader).toList();
    }

    private void kill(FencerServer server) throws Exception {
        servers.values().remove(server);
        ManagedChannel channel = channels.remove("127.0.0.1:" + server.port());
        if (channel != null) {
            TestServers.close(channel);
        }
        server.close();
    }

    private ManagedChannel channelOf(FencerServer server) {
        return channels.computeIfAbsent("127.0.0.1:" + server.port(), address -> TestServers.channel(server));
    }

    private LocksGrpc.LocksBlockingStub stubOf(FencerServer server) {
        return TestServers.stub(channelOf(server));
    }
}

package io.fencer.server;

import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.Ticker;
import io.fencer.server.locks.SessionKeeper;
import io.fencer.server.raft.RaftNode;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.util.CodeInjectionForTesting;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Leases fail closed: a leader cut off from its majority must stop acknowledging keepalives once its leader lease
 * can have run out. Three peers in one JVM over real gRPC and Ratis, while the client's keepalive stream to the
 * leader stays open. The cut is a partition of the leader from both followers on the Raft port (Ratis's own test
 * hook refuses their messages), so its moment is exact; the heal lifts it.
 *
 * <p>What is asserted is the bound itself, not a timing margin: no keepalive <em>sent</em> later than cut + the lease
 * timeout is acknowledged (a send precedes its arrival, so such a keepalive arrived after every lease could have
 * lapsed). The control runs the same scenario with {@value SessionKeeper#UNSAFE_LEASE_ACK_PROPERTY} (main's
 * behaviour): the deposed leader acknowledges such keepalives.
 */
class LeaseSafetyTest {
    private static final long TTL_MILLIS = 60_000;
    private static final long SEND_INTERVAL_MILLIS = 10;
    private static final Duration ELECTION_MAX = Duration.ofSeconds(60);
    /** Ratis's injection points (RaftServerImpl's names) where a follower takes a heartbeat or a vote request. */
    private static final List<String> PARTITIONED_POINTS =
            List.of("RaftServerImpl.appendEntries", "RaftServerImpl.requestVote");

    @TempDir
    Path dataRoot;
    private final List<ServerConfig.Peer> peers = new ArrayList<>();
    /** The one secret every peer of the group is given. */
    private final PeerAuth groupSecret = TestServers.groupSecret(TestServers.newSecretBytes());
    private final Map<String, FencerServer> servers = new ConcurrentHashMap<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final ScheduledExecutorService probes = Executors.newScheduledThreadPool(2);

    /**
     * The peer cut off from the others, or null: a Ratis test hook at the start of AppendEntries and RequestVote
     * handling refuses (throws) every such message between it and another peer, as a network partition would drop it.
     * The client's gRPC port is not affected: the client still reaches the isolated leader.
     */
    private volatile String isolated;

    @BeforeEach
    void partitionHooks() {
        for (String point : PARTITIONED_POINTS) {
            CodeInjectionForTesting.put(point, (localId, remoteId, args) -> {
                String cutOff = isolated;
                boolean localCut = String.valueOf(localId).equals(cutOff);
                if (cutOff != null && localCut != String.valueOf(remoteId).equals(cutOff)) {
                    throw new IllegalStateException("partitioned: " + localId + " does not hear " + remoteId);
                }
                return false;
            });
        }
    }

    @AfterEach
    void stop() throws Exception {
        isolated = null;
        PARTITIONED_POINTS.forEach(CodeInjectionForTesting::remove);
        probes.shutdownNow();
        for (ManagedChannel channel : channels) {
            TestServers.close(channel);
        }
        servers.values().forEach(FencerServer::close);
        System.clearProperty(SessionKeeper.UNSAFE_LEASE_ACK_PROPERTY);
    }

    @Test
    void keepAlive_sentAfterLeaderLostMajorityPlusLeaseTimeout_isNeverAcknowledgedAndAcksResumeAfterHeal()
            throws Exception {
        Cut cut = cutLeaderOffWhileKeepingAlive(false);

        assertThat(cut.probe.acknowledgedSendsBefore(cut.atNanos)).as("acks flowed before the cut").isPositive();
        assertThat(cut.leaderBelievedLeadingUntilNanos - cut.boundNanos())
                .as("the fault was exercised: the cut-off leader still believed it led after the lease timeout")
                .isPositive();
        assertThat(cut.probe.sendsAfter(cut.boundNanos())).as("keepalives were sent after the bound").isPositive();
        assertThat(cut.probe.acknowledgedSendsAfter(cut.boundNanos()))
                .as("keepalives sent later than cut + lease timeout (%s) acknowledged", RaftNode.leaderLeaseTimeout())
                .isZero();

        // Heal: the partition ends; whichever peer leads acknowledges the same session again.
        isolated = null;
        FencerServer leader = awaitLeader();
        KeepAliveProbe after = new KeepAliveProbe(channelOf(leader), cut.session);
        await().atMost(ELECTION_MAX).until(() -> after.acknowledged() > 0);
    }

    @Test
    void keepAlive_unsafeLeaseAckControl_acknowledgesKeepAlivesSentAfterLeaseTimeout() throws Exception {
        Cut cut = cutLeaderOffWhileKeepingAlive(true);

        assertThat(cut.probe.acknowledgedSendsAfter(cut.boundNanos()))
                .as("with %s the cut-off leader acknowledges keepalives sent after cut + lease timeout",
                        SessionKeeper.UNSAFE_LEASE_ACK_PROPERTY)
                .isPositive();
    }

    /** The scenario both tests share: what was cut, when, and the probe's record. */
    private record Cut(long atNanos, long leaderBelievedLeadingUntilNanos, KeepAliveProbe probe,
            TestServers.TestSession session) {
        /** Cut + the lease timeout, + 1 ms: Ratis compares the lease's age in whole milliseconds. */
        long boundNanos() {
            return atNanos + RaftNode.leaderLeaseTimeout().plusMillis(1).toNanos();
        }
    }

    private Cut cutLeaderOffWhileKeepingAlive(boolean unsafe) throws Exception {
        if (unsafe) {
            System.setProperty(SessionKeeper.UNSAFE_LEASE_ACK_PROPERTY, "true"); // read once, as each server starts
        }
        int[] ports = FreePorts.choose(6); // held together while chosen, so no two peers draw the same port
        List<String> ids = List.of("n1", "n2", "n3");
        for (int i = 0; i < ids.size(); i++) {
            peers.add(new ServerConfig.Peer(ids.get(i), "127.0.0.1", ports[2 * i], ports[2 * i + 1]));
        }
        for (ServerConfig.Peer peer : peers) {
            start(peer.id());
        }
        System.clearProperty(SessionKeeper.UNSAFE_LEASE_ACK_PROPERTY);
        FencerServer leader = awaitLeader();
        TestServers.TestSession session = openSession(TestServers.stub(channelOf(leader)), TTL_MILLIS);
        KeepAliveProbe probe = new KeepAliveProbe(channelOf(leader), session);
        await().atMost(ELECTION_MAX).until(() -> probe.acknowledged() >= 3);

        String leaderId = servers.entrySet().stream().filter(entry -> entry.getValue() == leader)
                .map(Map.Entry::getKey).findFirst().orElseThrow();
        long cutNanos = System.nanoTime();
        isolated = leaderId; // from here no follower processes, so acknowledges, a heartbeat the leader sends
        long[] leadingUntil = {cutNanos};
        await().atMost(ELECTION_MAX).pollInterval(Duration.ofMillis(5)).until(() -> {
            if (leader.isLeader()) {
                leadingUntil[0] = System.nanoTime();
                return false;
            }
            return true;
        });
        // After the step-down the stream ends (NOT_LEADER) or answers nothing more: stop sending, let answers drain.
        await().atMost(ELECTION_MAX).until(() -> probe.ended() || probe.quietFor(Duration.ofSeconds(1)));
        probe.stop();
        return new Cut(cutNanos, leadingUntil[0], probe, session);
    }

    private FencerServer start(String id) throws Exception {
        ServerConfig config = ServerConfig.defaults(dataRoot.resolve(id)).withPorts(0, -1, 0)
                .withPeers(id, peers).withTicker(Ticker.system()).withPeerAuth(groupSecret);
        FencerServer server = FencerServer.start(config);
        servers.put(id, server);
        return server;
    }

    private FencerServer awaitLeader() {
        await().atMost(ELECTION_MAX).until(() -> servers.values().stream().filter(FencerServer::isLeader).count() == 1);
        FencerServer leader = servers.values().stream().filter(FencerServer::isLeader).findFirst().orElseThrow();
        TestServers.awaitServing(leader, channelOf(leader));
        return leader;
    }

    private ManagedChannel channelOf(FencerServer server) {
        ManagedChannel channel = TestServers.channel(server);
        channels.add(channel);
        return channel;
    }

    /**
     * One keepalive stream sending a keepalive every {@link #SEND_INTERVAL_MILLIS} ms and recording each send time;
     * the server answers in order, so the n-th answer is the n-th keepalive's.
     */
    private final class KeepAliveProbe implements StreamObserver<KeepAliveResponse> {
        private final List<Long> sendNanos = new ArrayList<>(); // guarded by this
        private final List<Long> acknowledgedSendNanos = new ArrayList<>(); // guarded by this
        private int unacknowledged; // guarded by this: answers that renewed nothing
        private final StreamObserver<KeepAliveRequest> requests;
        private final KeepAliveRequest request;
        private final Future<?> sender;
        private volatile boolean ended;
        private volatile long lastAnswerNanos = System.nanoTime();

        KeepAliveProbe(ManagedChannel channel, TestServers.TestSession session) {
            request = KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                    .build();
            requests = LocksGrpc.newStub(channel).keepAlive(this);
            sender = probes.scheduleAtFixedRate(this::send, 0, SEND_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
        }

        private synchronized void send() {
            if (ended) {
                return;
            }
            sendNanos.add(System.nanoTime());
            requests.onNext(request);
        }

        @Override
        public synchronized void onNext(KeepAliveResponse answer) {
            lastAnswerNanos = System.nanoTime();
            long sent = sendNanos.get(acknowledgedSendNanos.size() + unacknowledged);
            if (!answer.getExpired() && !answer.hasError() && answer.getTtlMillis() > 0) {
                acknowledgedSendNanos.add(sent);
            } else {
                unacknowledged++;
            }
        }

        @Override
        public void onError(Throwable error) {
            ended = true;
        }

        @Override
        public void onCompleted() {
            ended = true;
        }

        boolean ended() {
            return ended;
        }

        boolean quietFor(Duration quiet) {
            return System.nanoTime() - lastAnswerNanos > quiet.toNanos();
        }

        void stop() {
            sender.cancel(false);
            synchronized (this) {
                if (!ended) {
                    ended = true;
                    requests.onCompleted();
                }
            }
        }

        synchronized int acknowledged() {
            return acknowledgedSendNanos.size();
        }

        synchronized long sendsAfter(long nanos) {
            return sendNanos.stream().filter(sent -> sent - nanos > 0).count();
        }

        synchronized long acknowledgedSendsAfter(long nanos) {
            return acknowledgedSendNanos.stream().filter(sent -> sent - nanos > 0).count();
        }

        synchronized long acknowledgedSendsBefore(long nanos) {
            return acknowledgedSendNanos.stream().filter(sent -> sent - nanos < 0).count();
        }
    }
}

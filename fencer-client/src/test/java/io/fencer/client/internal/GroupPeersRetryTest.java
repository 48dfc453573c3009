package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ChangePeersResponse;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeerRole;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.client.PeerStatus;
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.UnavailableException;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A membership change whose reply was lost is retried by the router; the retry's refusal of the change's own first
 * attempt ("already in the group") is the change's success, while a refusal of a first attempt stays the caller's.
 */
class GroupPeersRetryTest {
    private final LosingPeers peers = new LosingPeers();
    private Server server;

    @AfterEach
    void stop() throws InterruptedException {
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void add_firstReplyLostAndRetryRefusedAsAlreadyThere_returnsTheConfigurationWithThePeer() throws Exception {
        peers.loseFirstReply = true;
        try (Router router = router()) {
            List<PeerStatus> configuration = new DefaultGroupPeers(router).add("p4", "127.0.0.1:9004",
                    "127.0.0.1:9104");

            assertThat(peers.addCalls).as("the router retried the add").hasValue(2);
            assertThat(configuration).extracting(PeerStatus::id).containsExactly("p1", "p4");
        }
    }

    @Test
    void add_idAlreadyThereOnTheFirstAttempt_isRefusedNamingThePeer() throws Exception {
        peers.members.add(peer("p4", "127.0.0.1:9004"));
        try (Router router = router()) {
            assertThatThrownBy(() -> new DefaultGroupPeers(router).add("p4", "127.0.0.1:9004", "127.0.0.1:9104"))
                    .isInstanceOf(MembershipRefusedException.class).hasMessageContaining("p4")
                    .hasMessageContaining("already in the group");
            assertThat(peers.addCalls).hasValue(1);
        }
    }

    @Test
    void add_retryRefusedButThePeerThereHasAnotherAddress_isRefused() throws Exception {
        peers.loseFirstReply = true;
        peers.addressAdded = "127.0.0.1:9999"; // someone else's add of the same id won the race
        try (Router router = router()) {
            assertThatThrownBy(() -> new DefaultGroupPeers(router).add("p4", "127.0.0.1:9004", "127.0.0.1:9104"))
                    .isInstanceOf(MembershipRefusedException.class).hasMessageContaining("already in the group");
            assertThat(peers.addCalls).hasValue(2);
        }
    }

    /**
     * The first attempt's outcome is unknown (the leader's own "may or may not take effect", or an attempt cut by its
     * deadline while the leader still catches the new peer up), and the retry is refused because a change is in
     * progress: that change may be the first attempt, so the add may still take effect. It was reported refused,
     * which says that nothing changed.
     */
    @Test
    void add_firstOutcomeUnknownAndRetryRefusedWhileAChangeIsInProgress_isReportedAsMaybeApplied() throws Exception {
        peers.firstStillStaging = true;
        try (Router router = router()) {
            assertThatThrownBy(() -> new DefaultGroupPeers(router).add("p4", "127.0.0.1:9004", "127.0.0.1:9104"))
                    .isInstanceOf(UnavailableException.class).hasMessageContaining("p4")
                    .hasMessageContaining("may still take effect")
                    .hasMessageContaining("another change is in progress");
            assertThat(peers.addCalls).hasValue(2);
        }
    }

    @Test
    void add_answeredAfterMoreThanAThirdOfTheCallTimeout_waitsForTheAnswerWithoutRetrying() throws Exception {
        peers.answerAfterMillis = 4_500; // the router's attempts are cut at a third of its 10 s call timeout
        peers.members.add(peer("p4", "127.0.0.1:9004"));
        try (Router router = router()) {
            assertThatThrownBy(() -> new DefaultGroupPeers(router).add("p4", "127.0.0.1:9004", "127.0.0.1:9104"))
                    .as("the leader's refusal, not a timeout").isInstanceOf(MembershipRefusedException.class)
                    .hasMessageContaining("already in the group");
            assertThat(peers.addCalls).as("one attempt, waited for").hasValue(1);
        }
    }

    private Router router() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(peers).build()
                .start();
        return new Router(List.of("127.0.0.1:" + server.getPort()), TimeUnit.SECONDS.toNanos(10),
                RetryBudget.SYSTEM);
    }

    private static PeerInfo peer(String id, String raftAddress) {
        return PeerInfo.newBuilder().setId(id).setRaftAddress(raftAddress).setClientAddress("127.0.0.1:1")
                .setRole(PeerRole.PEER_ROLE_VOTER).build();
    }

    /** A Peers service whose first Add takes effect but answers UNAVAILABLE, as a reply lost on the way would. */
    private static final class LosingPeers extends PeersGrpc.PeersImplBase {
        final List<PeerInfo> members = new ArrayList<>(List.of(peer("p1", "127.0.0.1:9001")));
        final AtomicInteger addCalls = new AtomicInteger();
        volatile boolean loseFirstReply;
        volatile String addressAdded;
        volatile long answerAfterMillis;
        /** The first Add stays in progress (a new peer being caught up) and answers as the leader's timeout does. */
        volatile boolean firstStillStaging;

        @Override
        public void list(ListPeersRequest request, StreamObserver<ListPeersResponse> out) {
            out.onNext(configuration());
            out.onCompleted();
        }

        @Override
        public synchronized void add(AddPeerRequest request, StreamObserver<ChangePeersResponse> out) {
            addCalls.incrementAndGet();
            pause(answerAfterMillis);
            if (firstStillStaging) {
                out.onError(WireErrors.toStatusException(addCalls.get() == 1
                        ? new io.fencer.core.UnavailableException("the change ADD '" + request.getId() + "' did not"
                                + " commit within 60 s: it may or may not take effect; `fencer peers list` tells")
                        : new MembershipRefusedException(request.getId(), "another change is in progress")));
                return;
            }
            if (members.stream().anyMatch(p -> p.getId().equals(request.getId()))) {
                out.onError(WireErrors.toStatusException(new MembershipRefusedException(request.getId(),
                        "the id is already in the group, as a learner")));
                return;
            }
            String raft = addressAdded != null ? addressAdded : request.getRaftAddress();
            members.add(peer(request.getId(), raft).toBuilder().setRole(PeerRole.PEER_ROLE_LEARNER).build());
            if (loseFirstReply && addCalls.get() == 1) {
                out.onError(Status.UNAVAILABLE.withDescription("connection reset after the change").asRuntimeException());
                return;
            }
            out.onNext(ChangePeersResponse.newBuilder().setConfiguration(configuration()).build());
            out.onCompleted();
        }

        private static void pause(long millis) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private synchronized ListPeersResponse configuration() {
            return ListPeersResponse.newBuilder().addAllPeers(members).setChanging(firstStillStaging).build();
        }
    }
}

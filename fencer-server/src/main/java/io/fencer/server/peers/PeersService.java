package io.fencer.server.peers;

import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ChangePeersResponse;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeerRole;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.PromotePeerRequest;
import io.fencer.api.v1.RemovePeerRequest;
import io.fencer.core.UnavailableException;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.raft.ApplyHalt;
import io.fencer.server.raft.Membership;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.rpc.Replies;
import io.grpc.stub.StreamObserver;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * {@code fencer.v1.Peers}: the group's configuration and its changes at run time, served by the leader
 * ({@link Membership} does the work). List needs {@code read} on the whole namespace, the changes {@code admin} on
 * it; every other peer answers NOT_LEADER with the leader's address, as the lock service does.
 */
public final class PeersService extends PeersGrpc.PeersImplBase {
    /** The whole namespace: the prefix every name starts with, which the checks name {@code *}. */
    private static final String EVERY_NAME = "";

    private final RaftNode raft;
    private final Membership membership;
    private final Authorizer authorizer;

    public PeersService(RaftNode raft, Authorizer authorizer) {
        this.raft = Objects.requireNonNull(raft, "raft");
        this.membership = new Membership(raft);
        this.authorizer = Objects.requireNonNull(authorizer, "authorizer");
    }

    @Override
    public void list(ListPeersRequest request, StreamObserver<ListPeersResponse> out) {
        serve(out, Permission.READ, () -> CompletableFuture.completedFuture(toProto(membership.list())));
    }

    @Override
    public void add(AddPeerRequest request, StreamObserver<ChangePeersResponse> out) {
        serve(out, Permission.ADMIN, () -> membership.add(request.getId(), request.getRaftAddress(),
                request.getClientAddress()).thenApply(PeersService::changed));
    }

    @Override
    public void promote(PromotePeerRequest request, StreamObserver<ChangePeersResponse> out) {
        serve(out, Permission.ADMIN, () -> membership.promote(request.getId()).thenApply(PeersService::changed));
    }

    @Override
    public void remove(RemovePeerRequest request, StreamObserver<ChangePeersResponse> out) {
        serve(out, Permission.ADMIN, () -> membership.remove(request.getId()).thenApply(PeersService::changed));
    }

    /** Checks the permission and that this peer serves, runs {@code call}, and answers with its outcome. */
    private <T> void serve(StreamObserver<T> out, Permission needed, Supplier<CompletableFuture<T>> call) {
        CompletableFuture<T> answer;
        try {
            authorizer.checkPrefix(needed, EVERY_NAME);
            checkServing();
            answer = call.get();
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete((response, error) -> Replies.send(out, response, error));
    }

    /** Refuses every call on a peer that halted applying its log, or that is not (or no longer) in the group. */
    private void checkServing() {
        ApplyHalt halted = raft.halt();
        if (halted != null) {
            throw new UnavailableException(halted.message());
        }
        String outside = raft.notInGroup();
        if (outside != null) {
            throw new UnavailableException(outside);
        }
    }

    private static ChangePeersResponse changed(Membership.Configuration configuration) {
        return ChangePeersResponse.newBuilder().setConfiguration(toProto(configuration)).build();
    }

    static ListPeersResponse toProto(Membership.Configuration configuration) {
        ListPeersResponse.Builder response = ListPeersResponse.newBuilder()
                .setCommitIndex(Math.max(0, configuration.commitIndex()))
                .setConfigurationIndex(Math.max(0, configuration.configurationIndex()))
                .setChanging(configuration.changing());
        for (Membership.PeerStatus peer : configuration.peers()) {
            PeerInfo.Builder info = PeerInfo.newBuilder()
                    .setId(peer.id())
                    .setRaftAddress(peer.raftAddress())
                    .setClientAddress(peer.clientAddress())
                    .setRole(peer.voter() ? PeerRole.PEER_ROLE_VOTER : PeerRole.PEER_ROLE_LEARNER)
                    .setLeader(peer.leader())
                    .setLive(peer.live());
            // what the leader does not know stays unset, which a client shows as unknown, never as 0
            peer.matchIndex().ifPresent(info::setMatchIndex);
            peer.lastHeardMillis().ifPresent(info::setLastHeardMillis);
            response.addPeers(info);
        }
        return response.build();
    }
}

package io.fencer.client.internal;

import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeerRole;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.PromotePeerRequest;
import io.fencer.api.v1.RemovePeerRequest;
import io.fencer.client.GroupPeers;
import io.fencer.client.PeerStatus;
import java.util.List;
import java.util.Objects;

/** {@link GroupPeers} over the client's {@link Router}: every call goes to the leader, as Locks calls do. */
final class DefaultGroupPeers implements GroupPeers {
    private final Router router;

    DefaultGroupPeers(Router router) {
        this.router = router;
    }

    @Override
    public List<PeerStatus> list() {
        return toStatus(router.call("List peers", calls -> calls.call(PeersGrpc.getListMethod(),
                ListPeersRequest.getDefaultInstance())));
    }

    @Override
    public List<PeerStatus> add(String id, String raftAddress, String clientAddress) {
        AddPeerRequest request = AddPeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id"))
                .setRaftAddress(Objects.requireNonNull(raftAddress, "raftAddress"))
                .setClientAddress(Objects.requireNonNull(clientAddress, "clientAddress")).build();
        return toStatus(router.call("Add peer " + id, calls -> calls.call(PeersGrpc.getAddMethod(), request))
                .getConfiguration());
    }

    @Override
    public List<PeerStatus> promote(String id) {
        PromotePeerRequest request = PromotePeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id")).build();
        return toStatus(router.call("Promote peer " + id, calls -> calls.call(PeersGrpc.getPromoteMethod(), request))
                .getConfiguration());
    }

    @Override
    public List<PeerStatus> remove(String id) {
        RemovePeerRequest request = RemovePeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id")).build();
        return toStatus(router.call("Remove peer " + id, calls -> calls.call(PeersGrpc.getRemoveMethod(), request))
                .getConfiguration());
    }

    private static List<PeerStatus> toStatus(ListPeersResponse response) {
        return response.getPeersList().stream().map(DefaultGroupPeers::peerStatus).toList();
    }

    private static PeerStatus peerStatus(PeerInfo peer) {
        return new PeerStatus(peer.getId(), peer.getRaftAddress(), peer.getClientAddress(),
                peer.getRole() == PeerRole.PEER_ROLE_VOTER, peer.getLeader(), peer.getMatchIndex(),
                peer.getLastHeardMillis(), peer.getLive());
    }
}

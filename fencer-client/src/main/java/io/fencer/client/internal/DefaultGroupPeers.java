package io.fencer.client.internal;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeerRole;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.PromotePeerRequest;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.RemovePeerRequest;
import io.fencer.client.GroupPeers;
import io.fencer.client.PeerStatus;
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.UnavailableException;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/** {@link GroupPeers} over the client's {@link Router}: every call goes to the leader, as Locks calls do. */
final class DefaultGroupPeers implements GroupPeers {
    /**
     * The least time one attempt of a change is given: the leader answers once the change committed or failed, and
     * adding a learner waits for it to answer (up to the server's staging timeout of 10 s). An attempt cut at the
     * client's usual third of its call timeout was retried while the change still ran, and on a peer the router then
     * suspected, ending in "no leader answered" for a change that was refused, or made.
     */
    static final java.time.Duration CHANGE_ATTEMPT_MIN = java.time.Duration.ofSeconds(20);

    private final Router router;

    DefaultGroupPeers(Router router) {
        this.router = router;
    }

    @Override
    public List<PeerStatus> list() {
        return toStatus(listResponse());
    }

    private ListPeersResponse listResponse() {
        return router.call("List peers", calls -> calls.call(PeersGrpc.getListMethod(),
                ListPeersRequest.getDefaultInstance()));
    }

    @Override
    public List<PeerStatus> add(String id, String raftAddress, String clientAddress) {
        AddPeerRequest request = AddPeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id"))
                .setRaftAddress(Objects.requireNonNull(raftAddress, "raftAddress"))
                .setClientAddress(Objects.requireNonNull(clientAddress, "clientAddress")).build();
        return change("Add peer " + id, calls -> calls.call(PeersGrpc.getAddMethod(), request).getConfiguration(),
                peers -> peers.stream().anyMatch(p -> p.id().equals(id) && p.raftAddress().equals(raftAddress)));
    }

    @Override
    public List<PeerStatus> promote(String id) {
        PromotePeerRequest request = PromotePeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id")).build();
        return change("Promote peer " + id, calls -> calls.call(PeersGrpc.getPromoteMethod(), request)
                .getConfiguration(), peers -> peers.stream().anyMatch(p -> p.id().equals(id) && p.voter()));
    }

    @Override
    public List<PeerStatus> remove(String id) {
        RemovePeerRequest request = RemovePeerRequest.newBuilder().setId(Objects.requireNonNull(id, "id")).build();
        return change("Remove peer " + id, calls -> calls.call(PeersGrpc.getRemoveMethod(), request)
                .getConfiguration(), peers -> peers.stream().noneMatch(p -> p.id().equals(id)));
    }

    /**
     * Runs a change through the router, which retries it after a failure that may have taken effect (a lost reply,
     * a leader that failed over while committing it). When a retry is refused, the refusal may be of the change's
     * own first attempt ("already in the group"): if the configuration now shows the change's effect
     * ({@code done}), the change succeeded and its configuration is returned. If it does not, but a change is still
     * in progress while an earlier attempt's outcome is unknown, that change may be the earlier attempt (a new peer
     * still being caught up): the outcome is reported unknown, not refused. A refusal of the first attempt is always
     * the caller's.
     */
    private List<PeerStatus> change(String operation, Router.Attempt<ListPeersResponse> attempt,
            Predicate<List<PeerStatus>> done) {
        AtomicInteger attempts = new AtomicInteger();
        AtomicBoolean outcomeUnknown = new AtomicBoolean();
        long attemptNanos = Math.max(router.callTimeoutNanos(), CHANGE_ATTEMPT_MIN.toNanos());
        try {
            return toStatus(router.call(operation, attemptNanos + router.callTimeoutNanos(), calls -> {
                attempts.incrementAndGet();
                try {
                    return attempt.run(calls.withTimeoutNanos(attemptNanos));
                } catch (StatusRuntimeException failure) {
                    outcomeUnknown.compareAndSet(false, !nothingDone(failure));
                    throw failure;
                }
            }));
        } catch (MembershipRefusedException refused) {
            if (attempts.get() > 1) {
                ListPeersResponse now = listResponse();
                if (done.test(toStatus(now))) {
                    return toStatus(now);
                }
                if (outcomeUnknown.get() && now.getChanging()) {
                    throw new UnavailableException(operation + ": an earlier attempt's outcome is unknown and may "
                            + "still take effect (a change is in progress), while the retry was refused: "
                            + refused.why() + "; `fencer peers list` tells once the change ended", refused);
                }
            }
            throw refused;
        }
    }

    /** True for a failure that says the change was not started: another peer leads, or no connection was made. */
    private static boolean nothingDone(StatusRuntimeException failure) {
        return Unreachable.neverSent(failure) || WireErrors.detail(failure)
                .map(detail -> detail.getReason() == Reason.REASON_NOT_LEADER).orElse(false);
    }

    private static List<PeerStatus> toStatus(ListPeersResponse response) {
        return response.getPeersList().stream().map(DefaultGroupPeers::peerStatus).toList();
    }

    private static PeerStatus peerStatus(PeerInfo peer) {
        return new PeerStatus(peer.getId(), peer.getRaftAddress(), peer.getClientAddress(),
                peer.getRole() == PeerRole.PEER_ROLE_VOTER, peer.getLeader(),
                peer.hasMatchIndex() ? OptionalLong.of(peer.getMatchIndex()) : OptionalLong.empty(),
                peer.hasLastHeardMillis() ? OptionalLong.of(peer.getLastHeardMillis()) : OptionalLong.empty(),
                peer.getLive());
    }
}

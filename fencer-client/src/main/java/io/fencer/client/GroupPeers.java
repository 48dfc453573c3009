package io.fencer.client;

import java.util.List;

/**
 * The peers of the Fencer group, and the changes of them an operator makes at run time ({@code fencer.v1.Peers}):
 * add a learner, promote it to voter, remove a peer. One change at a time; each is refused with
 * {@link io.fencer.core.MembershipRefusedException} naming the peer and why when the group cannot take it, and then
 * changes nothing. Obtain it from {@link FencerClient#peers()}.
 *
 * <p>Adding a peer: start it first ({@code fencer server --id ID --join A,B,C}), then {@link #add}, then
 * {@link #promote} once {@link #list} shows it caught up. A change is retried after a failure that may have taken
 * effect (a lost reply, a leader failing over); when the retry is refused because the first attempt already made the
 * change, the call returns the configuration that shows it. A change whose call fails
 * {@link io.fencer.core.UnavailableException} may or may not have taken effect: {@link #list} tells.
 */
public interface GroupPeers {
    /** Returns the group's configuration as its leader sees it: voters first, then learners. */
    List<PeerStatus> list();

    /**
     * Adds a learner; returns the configuration once the change is committed.
     *
     * @param raftAddress where the other peers reach its Raft port, {@code host:port}
     * @param clientAddress where clients reach it, {@code host:port}
     * @throws io.fencer.core.PermissionDeniedException without {@code admin} on the whole namespace
     */
    List<PeerStatus> add(String id, String raftAddress, String clientAddress);

    /** Makes the learner {@code id} a voter; returns the configuration once the change is committed. */
    List<PeerStatus> promote(String id);

    /** Removes the voter or learner {@code id}; returns the configuration once the change is committed. */
    List<PeerStatus> remove(String id);
}

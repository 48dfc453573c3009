package org.apache.ratis.server.impl;

import org.apache.ratis.server.RaftServer;

/**
 * Fencer's one window into Ratis's leader lease, which Ratis 3.3.0 computes but keeps package-private: this class
 * sits in Ratis's package for that reason alone, and a Ratis upgrade that changes the lease breaks its compilation
 * rather than its meaning.
 *
 * <p>Why not a linearizable read instead: Ratis answers a read index at a commit index it already confirmed once
 * without a new heartbeat round, so with no writes (keepalives write nothing) a deposed leader's reads keep
 * completing. The lease rests on the send times of the heartbeats a majority acknowledged, so it cannot outlive the
 * majority's last acknowledgement by more than the lease timeout.
 */
public final class FencerLeaderLease {
    private FencerLeaderLease() {}

    /**
     * Returns true when {@code division} leads and holds a valid leader lease now: a majority acknowledged
     * heartbeats sent within the lease timeout ({@code raft.server.read.leader.lease.timeout.ratio} of the minimum
     * election timeout), or the group has one peer. Cheap: a few reads of the followers' last acknowledged send
     * times, no message.
     */
    public static boolean held(RaftServer.Division division) {
        if (!(division instanceof RaftServerImpl server)) {
            return false;
        }
        return server.getRole().getLeaderState().map(LeaderStateImpl::hasLease).orElse(false);
    }
}

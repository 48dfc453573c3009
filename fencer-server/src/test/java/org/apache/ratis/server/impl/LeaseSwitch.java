package org.apache.ratis.server.impl;

import org.apache.ratis.server.RaftServer;

/**
 * Tests' switch of a leader's Ratis lease, which Ratis 3.3.0 keeps package-private (as {@code FencerLeaderLease}
 * reads it): with the lease off for a moment, the leader's linearizable reads take Ratis's heartbeat path, as they do
 * when a heartbeat comes late on a loaded machine and the lease lapses.
 */
public final class LeaseSwitch {
    private LeaseSwitch() {}

    /** Switches the lease of {@code division}, which must lead, on or off; returns whether it was on. */
    public static boolean set(RaftServer.Division division, boolean enabled) {
        return ((RaftServerImpl) division).getRole().getLeaderState()
                .map(leader -> leader.getAndSetLeaseEnabled(enabled))
                .orElseThrow(() -> new IllegalStateException(division.getId() + " does not lead"));
    }
}

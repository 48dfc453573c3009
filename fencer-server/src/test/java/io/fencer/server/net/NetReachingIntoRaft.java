package io.fencer.server.net;

import io.fencer.server.raft.RaftNode;

/**
 * Breaks the package graph on purpose: {@code net} reaching up into {@code raft}. {@code PackageGraphTest}'s control
 * shows its rules report it; main code never does this.
 */
public final class NetReachingIntoRaft {
    private NetReachingIntoRaft() {}

    public static boolean leads(RaftNode raft) {
        return raft.isLeader();
    }
}

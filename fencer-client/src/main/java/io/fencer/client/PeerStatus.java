package io.fencer.client;

/**
 * One peer of the group as its leader sees it.
 *
 * @param id the peer's id
 * @param raftAddress where the other peers reach its Raft port ({@code host:port})
 * @param clientAddress where clients reach it ({@code host:port})
 * @param voter true for a voter, false for a learner (which receives the log but does not vote)
 * @param leader true for the leader
 * @param matchIndex the last log index the leader knows it holds
 * @param lastHeardMillis how long ago the leader last heard from it (0 for the leader)
 * @param live whether the leader heard from it within the election timeout
 */
public record PeerStatus(String id, String raftAddress, String clientAddress, boolean voter, boolean leader,
        long matchIndex, long lastHeardMillis, boolean live) {}

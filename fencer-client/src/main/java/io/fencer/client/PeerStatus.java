package io.fencer.client;

import java.util.OptionalLong;

/**
 * One peer of the group as its leader sees it.
 *
 * @param id the peer's id
 * @param raftAddress where the other peers reach its Raft port ({@code host:port})
 * @param clientAddress where clients reach it ({@code host:port})
 * @param voter true for a voter, false for a learner (which receives the log but does not vote)
 * @param leader true for the leader
 * @param matchIndex the last log index the leader knows it holds; empty while the leader does not know (the peer
 *     has acknowledged no entry to this leader, e.g. it has been down since before the election)
 * @param lastHeardMillis how long ago the leader last heard from it (0 for the leader); empty while it has not
 *     answered this leader at all
 * @param live whether the leader heard from it within the election timeout
 */
public record PeerStatus(String id, String raftAddress, String clientAddress, boolean voter, boolean leader,
        OptionalLong matchIndex, OptionalLong lastHeardMillis, boolean live) {}

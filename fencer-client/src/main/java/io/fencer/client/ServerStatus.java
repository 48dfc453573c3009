package io.fencer.client;

/**
 * One peer's view of itself and its group ({@link FencerClient#status()}); the group's fields as that peer has applied
 * the log.
 *
 * @param peerId the peer's id
 * @param releaseFormatLevel the highest format level the peer's release reads and writes
 * @param groupFormatLevel the group's format level: what its log and snapshots may use; below the release's while a
 *     peer of an earlier release may still be in the group
 * @param generation the token generation the group grants in (0 until a restore)
 * @param highestToken the highest token value issued so far
 * @param appliedIndex the last log entry the peer applied
 * @param leader true when the peer leads the group
 * @param leaderAddress the leader's client address as the peer knows it, or empty
 */
public record ServerStatus(String peerId, int releaseFormatLevel, int groupFormatLevel, int generation,
        long highestToken, long appliedIndex, boolean leader, String leaderAddress) {}

package io.fencer.server.raft;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * A resource replicated in the lock group's Raft log beside the lock state: the replicated fenced store. The state
 * machine hands it every {@link io.fencer.lock.Command.StoreEntry} in log order, under its apply lock, and keeps its
 * state in the same snapshots as the lock state, so both move together: applied to the same index, snapshotted at
 * the same index, installed on a lagging follower together.
 *
 * <p>Why one log and not a Raft group of its own: a second group would be a second configuration to keep in step
 * through every membership change and upgrade, a second log to fsync on the same disk, and a second leader to find.
 * In one log, the group's membership, format levels, peer authentication and snapshots cover the store by
 * construction. The cost is that store writes and lock commands share one apply thread; the proposer batches both.
 */
public interface ReplicatedResource {
    /**
     * Applies the resource's entries of one log entry, in their order, deterministically: every replica given the
     * same entries in the same order returns the same replies and reaches the same state. A refusal the resource
     * decides (a stale token, a limit) is part of its reply; an exception means this replica could not apply the
     * entries (its disk failed) and halts the peer. The lock commands between them touch nothing of the resource, so
     * the resource may apply its entries together (one disk write for all).
     *
     * @param index the log entry's index, for messages
     * @return one reply per entry, in order
     */
    java.util.List<byte[]> apply(java.util.List<byte[]> entries, long index);

    /**
     * Called under the apply lock: captures the state as applied so far and returns what writes it, outside the lock,
     * into the snapshot. Close the writer when done, written or not.
     */
    SnapshotWriter beginSnapshot();

    /**
     * Replaces the state with the one {@code in} holds (as a {@link SnapshotWriter} wrote it; {@code in} ends with
     * it), or with an empty state when {@code in} is null (a snapshot taken before the resource held anything).
     * Called while nothing is applied, before the log after the snapshot is replayed.
     */
    void load(InputStream in) throws IOException;

    /** Writes a captured state into a snapshot. */
    interface SnapshotWriter extends AutoCloseable {
        void writeTo(OutputStream out) throws IOException;

        @Override
        void close();
    }
}

package io.fencer.server.raft;

import io.fencer.store.StoreBackupFile;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.server.RaftServer;

/**
 * What a snapshot of a peer that keeps no replicated store says about the group's: the empty store, when no store
 * entry can have reached the log unseen ({@link RaftLockStateMachine}'s snapshot), so that a peer added later and sent
 * that snapshot (Ratis sends a new peer the leader's latest snapshot) starts with an empty replica.
 */
final class StoreInSnapshots {
    /**
     * The replicated store of a group whose log held no store entry: an empty store backup. Made at time 0, since no
     * moment made it; the same bytes on every peer.
     */
    static final ReplicatedResource.SnapshotWriter EMPTY = new ReplicatedResource.SnapshotWriter() {
        @Override
        public void writeTo(OutputStream out) throws IOException {
            out.write(StoreBackupFile.empty(0));
        }

        @Override
        public void close() {
        }
    };

    private StoreInSnapshots() {
    }

    /**
     * Returns true when the peer of {@code server} is its group's only peer, voter or learner: no other peer can put a
     * store entry in the log, so the group's replicated store is the empty one whatever this peer passed over.
     * (Entries other peers wrote before they were removed were lost with them: no peer that is left holds their
     * effect, and new peers agree with this one.) This is how a group of one upgraded from a release whose snapshots
     * never held the store comes to say, at its next snapshot, that its replicated store is empty.
     */
    static boolean alone(CompletableFuture<RaftServer> server, RaftGroupId groupId) {
        try {
            RaftServer.Division division = server.getNow(null).getDivision(groupId);
            RaftConfiguration conf = division.getRaftConf();
            return conf.getAllPeers().size() == 1 && conf.getAllPeers(RaftPeerRole.LISTENER).isEmpty()
                    && conf.getPeer(division.getId()) != null;
        } catch (IOException | RuntimeException e) {
            return false; // not started: say nothing about the store
        }
    }
}

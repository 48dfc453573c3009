package io.fencer.server.locks;

import static org.awaitility.Awaitility.await;

import io.fencer.core.ManualTicker;
import io.fencer.lock.Limits;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.AppliedListener;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A session keeper on a real one-peer Ratis group, for the keeper's tests: its time a manual ticker, its proposer
 * without linger, started leading and with the term served (the leases of sessions opened from then on are the
 * keeper's own).
 */
final class KeeperGroup implements AutoCloseable {
    private static final Duration LEADER_WAIT = Duration.ofSeconds(30);

    final RaftLockStateMachine stateMachine;
    final RaftNode raft;
    final Proposer proposer;
    final SessionKeeper keeper;

    private KeeperGroup(RaftLockStateMachine stateMachine, RaftNode raft, Proposer proposer, SessionKeeper keeper) {
        this.stateMachine = stateMachine;
        this.raft = raft;
        this.proposer = proposer;
        this.keeper = keeper;
    }

    /** Starts the group in {@code directory}; {@code firstListener}, if not null, hears each apply before the keeper. */
    static KeeperGroup start(Path directory, ManualTicker ticker, Duration lockDelay, AppliedListener firstListener)
            throws Exception {
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        if (firstListener != null) {
            stateMachine.addListener(firstListener);
        }
        RaftNode raft = RaftNode.start(ServerConfig.defaults(directory).withPorts(0, 0, 0), null, stateMachine,
                () -> 0);
        Proposer proposer = new Proposer(raft, stateMachine, ticker, (task, delayNanos) -> () -> { }, Duration.ZERO);
        SessionKeeper keeper = new SessionKeeper(ticker, lockDelay, raft, stateMachine, proposer);
        stateMachine.addListener(keeper);
        KeeperGroup group = new KeeperGroup(stateMachine, raft, proposer, keeper);
        try {
            await().atMost(LEADER_WAIT).until(raft::isLeaderReady);
            keeper.scan();
        } catch (RuntimeException | Error e) {
            group.close();
            throw e;
        }
        return group;
    }

    @Override
    public void close() {
        keeper.close();
        proposer.close();
        raft.close();
    }
}

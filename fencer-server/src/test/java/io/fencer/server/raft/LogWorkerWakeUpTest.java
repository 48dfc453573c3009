package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.Ticker;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.server.ServerConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The wake-up of the idle Ratis log worker at a close, on a real one-peer group with its log on disk. */
class LogWorkerWakeUpTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path directory;
    private RaftLockStateMachine stateMachine;

    @Test
    void of_onTheRatisOfThisBuild_findsTheLogWorker() throws Exception {
        RaftNode raft = start();
        try {
            // A Ratis upgrade that moves the worker's fields must fail here, not quietly bring back the slow close.
            assertThat(LogWorkerWakeUp.of(raft.server().getDivision(RaftNode.GROUP_ID))).isNotNull();
        } finally {
            raft.close();
        }
    }

    @Test
    void close_withTheWorkerWoken_leavesTheLogWholeForARestart() throws Exception {
        RaftNode raft = start();
        long lastIndex;
        // No timers: a command that would linger leaves at once (and lone commands one after another never linger).
        try (Proposer proposer = new Proposer(raft, stateMachine, Ticker.system(), (task, delayNanos) -> {
            throw new RejectedExecutionException("no timers in this test");
        })) {
            for (int i = 0; i < 5; i++) {
                proposer.propose(new Command.ExpireSession(1_000_000 + i, false)).get(WAIT.toSeconds(),
                        TimeUnit.SECONDS);
            }
            lastIndex = lastLogIndex(raft);
        } finally {
            raft.close();
        }

        RaftNode restarted = start();
        try {
            assertThat(lastLogIndex(restarted)).as("the last index logged before the close")
                    .isGreaterThanOrEqualTo(lastIndex);
        } finally {
            restarted.close();
        }
    }

    private RaftNode start() throws IOException {
        stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        RaftNode raft = RaftNode.start(ServerConfig.defaults(directory).withPorts(0, 0, 0), null, stateMachine,
                () -> 0);
        await().atMost(WAIT).until(raft::isLeaderReady);
        return raft;
    }

    private static long lastLogIndex(RaftNode raft) throws IOException {
        return raft.server().getDivision(RaftNode.GROUP_ID).getRaftLog().getLastEntryTermIndex().getIndex();
    }
}

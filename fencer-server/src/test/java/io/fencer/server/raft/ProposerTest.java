package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.lock.Command;
import io.fencer.lock.Event;
import io.fencer.lock.Limits;
import io.fencer.lock.Result;
import io.fencer.server.ServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the proposer cuts commands into log entries, on a real one-peer Ratis group: one entry in flight while less
 * than a full batch waits, more only when full batches wait. An entry is held in flight by holding its apply (a
 * listener of the state machine that waits on a latch), which holds its reply.
 */
class ProposerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    private RaftNode raft;
    private Proposer proposer;
    private final AtomicBoolean holdNextApply = new AtomicBoolean();
    private final CountDownLatch applyHeld = new CountDownLatch(1);
    private final CountDownLatch releaseApply = new CountDownLatch(1);

    @BeforeEach
    void start() throws Exception {
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        stateMachine.addListener((List<Event> events) -> {
            if (holdNextApply.compareAndSet(true, false)) {
                applyHeld.countDown();
                awaitQuietly(releaseApply);
            }
        });
        raft = RaftNode.start(ServerConfig.defaults(directory).withPorts(0, 0, 0), null, stateMachine, () -> 0);
        proposer = new Proposer(raft, stateMachine);
        await().atMost(WAIT).until(raft::isLeaderReady);
        proposer.propose(command(0)).get(WAIT.toSeconds(), TimeUnit.SECONDS); // the log is past the leader's entry
    }

    @AfterEach
    void stop() {
        releaseApply.countDown();
        if (proposer != null) {
            proposer.close();
        }
        if (raft != null) {
            raft.close();
        }
    }

    @Test
    void propose_whileAnEntryIsInFlight_commandsQueuedMeanwhileLeaveTogetherInTheNextEntry() throws Exception {
        long before = lastLogIndex();
        CompletableFuture<Result> first = holdingTheApplyOf(command(1));

        List<CompletableFuture<Result>> queued = proposeMany(10, 2);
        releaseApply.countDown();

        first.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        CompletableFuture.allOf(queued.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        // The held entry and one entry for the ten: with entries pipelined, some of the ten would have left alone.
        assertThat(lastLogIndex() - before).as("log entries for 1 + 10 commands").isEqualTo(2);
    }

    @Test
    void propose_whenAFullBatchWaits_sendsItWithoutWaitingForTheEntryInFlight() throws Exception {
        long before = lastLogIndex();
        CompletableFuture<Result> first = holdingTheApplyOf(command(1));

        List<CompletableFuture<Result>> queued = proposeMany(Proposer.BATCH_COMMANDS_MAX + 10, 2);

        // The full batch is appended to the log while the first entry is still held (its apply has not returned).
        await().atMost(WAIT).until(() -> lastLogIndex() - before >= 2);
        assertThat(first).isNotDone();
        releaseApply.countDown();
        first.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        CompletableFuture.allOf(queued.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(lastLogIndex() - before).as("log entries: the held one, a full batch, the rest").isEqualTo(3);
    }

    /** Proposes {@code command} and returns once its entry is being applied and held there. */
    private CompletableFuture<Result> holdingTheApplyOf(Command command) throws InterruptedException {
        holdNextApply.set(true);
        CompletableFuture<Result> result = proposer.propose(command);
        assertThat(applyHeld.await(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the entry's apply started").isTrue();
        return result;
    }

    private List<CompletableFuture<Result>> proposeMany(int count, int firstSessionId) {
        List<CompletableFuture<Result>> results = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            results.add(proposer.propose(command(firstSessionId + i)));
        }
        return results;
    }

    /** A command that changes nothing (no such session) but is proposed, logged and applied like any other. */
    private static Command command(long sessionId) {
        return new Command.ExpireSession(1_000_000 + sessionId, false);
    }

    private long lastLogIndex() throws java.io.IOException {
        return raft.server().getDivision(RaftNode.GROUP_ID).getRaftLog().getLastEntryTermIndex().getIndex();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.ManualTicker;
import io.fencer.lock.Command;
import io.fencer.lock.Event;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An expiry storm: more sessions due at once than the proposer queues (65,536 commands), on a real one-peer Ratis
 * group. Time is a manual ticker; the queue is held full by holding one entry's apply (a listener that waits for a
 * permit), so what the keeper queued in its scan is still queued when a client proposes.
 */
class SessionKeeperExpiryStormTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** More than the proposer's queue holds besides the entries it sends while the apply is held (up to 768). */
    private static final int DUE_SESSIONS = 67_000;
    private static final long TTL_MILLIS = 1_000;
    private static final SecretHash HASH = SecretHash.of("the expiry storm's session secret");

    @TempDir
    Path directory;

    private final ManualTicker ticker = new ManualTicker();
    private final AtomicBoolean holdNextApply = new AtomicBoolean();
    private final Semaphore applyHeld = new Semaphore(0);
    private final Semaphore releaseApply = new Semaphore(0);
    private KeeperGroup group;
    private RaftLockStateMachine stateMachine;
    private Proposer proposer;
    private SessionKeeper keeper;

    @BeforeEach
    void start() throws Exception {
        group = KeeperGroup.start(directory, ticker, Duration.ZERO, (List<Event> events) -> {
            if (holdNextApply.compareAndSet(true, false)) {
                applyHeld.release();
                releaseApply.acquireUninterruptibly();
            }
        });
        stateMachine = group.stateMachine;
        proposer = group.proposer;
        keeper = group.keeper;
    }

    @AfterEach
    void stop() {
        releaseApply.release(1_000);
        if (group != null) {
            group.close();
        }
    }

    @Test
    void scan_moreSessionsDueThanTheProposerQueues_admitsAClientCallAndEndsEverySession() throws Exception {
        openSessions(DUE_SESSIONS, TTL_MILLIS);
        holdNextApply.set(true);
        CompletableFuture<Result> held = proposer.propose(open(3_600_000));
        assertThat(applyHeld.tryAcquire(WAIT.toSeconds(), TimeUnit.SECONDS)).as("an apply held").isTrue();

        ticker.advance(Duration.ofMillis(TTL_MILLIS + 1));
        keeper.scan(); // every storm session is due; the proposer sends nothing while the apply is held
        CompletableFuture<Result> client = proposer.propose(open(3_600_000));

        assertThat(client).as("a client's call while the expiries drain").isNotCompletedExceptionally();
        releaseApply.release();
        keeper.start();
        assertThat(held.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isInstanceOf(Result.SessionOpened.class);
        assertThat(client.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isInstanceOf(Result.SessionOpened.class);
        await().atMost(WAIT).until(() -> stateMachine.readLocal(LockStateMachine::sessionCount) == 2);
    }

    private static Command open(long ttlMillis) {
        return new Command.OpenSession("", ttlMillis, "tester", HASH);
    }

    /** Opens {@code count} sessions, in rounds that each fit the proposer's queue. */
    private void openSessions(int count, long ttlMillis) throws Exception {
        for (int opened = 0; opened < count; ) {
            int round = Math.min(count - opened, 50_000);
            List<CompletableFuture<Result>> results = new ArrayList<>(round);
            for (int i = 0; i < round; i++) {
                results.add(proposer.propose(open(ttlMillis)));
            }
            CompletableFuture.allOf(results.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
            opened += round;
        }
        assertThat(stateMachine.readLocal(LockStateMachine::sessionCount)).isEqualTo(count);
    }
}

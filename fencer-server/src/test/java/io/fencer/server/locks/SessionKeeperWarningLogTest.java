package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.ManualTicker;
import io.fencer.lock.Command;
import io.fencer.lock.LockView;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.CapturedStandardError;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the session keeper logs when a proposal of its own fails, on a real one-peer Ratis group with a manual ticker:
 * the server's log at INFO, read from standard error (where slf4j-simple writes).
 */
class SessionKeeperWarningLogTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LOCK_DELAY = Duration.ofSeconds(1);
    private static final long TTL_MILLIS = 1_000;
    private static final SecretHash HASH = SecretHash.of("the warning log's session secret");

    @TempDir
    Path directory;

    private final ManualTicker ticker = new ManualTicker();
    private KeeperGroup group;
    private RaftLockStateMachine stateMachine;
    private Proposer proposer;
    private SessionKeeper keeper;

    @BeforeEach
    void start() throws Exception {
        group = KeeperGroup.start(directory, ticker, LOCK_DELAY, null);
        stateMachine = group.stateMachine;
        proposer = group.proposer;
        keeper = group.keeper;
    }

    @AfterEach
    void stop() {
        if (group != null) {
            group.close();
        }
    }

    /**
     * Regression: a failed end of a lock-delay was logged as "ending the lock-delay of jobs/a failed: {}" followed by a
     * stack trace, since slf4j takes a Throwable in the last place for the trace, not for the message. The line now
     * names the reason, with no trace.
     */
    @Test
    void scan_lockDelayEndRefusedByTheProposer_logsTheReasonInTheLineWithNoTrace() throws Exception {
        long session = ((Result.SessionOpened) proposer.propose(new Command.OpenSession("", TTL_MILLIS, "tester", HASH))
                .get(WAIT.toSeconds(), TimeUnit.SECONDS)).sessionId();
        Result granted = proposer.propose(new Command.Acquire(session, HASH, "jobs/a", "request-1", false))
                .get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(granted).isInstanceOf(Result.Granted.class);
        ticker.advance(Duration.ofMillis(TTL_MILLIS + 1));
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            keeper.scan();
            return stateMachine.readLocal(machine -> machine.describe("jobs/a")).map(LockView::delayed).orElse(false);
        });
        proposer.close(); // every proposal now fails at once: the server is shutting down
        ticker.advance(LOCK_DELAY.plusMillis(1));

        String log;
        try (CapturedStandardError captured = CapturedStandardError.start()) {
            keeper.scan();
            log = captured.text();
        }

        List<String> warnings = log.lines().filter(line -> line.contains("ending the lock-delay of jobs/a")).toList();
        assertThat(warnings).as(log).hasSize(1);
        assertThat(warnings.get(0)).contains("WARN", "failed: ", "the server is shutting down").doesNotContain("{}");
        assertThat(log).as("no stack trace").doesNotContain("\tat ");
        assertThat(stateMachine.readLocal(machine -> machine.describe("jobs/a")).map(LockView::delayed))
                .as("the lock-delay stands until an end is applied").contains(true);
    }
}

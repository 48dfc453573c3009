package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.ManualTicker;
import io.fencer.lock.Command;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.CapturedStandardError;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the session keeper logs in an expiry storm, on a real one-peer Ratis group with a manual ticker: the server's
 * log at INFO, read from standard error (where slf4j-simple writes).
 */
class SessionKeeperExpiryLogTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Three waves of {@link SessionKeeper#EXPIRIES_IN_FLIGHT_MAX} and a part of one. */
    private static final int DUE_SESSIONS = 3_500;
    private static final long TTL_MILLIS = 1_000;
    private static final SecretHash HASH = SecretHash.of("the expiry log's session secret");
    private static final Pattern SUMMARY = Pattern.compile("(\\d+) sessions expire: no keepalive within their ttl");
    private static final Pattern ONE = Pattern.compile("session \\d+ expires: no keepalive within its ttl");
    private static final Pattern FAILED = Pattern.compile("expiring (\\d+) sessions failed");

    @TempDir
    Path directory;

    private final ManualTicker ticker = new ManualTicker();
    private KeeperGroup group;
    private RaftLockStateMachine stateMachine;
    private Proposer proposer;
    private SessionKeeper keeper;

    @BeforeEach
    void start() throws Exception {
        group = KeeperGroup.start(directory, ticker, Duration.ZERO, null);
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
     * Regression: the keeper logged a line at INFO for every session it expired, 67,000 lines in an expiry storm of
     * 67,000 sessions. It now logs a line per scan, naming the count and a few ids (each session at DEBUG).
     */
    @Test
    void scan_expiryStorm_logsASummaryPerWaveNamingTheCountNotALinePerSession() throws Exception {
        openSessions(DUE_SESSIONS);
        ticker.advance(Duration.ofMillis(TTL_MILLIS + 1));

        String log;
        try (CapturedStandardError captured = CapturedStandardError.start()) {
            // Each scan proposes a wave, or what is left of one while half of the last is unanswered.
            await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
                keeper.scan();
                return sessionCount() == 0;
            });
            log = captured.text();
        }

        List<String> lines = log.lines().filter(line -> line.contains("expire")).toList();
        assertThat(lines).as("expiry lines at INFO").hasSizeLessThanOrEqualTo(20);
        assertThat(expiredCount(lines)).as("the sessions the lines count").isEqualTo(DUE_SESSIONS);
        assertThat(lines).anySatisfy(line -> assertThat(line).containsPattern(
                "\\d+ sessions expire: no keepalive within their ttl \\(sessions \\d+, \\d+, \\d+, \\d+, \\d+ and \\d+"
                        + " more; each at DEBUG\\)"));
    }

    /**
     * A proposer that refuses every expiry (closed: it fails each proposal at once) costs a WARN line per scan, not
     * per session, and leaks no slot of the expiries in flight: the next scan proposes every due session again.
     */
    @Test
    void scan_proposerRefusingEveryExpiry_logsOneWarningPerScanAndTriesEverySessionAgain() throws Exception {
        openSessions(2_000);
        ticker.advance(Duration.ofMillis(TTL_MILLIS + 1));
        proposer.close();

        String log;
        try (CapturedStandardError captured = CapturedStandardError.start()) {
            keeper.scan();
            keeper.scan();
            log = captured.text();
        }

        List<String> failures = log.lines().filter(line -> line.contains("expiring")).toList();
        assertThat(failures).hasSize(2);
        assertThat(failures).allSatisfy(line -> assertThat(line).contains("WARN", "expiring 2000 sessions failed",
                "the server is shutting down"));
        assertThat(sessionCount()).isEqualTo(2_000);
    }

    private static int expiredCount(List<String> lines) {
        int count = 0;
        for (String line : lines) {
            Matcher summary = SUMMARY.matcher(line);
            if (summary.find()) {
                count += Integer.parseInt(summary.group(1));
            } else if (ONE.matcher(line).find()) {
                count++;
            } else {
                assertThat(FAILED.matcher(line).find()).as("an expiry line of another kind: " + line).isFalse();
            }
        }
        return count;
    }

    private int sessionCount() {
        return stateMachine.readLocal(LockStateMachine::sessionCount);
    }

    /** Opens {@code count} sessions that time out after {@link #TTL_MILLIS}. */
    private void openSessions(int count) throws Exception {
        List<CompletableFuture<Result>> results = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            results.add(proposer.propose(new Command.OpenSession("", TTL_MILLIS, "tester", HASH)));
        }
        CompletableFuture.allOf(results.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(sessionCount()).isEqualTo(count);
    }
}

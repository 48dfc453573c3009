package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.Event;
import io.fencer.lock.Limits;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.ServerConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.server.RaftServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the proposer cuts commands into log entries, on a real one-peer Ratis group: one entry in flight while less
 * than a full batch waits, more only when full batches wait; a lone command lingers only while lone commands find
 * company. An entry is held in flight by holding its apply (a listener of the state machine that waits for a
 * permit), which holds its reply. Time is a ticker moved by hand and lingering expiries run when the test says.
 */
class ProposerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    private RaftNode raft;
    private RaftLockStateMachine stateMachine;
    private Proposer proposer;
    private final AtomicBoolean holdNextApply = new AtomicBoolean();
    private final Semaphore applyHeld = new Semaphore(0);
    private final Semaphore releaseApply = new Semaphore(0);
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = nanos::get;
    /** Lingering expiries the proposer asked for; they run when a test runs them. */
    private final List<Runnable> delays = new CopyOnWriteArrayList<>();
    /** Cancels of those expiries the proposer made. */
    private final AtomicInteger cancels = new AtomicInteger();
    private final MeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void start() throws Exception {
        stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        stateMachine.addListener((List<Event> events) -> {
            if (holdNextApply.compareAndSet(true, false)) {
                applyHeld.release();
                awaitQuietly(releaseApply);
            }
        });
        raft = RaftNode.start(ServerConfig.defaults(directory).withPorts(0, 0, 0), null, stateMachine, () -> 0);
        proposer = new Proposer(raft, stateMachine, ticker, (task, delayNanos) -> {
            delays.add(task);
            return () -> cancels.incrementAndGet();
        });
        await().atMost(WAIT).until(raft::isLeaderReady);
        proposer.propose(command(0)).get(WAIT.toSeconds(), TimeUnit.SECONDS); // the log is past the leader's entry
    }

    @AfterEach
    void stop() {
        releaseApply.release(1_000);
        if (proposer != null) {
            proposer.close();
        }
        if (raft != null) {
            raft.close();
        }
    }

    /**
     * The leader's check before the log: each command that no replica would apply (an id missing, a value out of
     * range, no secret where one is due) is refused to its caller with INVALID_ARGUMENT and never logged.
     */
    @Test
    void propose_commandsBreakingARule_failInvalidArgumentAndNeverReachTheLog() throws Exception {
        SecretHash hash = SecretHash.of("a session secret");
        List<Command> refused = List.of(
                new Command.Acquire(0, hash, "orders", "request-1", false),
                new Command.Acquire(1, SecretHash.NONE, "orders", "request-1", false),
                new Command.CloseSession(-1, hash),
                new Command.ExpireSession(0, false),
                new Command.OpenSession("open-1", 0, "tester", hash),
                new Command.OpenSession("open-1", 60_000, "tester", SecretHash.NONE),
                new Command.AcquirePermit(1, hash, "pool", 0, "request-1", false),
                new Command.Release(1, hash, "orders", 0));
        long before = lastLogIndex();

        for (Command command : refused) {
            assertThat(proposer.propose(command)).as("%s", command).failsWithin(WAIT)
                    .withThrowableOfType(ExecutionException.class).havingCause()
                    .isInstanceOf(InvalidArgumentException.class);
        }

        assertThat(lastLogIndex()).as("the log").isEqualTo(before);
        assertThat(proposer.propose(command(1)).get(WAIT.toSeconds(), TimeUnit.SECONDS)).as("a good command")
                .isInstanceOf(Result.SessionEnded.class);
    }

    @Test
    void propose_whileAnEntryIsInFlight_commandsQueuedMeanwhileLeaveTogetherInTheNextEntry() throws Exception {
        long before = lastLogIndex();
        CompletableFuture<Result> first = holdingTheApplyOf(command(1));

        List<CompletableFuture<Result>> queued = proposeMany(10, 2);
        releaseApply.release();

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
        releaseApply.release();
        first.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        CompletableFuture.allOf(queued.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(lastLogIndex() - before).as("log entries: the held one, a full batch, the rest").isEqualTo(3);
    }

    @Test
    void propose_whenLoneCommandsFindCompany_aLoneCommandWaitsForTheNextAndBothLeaveInOneEntry() throws Exception {
        useProposer(new Linger(1.0, 2_000_000));
        long before = lastLogIndex();

        CompletableFuture<Result> lone = proposer.propose(command(1));
        assertThat(delays).as("the lone command's expiry").hasSize(1);
        assertThat(lone).isNotDone();
        assertThat(lastLogIndex()).as("nothing sent while it waits").isEqualTo(before);
        CompletableFuture<Result> company = proposer.propose(command(2));

        CompletableFuture.allOf(lone, company).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(lastLogIndex() - before).as("log entries for the two commands").isEqualTo(1);
        assertThat(cancels).as("the expiry, cancelled when company came").hasValue(1);
        delays.forEach(Runnable::run); // a late expiry changes nothing
        assertThat(lastLogIndex() - before).isEqualTo(1);
        assertThat(lingers("company")).isEqualTo(1);
        assertThat(lingers("expired")).isZero();
    }

    @Test
    void propose_withLingerOff_aLoneCommandLeavesAtOnceThoughLoneCommandsFindCompany() throws Exception {
        // The same observations as the test above, where the lone command waits: only the window's maximum differs.
        useProposer(new Linger(1.0, 2_000_000, 0));
        long before = lastLogIndex();

        CompletableFuture<Result> lone = proposer.propose(command(1));
        lone.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        proposer.propose(command(2)).get(WAIT.toSeconds(), TimeUnit.SECONDS);

        assertThat(delays).as("no expiry: nothing lingered").isEmpty();
        assertThat(lastLogIndex() - before).as("log entries for the two commands").isEqualTo(2);
        assertThat(lingers("company")).isZero();
        assertThat(lingers("expired")).isZero();
        assertThat(registry.get("fencer.proposer.linger.max").gauge().value()).isZero();
    }

    @Test
    void propose_whenALingeringCommandFindsNoCompany_leavesAloneAtItsExpiry() throws Exception {
        useProposer(new Linger(1.0, 2_000_000));
        long before = lastLogIndex();
        CompletableFuture<Result> lone = proposer.propose(command(1));
        assertThat(delays).hasSize(1);

        delays.get(0).run();

        lone.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(lastLogIndex() - before).isEqualTo(1);
        assertThat(cancels).as("an expiry that ran is not cancelled").hasValue(0);
        assertThat(lingers("expired")).isEqualTo(1);
        assertThat(lingers("company")).isZero();
    }

    @Test
    void propose_whenTheDelayerRefuses_sendsTheLoneCommandAtOnce() throws Exception {
        proposer.close();
        proposer = new Proposer(raft, stateMachine, ticker, (task, delayNanos) -> {
            throw new RejectedExecutionException("the timers stopped");
        }, new Linger(1.0, 2_000_000));

        proposer.propose(command(1)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void propose_aLoneClient_neverWaits() throws Exception {
        useProposer(new Linger(0.4, 2_000_000)); // nearly lingering already
        for (int i = 0; i < 40; i++) {
            // Each command follows the answer of the one before, as a lone client's do: none finds company.
            proposer.propose(command(i)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
            nanos.addAndGet(100_000);
        }
        assertThat(delays).as("expiries armed").isEmpty();
    }

    @Test
    void propose_afterLoneEntriesKeptFindingCompany_startsLingering() throws Exception {
        Linger linger = new Linger(0, 2_000_000);
        useProposer(linger);
        int rounds = 0;
        while (!linger.lingers()) {
            assertThat(rounds++).as("rounds before lone commands linger").isLessThan(30);
            CompletableFuture<Result> lone = holdingTheApplyOf(command(1));
            // Company arrives while the lone entry is in flight: two commands, which then leave together (not lone).
            List<CompletableFuture<Result>> company = proposeMany(2, 2);
            nanos.addAndGet(1_000_000); // the entry takes a millisecond
            releaseApply.release();
            lone.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            CompletableFuture.allOf(company.toArray(CompletableFuture[]::new)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
        // Company every time: the rate passes one half after 11 observations (1 - (15/16)^11 > 0.5).
        assertThat(rounds).isEqualTo(11);
        assertThat(delays).isEmpty();

        CompletableFuture<Result> next = proposer.propose(command(3));

        // It may queue behind the last entry, whose answer is out but whose completion is still running.
        await().atMost(WAIT).until(() -> delays.size() == 1);
        assertThat(next).as("lingering: only its expiry or company sends it").isNotDone();
        delays.get(0).run();
        next.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /**
     * A release answered early waits for the next command even where lone commands never find company (rate 0): its
     * client is not waiting for it, and the two then share one commit. The adaptive measure is left alone.
     */
    @Test
    void proposeEarly_aLoneRelease_waitsForTheNextCommandAndBothLeaveInOneEntry() throws Exception {
        useProposer(new Linger(0.0, 2_000_000));
        long before = lastLogIndex();
        Proposer.DurableMark start = proposer.durableMark();

        Proposer.EarlyRelease early = proposer.proposeEarly(release());
        assertThat(early.sequence()).as("its place").isEqualTo(start.sequence() + 1);
        assertThat(early.durable()).as("the mark when queued").isEqualTo(start);
        assertThat(delays).as("its expiry").hasSize(1);
        assertThat(lastLogIndex()).as("nothing sent while it waits").isEqualTo(before);
        CompletableFuture<Result> company = proposer.propose(command(2));

        CompletableFuture.allOf(early.result(), company).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(lastLogIndex() - before).as("log entries for the two commands").isEqualTo(1);
        assertThat(proposer.durableMark()).isEqualTo(new Proposer.DurableMark(start.incarnation(),
                early.sequence() + 1));
        assertThat(registry.get("fencer.proposer.releases.early").functionCounter().count()).isEqualTo(1);
        assertThat(lingers("company")).isZero();
        assertThat(lingers("expired")).isZero();
    }

    @Test
    void proposeEarly_whenNoCommandFollows_leavesAloneAtItsExpiry() throws Exception {
        useProposer(new Linger(0.0, 2_000_000));
        Proposer.EarlyRelease early = proposer.proposeEarly(release());
        assertThat(early.result()).isNotDone();

        delays.get(0).run();

        early.result().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(proposer.durableMark().sequence()).isEqualTo(early.sequence());
        assertThat(lingers("expired")).as("the adaptive measure").isZero();
    }

    /** A read after an early answer must see the release: it ends the release's linger and waits for its apply. */
    @Test
    void read_afterAReleaseAnsweredEarly_sendsItAtOnceAndRunsAfterItsApply() throws Exception {
        useProposer(new Linger(0.0, 2_000_000));
        Proposer.EarlyRelease early = proposer.proposeEarly(release());
        long before = lastLogIndex();

        Long applied = proposer.read(machine -> early.result().isDone() ? 1L : 0L).get(WAIT.toSeconds(),
                TimeUnit.SECONDS);

        assertThat(applied).as("the release applied before the read ran").isEqualTo(1L);
        assertThat(lastLogIndex() - before).as("the release's entry, sent without its expiry").isEqualTo(1);
        delays.forEach(Runnable::run); // its late expiry changes nothing
        assertThat(lastLogIndex() - before).isEqualTo(1);
    }

    @Test
    void proposeEarly_withLingerOff_leavesAtOnce() throws Exception {
        useProposer(new Linger(0.0, 2_000_000, 0));

        Proposer.EarlyRelease early = proposer.proposeEarly(release());

        early.result().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(delays).isEmpty();
    }

    /**
     * A release answered early that never reached the log (the proposer closed with it queued) must not be vouched
     * for: the mark starts a new incarnation, so that its client re-sends it.
     */
    @Test
    void durableMark_afterQueuedCommandsWereAbandoned_isOfAnotherIncarnation() throws Exception {
        useProposer(new Linger(0.0, 2_000_000));
        Proposer.EarlyRelease early = proposer.proposeEarly(release());

        proposer.close();

        assertThat(early.result()).failsWithin(WAIT);
        Proposer.DurableMark after = proposer.durableMark();
        assertThat(after.incarnation()).isNotEqualTo(early.durable().incarnation());
        assertThat(after.sequence()).as("never past the abandoned release").isLessThan(early.sequence());
    }

    @Test
    void durableMark_ofTwoProposers_areOfDifferentIncarnations() {
        Proposer other = new Proposer(raft, stateMachine, ticker, (task, delayNanos) -> {
            delays.add(task);
            return () -> cancels.incrementAndGet();
        });
        try {
            assertThat(other.durableMark().incarnation()).isNotEqualTo(proposer.durableMark().incarnation());
            assertThat(other.durableMark().sequence()).isZero();
        } finally {
            other.close();
        }
    }

    /**
     * A leader that steps down with a command in its log answers that command's caller "not leader", though the
     * entry may still commit and apply (here it is committed and applies once let go): the proposer once passed that
     * on as NOT_LEADER, which callers read as "nothing was done" and sent again. It is UNAVAILABLE, maybe applied.
     */
    @Test
    void propose_leaderStepsDownWithTheEntryInFlight_failsUnavailableMaybeAppliedAndTheEntryApplies()
            throws Exception {
        CompletableFuture<Result> held = holdingTheApplyOf(command(1));
        long entry = lastLogIndex();

        RaftServer server = raft.server();
        server.transferLeadershipAsync(new TransferLeadershipRequest(ClientId.randomId(), server.getId(),
                RaftNode.GROUP_ID, 1, null, WAIT.toMillis())); // no new leader named: step down

        assertThat(held).as("the step-down answered the command in flight").failsWithin(WAIT)
                .withThrowableOfType(ExecutionException.class).havingCause()
                .isExactlyInstanceOf(UnavailableException.class)
                .withMessageContaining("may or may not have been applied");
        releaseApply.release();
        await().atMost(WAIT).until(() -> raft.appliedIndex() >= entry);
    }

    /** A release of a session that does not exist: queued, logged and applied (refused) like any release. */
    private static Command.Release release() {
        return new Command.Release(1_000_000, SecretHash.of("a session secret"), "orders", 1);
    }

    private void useProposer(Linger linger) {
        proposer.close();
        proposer = new Proposer(raft, stateMachine, ticker, (task, delayNanos) -> {
            delays.add(task);
            return () -> cancels.incrementAndGet();
        }, linger);
        proposer.registerMetrics(registry);
    }

    private double lingers(String outcome) {
        return registry.get("fencer.proposer.lingers").tag("outcome", outcome).functionCounter().count();
    }

    /** Proposes {@code command} and returns once its entry is being applied and held there. */
    private CompletableFuture<Result> holdingTheApplyOf(Command command) throws InterruptedException {
        holdNextApply.set(true);
        CompletableFuture<Result> result = proposer.propose(command);
        assertThat(applyHeld.tryAcquire(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the entry's apply started")
                .isTrue();
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

    private static void awaitQuietly(Semaphore permits) {
        try {
            permits.tryAcquire(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

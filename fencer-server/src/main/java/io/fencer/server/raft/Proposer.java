package io.fencer.server.raft;

import io.fencer.core.FencerException;
import io.fencer.server.net.DiskReserve;
import io.fencer.core.InternalException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.CommandChecks;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.CommandSizes;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.server.rpc.ErrorCatalogue;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayDeque;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.exceptions.RaftException;
import org.apache.ratis.protocol.exceptions.StateMachineException;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The in-process proposer: it submits commands to the local Ratis server, batching concurrent proposals into one
 * log entry, and runs linearizable reads.
 *
 * <p>Batching: proposals queue up and leave in entries of at most {@link #BATCH_COMMANDS_MAX} commands. One entry
 * is in flight at a time while the queue holds less than a full batch: what arrives meanwhile waits for it and
 * leaves together in the next entry. A lone command goes out at once; under load entries grow with the load, which
 * amortizes Ratis's cost per entry (append, replication, fsync, apply, reply) — on each peer, followers included.
 * Only when a full batch waits, waiting cannot grow it, and up to {@link #IN_FLIGHT_ENTRIES_MAX} entries go out
 * without waiting for each other. Entries are submitted in queue order.
 *
 * <p>Lingering: a lone command — nothing in flight, nothing else queued — may wait a short window for company
 * when lone commands lately found some (see {@link Linger}): on a contended lock the releaser's next Acquire and the
 * next holder's Release then leave in one entry, not one behind the other's commit.
 *
 * <p>Answering before durable ({@link #proposeEarly}): every queued command gets the next sequence number, and the
 * {@link #durableMark()} tells up to which number every command is committed and applied. A release answered from
 * its queue place instead of its commit waits up to the linger maximum for company (on a lone client: its own next
 * Acquire), so that one commit, not two, makes both durable. The mark's incarnation is new at every start and after
 * every entry that failed, so that a client re-sends what it was told early once the mark cannot vouch for it.
 */
public final class Proposer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Proposer.class);
    static final int BATCH_COMMANDS_MAX = 256;
    private static final Runnable NO_CANCEL = () -> { };
    /**
     * Entries in flight at once when full batches wait. Measured with 64 clients on their own locks (one sitting,
     * {@code fencer bench lock}): one entry in flight at a time gave 7,270 cycles/s with three peers against 5,382 with
     * two and 4,285 with three (one peer: 24,879 against 20,671), because Ratis's cost per entry — not fsync, which
     * it groups anyway — dominates small entries. Pipelining pays only once waiting no longer makes entries larger.
     */
    static final int IN_FLIGHT_ENTRIES_MAX = 3;
    static final int QUEUED_COMMANDS_MAX = 65_536;
    /**
     * The most bytes of commands in one log entry, counted by {@link CommandSizes#encodedBytesMax} (a lone larger
     * command goes alone: a store write of up to about 1 MiB). Ratis refuses an entry past its appender buffer (4 MiB),
     * and fails every command in it: a batch of 256 multi-locks of 64 long names (4,283,175 bytes) was refused whole
     * ("Log entry size … exceeds the max buffer limit") and cost its leader its term, when only store bytes were
     * counted here.
     */
    static final long BATCH_BYTES_MAX = 2L << 20;

    private final RaftNode raft;
    private final RaftLockStateMachine stateMachine;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final ArrayDeque<Proposal> queue = new ArrayDeque<>(); // guarded by this
    private int inFlightEntries; // guarded by this
    private boolean draining; // guarded by this
    private boolean closed; // guarded by this
    private final Ticker ticker;
    private final Delayer delayer;
    private final Linger linger; // guarded by this
    private long entriesSent; // guarded by this; an entry's generation is the count before it was sent
    private boolean lingering; // guarded by this; the lone queued command waits for company or its expiry
    private boolean lingerExpired; // guarded by this; the lone queued command waited in vain: send it now
    private long watchedEntry = -1; // guarded by this; a lone entry sent at once, whose company is not seen yet
    private long watchedSentNanos; // guarded by this
    private long lingersWithCompany; // guarded by this
    private long lingersExpired; // guarded by this
    private boolean lingeringEarly; // guarded by this; the lingering command was answered early: it always waits
    private Runnable lingerCancel = NO_CANCEL; // guarded by this; cancels the lingering command's expiry
    private final String incarnationBase = Long.toHexString(new java.security.SecureRandom().nextLong());
    private int epoch; // guarded by this; bumped by every failed entry: see durableMark()
    private String incarnation = incarnationBase + "-0"; // guarded by this; of the current epoch
    private long queuedSequence; // guarded by this; the sequence number of the last command queued
    private long durableSequence; // guarded by this; every command up to it is committed and applied
    /** Entries in flight in send order, each as its last command's sequence; a done one is negated. */
    private final ArrayDeque<long[]> inFlightSequences = new ArrayDeque<>(); // guarded by this
    private long answeredEarly; // guarded by this
    private long handOffsAnswered; // guarded by this
    /** When a release's grant may be answered before it is durable (see {@link #proposeHandOff}). */
    private HandOffGate handOffs = new HandOffGate(0); // guarded by this
    /**
     * True while a RaiseFloor may be owed: only then does a send ask Ratis for the group's size, outside the lock
     * (Ratis may call back into this class while holding its own locks).
     */
    private volatile boolean raiseMaybeOwed;
    /** True while the current incarnation may give tickets (its RaiseFloor applied): read without the lock. */
    private volatile boolean handOffsArmed;
    /** The result of the last release answered early: reads wait for it (see {@link #read}). */
    private CompletableFuture<Result> lastEarly = CompletableFuture.completedFuture(null); // guarded by this

    /** Runs a task after a delay, never within the call that asks for it. */
    @FunctionalInterface
    public interface Delayer {
        /**
         * Runs {@code task} once, {@code delayNanos} from now; may throw if it no longer runs tasks. Returns what
         * cancels it, at best: a task that runs after its cancel must find nothing to do.
         */
        Runnable delay(Runnable task, long delayNanos);
    }

    /**
     * One command waiting for its result: its place in the queue's order, and, for a release answered early, the
     * durable mark when it was queued (null otherwise).
     */
    private record Proposal(Command command, CompletableFuture<Result> result, long sequence, DurableMark early,
            boolean handOff, long bytesMax) {
        Proposal(Command command, CompletableFuture<Result> result, long sequence, DurableMark early,
                boolean handOff) {
            this(command, result, sequence, early, handOff, CommandSizes.encodedBytesMax(command));
        }
    }

    /** The ticket of a command that is not an early hand-off (see {@link #proposeHandOff}). */
    private static final long NOT_A_HAND_OFF = Long.MIN_VALUE;

    /**
     * How far the commands this proposer queued are durable: every one up to and including {@code sequence} of
     * {@code incarnation} is committed and applied. The wire form is locks.proto's {@code DurableMark}.
     */
    public record DurableMark(String incarnation, long sequence) {}

    /** A release queued to be answered before it is durable: its result, its sequence, and the mark when queued. */
    public record EarlyRelease(CompletableFuture<Result> result, long sequence, DurableMark durable) {}

    /**
     * Creates the proposer of {@code raft}'s group.
     *
     * @param ticker the clock of entry latencies and lingering windows
     * @param delayer runs a lingering command's expiry
     */
    public Proposer(RaftNode raft, RaftLockStateMachine stateMachine, Ticker ticker, Delayer delayer) {
        this(raft, stateMachine, ticker, delayer, new Linger());
    }

    /**
     * Creates the proposer of {@code raft}'s group whose lone commands wait at most {@code lingerMax} for company
     * (see {@link Linger}; ZERO = never).
     */
    public Proposer(RaftNode raft, RaftLockStateMachine stateMachine, Ticker ticker, Delayer delayer,
            Duration lingerMax) {
        this(raft, stateMachine, ticker, delayer, new Linger(lingerMax.toNanos()));
    }

    /**
     * As {@link #Proposer(RaftNode, RaftLockStateMachine, Ticker, Delayer, Duration)}, refusing commands while the
     * data directory's file system is short of {@code disk}'s reserve (see {@link DiskReserve#check}).
     */
    public Proposer(RaftNode raft, RaftLockStateMachine stateMachine, Ticker ticker, Delayer delayer,
            Duration lingerMax, DiskReserve disk) {
        this(raft, stateMachine, ticker, delayer, new Linger(lingerMax.toNanos()));
        this.disk = Objects.requireNonNull(disk, "disk");
    }

    /** The data directory's reserve, checked before every command; null = not checked (tests of the batching). */
    private DiskReserve disk;

    Proposer(RaftNode raft, RaftLockStateMachine stateMachine, Ticker ticker, Delayer delayer, Linger linger) {
        this.raft = Objects.requireNonNull(raft, "raft");
        this.stateMachine = Objects.requireNonNull(stateMachine, "stateMachine");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.delayer = Objects.requireNonNull(delayer, "delayer");
        this.linger = Objects.requireNonNull(linger, "linger");
    }

    /**
     * Proposes {@code command}; the future completes with its result once applied, or fails with
     * {@link UnavailableException} (the command may or may not have been applied: never {@code NotLeaderException},
     * which callers take to mean nothing was done, so leadership is checked before proposing) or
     * {@link InternalException}. A command that breaks {@link CommandChecks#checkProposal} fails at once with
     * {@link io.fencer.core.InvalidArgumentException} and never reaches the log; so does every command while this
     * peer is halted ({@link RaftLockStateMachine#halt()}), with {@link UnavailableException} naming the halt.
     */
    public CompletableFuture<Result> propose(Command command) {
        return enqueue(command, false, NOT_A_HAND_OFF).result;
    }

    /**
     * Queues {@code release} to be answered before it is durable: the caller answers once this returns, since every
     * command queued later is applied after it. It leaves with the next command to come, or after the linger maximum
     * (at once when lingering is off); its future completes as {@link #propose}'s. Returns null when it was not queued
     * (its future failed: see {@link #propose}); the caller then answers from that future instead.
     */
    public EarlyRelease proposeEarly(Command.Release release) {
        Proposal proposal = enqueue(release, true, NOT_A_HAND_OFF);
        return proposal.sequence == 0 ? null : new EarlyRelease(proposal.result, proposal.sequence, proposal.early);
    }

    /**
     * Returns a ticket for an early hand-off ({@link #proposeHandOff}), to take before reading the state the answer
     * rests on; -1 when no grant may be answered early now: no RaiseFloor of this incarnation has applied yet (see
     * {@link #enableHandOffs}), or a command that may change a hand-off is queued (see {@link HandOffGate}).
     */
    public synchronized long handOffTicket() {
        return handOffs.ticket(incarnation);
    }

    /**
     * Queues {@code release}, whose grant the caller answers at once, before it is durable: the caller read the
     * state after taking {@code ticket} and found the grant this release's entry will make. Returns null, queuing
     * nothing, when the ticket is no longer good (a command that may change a hand-off was queued since, or the
     * incarnation changed) or the release was refused; the caller then proposes it the usual way. As
     * {@link #proposeEarly} otherwise: every command queued later is applied after it.
     */
    public EarlyRelease proposeHandOff(Command.Release release, long ticket) {
        if (ticket < 0) {
            return null;
        }
        Proposal proposal = enqueue(release, true, ticket);
        return proposal == null || proposal.sequence == 0 ? null
                : new EarlyRelease(proposal.result, proposal.sequence, proposal.early);
    }

    /**
     * Turns early hand-offs on with at most {@code gap} grants of a lock answered ahead of its applied state: before
     * any other command (there are none yet: call it before the services start) this proposer sends a
     * {@link Command.RaiseFloor} of {@code gap} when it serves a group of one, since the process before it may have
     * answered grants that a crash lost; tickets are given once it applied. 0 = off.
     */
    public synchronized void enableHandOffs(int gap) {
        if (queuedSequence > 0) {
            throw new IllegalStateException("early hand-offs are turned on before the first command, not after "
                    + queuedSequence);
        }
        handOffs = new HandOffGate(gap);
        gateChanged();
    }

    /**
     * True when this incarnation's RaiseFloor has applied, so that a hand-off may be answered early ({@link
     * #handOffTicket} tells whether one may now); false in a group of more peers. Read without the lock: a cheap first
     * check on every release.
     */
    public boolean handOffsArmed() {
        return handOffsArmed;
    }

    /**
     * A group of one that read format level 4 when its start's RaiseFloor applied (refused there) arms once its level
     * is raised. (A SetFormatLevel completes after a RaiseFloor of its entry, whose end the gate has then seen.)
     */
    private void levelSet(Result result) {
        if (result instanceof Result.FormatLevelSet set && set.level() >= LockStateMachine.FORMAT_LEVEL_RAISE_FLOOR) {
            synchronized (this) {
                handOffs.levelRaised(incarnation);
                gateChanged();
            }
        }
    }

    /** Mirrors the gate in the fields read without the lock. */
    private void gateChanged() {
        assert Thread.holdsLock(this) : "the gate is read under the lock";
        raiseMaybeOwed = handOffs.raiseOwed();
        handOffsArmed = handOffs.ticketsPossible(incarnation);
    }

    /** Puts the RaiseFloor owed at the head of the queue (see {@link HandOffGate#owedRaise}). */
    private void queueOwedRaise(boolean groupOfOne) {
        assert Thread.holdsLock(this) : "the queue is written under the lock";
        Command.RaiseFloor owed = handOffs.owedRaise(groupOfOne);
        gateChanged();
        if (owed == null) {
            return;
        }
        // Its sequence is the durable one: it must not move the mark past commands queued behind it.
        Proposal raise = new Proposal(owed, new CompletableFuture<>(), durableSequence, null, false);
        handOffs.queued(owed, false);
        queue.addFirst(raise);
        String queuedIn = incarnation;
        raise.result.whenComplete((result, error) -> {
            synchronized (this) {
                handOffs.raiseEnded(error == null, result instanceof Result.FloorRaised, queuedIn, incarnation);
                gateChanged();
            }
            if (result instanceof Result.Rejected rejected) {
                LOG.info("early hand-offs stay off: the floor was not raised: {}", rejected.error().getMessage());
            }
        });
    }

    private void newEpoch() {
        assert Thread.holdsLock(this) : "the epoch is written under the lock";
        epoch++;
        incarnation = incarnationBase + "-" + epoch;
        // A RaiseFloor owed now goes ahead of everything queued at the next send, before the failed entry's callers
        // hear of it: no grant that a reaction to the loss makes takes a token an early hand-off answered.
        handOffs.newIncarnation(incarnation);
        gateChanged();
    }

    /** Returns how far the queued commands are durable now (see {@link DurableMark}). */
    public synchronized DurableMark durableMark() {
        return new DurableMark(incarnation, durableSequence);
    }

    /**
     * Queues {@code command}; a proposal of sequence 0 was refused, its future failed. An early hand-off
     * ({@code handOffTicket} not {@link #NOT_A_HAND_OFF}) whose ticket is no longer good is not queued: null.
     */
    private Proposal enqueue(Command command, boolean early, long handOffTicket) {
        Objects.requireNonNull(command, "command");
        try {
            CommandChecks.checkProposal(command, stateMachine.limits());
        } catch (FencerException e) {
            return refused(command, e);
        }
        ApplyHalt halted = stateMachine.halt();
        if (halted != null) {
            return refused(command, new UnavailableException(halted.message()));
        }
        if (disk != null) {
            try {
                disk.check(addsState(command));
            } catch (FencerException e) {
                return refused(command, e); // before the log: Ratis must never meet a full disk
            }
        }
        Proposal proposal;
        synchronized (this) {
            if (closed) {
                return refused(command, new UnavailableException("the server is shutting down"));
            }
            if (queue.size() >= QUEUED_COMMANDS_MAX) {
                return refused(command, new UnavailableException("the server is overloaded: "
                        + queue.size() + " commands queued, the most allowed is " + QUEUED_COMMANDS_MAX));
            }
            boolean handOff = handOffTicket != NOT_A_HAND_OFF;
            if (handOff && !handOffs.admits(handOffTicket, incarnation)) {
                return null;
            }
            // An early answer names the incarnation it was queued under: a failed entry after this starts another.
            proposal = new Proposal(command, new CompletableFuture<>(), ++queuedSequence, early ? durableMark() : null,
                    handOff);
            queue.add(proposal);
            handOffs.queued(command, handOff);
            if (command instanceof Command.SetFormatLevel) {
                proposal.result.thenAccept(this::levelSet);
            }
            if (early) {
                lastEarly = proposal.result;
                if (handOff) {
                    handOffsAnswered++;
                } else {
                    answeredEarly++;
                }
            }
            if (watchedEntry >= 0) {
                // Company for the lone entry in flight: would it have come within the window?
                linger.observeCompany(ticker.nanoTime() - watchedSentNanos <= linger.windowNanos());
                watchedEntry = -1;
            }
        }
        drain();
        return proposal;
    }

    private static Proposal refused(Command command, FencerException failure) {
        return new Proposal(command, CompletableFuture.failedFuture(failure), 0, null, false);
    }

    /** Returns true for a command that makes the state larger; false for one that frees state or records leases. */
    private static boolean addsState(Command command) {
        return command instanceof Command.OpenSession || command instanceof Command.Acquire
                || command instanceof Command.AcquireAll || command instanceof Command.AcquirePermit;
    }

    /**
     * Runs {@code reader} on the state machine as a linearizable read: it sees every command committed before
     * the read started, and every release answered before it was durable (the read waits for the last one to apply,
     * and ends its linger: a reader is company enough), so that nobody reads a release undone after its answer.
     */
    public <T> CompletableFuture<T> read(Function<LockStateMachine, T> reader) {
        CompletableFuture<Result> early;
        synchronized (this) {
            early = lastEarly;
            if (!early.isDone() && lingering && lingeringEarly) {
                lingering = false;
                lingerExpired = true; // sent by the drain below; its expiry, if it runs, finds nothing to do
                lingerCancel.run();
            }
        }
        if (early.isDone()) {
            return readNow(reader);
        }
        drain();
        return early.handle((result, error) -> null).thenCompose(ignored -> readNow(reader));
    }

    private <T> CompletableFuture<T> readNow(Function<LockStateMachine, T> reader) {
        ApplyHalt halted = stateMachine.halt();
        if (halted != null) {
            return CompletableFuture.failedFuture(new UnavailableException(halted.message()));
        }
        long id = callIds.incrementAndGet();
        CompletableFuture<T> result = stateMachine.registerRead(id, reader);
        RaftClientRequest request = request(id, RaftClientRequest.readRequestType(),
                RaftLockStateMachine.readMessage(id));
        raft.submit(request).whenComplete((reply, error) -> {
            if (result.isDone()) {
                return;
            }
            stateMachine.cancelRead(id);
            FencerException failure = error != null ? unavailable(error) : replyError(reply);
            result.completeExceptionally(failure != null ? failure
                    : new InternalException("read " + id + " succeeded without running its query"));
        });
        return result;
    }

    /**
     * Sends queued commands while entries may be in flight. One thread at a time sends (the {@code draining}
     * flag), which keeps entries in queue order; it sends outside the lock, because Ratis may complete a reply
     * (and so call back into this class) while holding its own server lock.
     */
    private void drain() {
        while (true) {
            List<Proposal> batch;
            long entry;
            long[] inFlight;
            boolean groupOfOne = raiseMaybeOwed && raft.configurationSize() == 1;
            synchronized (this) {
                if (raiseMaybeOwed && !queue.isEmpty() && !closed) {
                    queueOwedRaise(groupOfOne);
                }
                if (draining || inFlightEntries >= inFlightEntriesAllowed() || queue.isEmpty() || lingers()) {
                    return; // the thread that is draining loops again and picks up what was queued meanwhile
                }
                draining = true;
                boolean lone = inFlightEntries == 0 && queue.size() == 1;
                batch = new ArrayList<>(Math.min(queue.size(), BATCH_COMMANDS_MAX));
                long batchBytes = 0;
                while (batch.size() < BATCH_COMMANDS_MAX && !queue.isEmpty()
                        && (batch.isEmpty() || batchBytes + queue.peek().bytesMax <= BATCH_BYTES_MAX)) {
                    batchBytes += queue.peek().bytesMax;
                    batch.add(queue.poll());
                }
                entry = sent(lone);
                inFlight = new long[] {batch.get(batch.size() - 1).sequence};
                inFlightSequences.add(inFlight);
            }
            try {
                submit(batch, entry, inFlight);
            } finally {
                synchronized (this) {
                    draining = false;
                }
            }
        }
    }

    /**
     * Returns whether the queued command waits for company now; arms its expiry when it starts waiting. Only a
     * lone command lingers, once: company ends the wait (the queue grows), and so does the expiry.
     */
    private boolean lingers() {
        assert Thread.holdsLock(this) : "the linger state is read under the lock";
        if (inFlightEntries > 0 || queue.size() != 1) {
            return false;
        }
        if (lingering) {
            return true;
        }
        // A release answered early waits for company whatever the company rate: its client is not waiting for it.
        boolean early = queue.peek().early != null;
        if (lingerExpired || closed || !(early ? linger.windowNanosMax() > 0 : linger.lingers())) {
            return false;
        }
        long entry = entriesSent;
        try {
            long windowNanos = early ? linger.windowNanosMax() : linger.windowNanos();
            lingerCancel = Objects.requireNonNullElse(delayer.delay(() -> expire(entry), windowNanos), NO_CANCEL);
        } catch (RuntimeException e) {
            return false; // the delayer stopped (the server is closing): nothing would end the wait
        }
        lingering = true;
        lingeringEarly = early;
        return true;
    }

    /** Ends the wait of the lone command queued before entry {@code entry}, unless company ended it already. */
    private void expire(long entry) {
        synchronized (this) {
            if (!lingering || entriesSent != entry) {
                return;
            }
            lingering = false;
            lingerExpired = true;
            if (!lingeringEarly) { // the company rate is the lone clients' and the contended locks' measure
                lingersExpired++;
                linger.observeCompany(false);
            }
        }
        drain();
    }

    /**
     * Records that the next entry leaves ({@code lone}: one command, nothing in flight) and returns its
     * generation. A lone entry sent at once is watched for company.
     */
    private long sent(boolean lone) {
        assert Thread.holdsLock(this) : "the linger state is written under the lock";
        if (lingering) {
            lingering = false; // company came: the queue grew past the lingering command
            lingerCancel.run(); // its expiry would find nothing to do; cancelled, it wakes no thread
            if (!lingeringEarly) {
                lingersWithCompany++;
                linger.observeCompany(true);
            }
        }
        long entry = entriesSent++;
        watchedEntry = lone && !lingerExpired ? entry : -1;
        if (watchedEntry >= 0) {
            watchedSentNanos = ticker.nanoTime();
        }
        lingerExpired = false;
        inFlightEntries++;
        return entry;
    }

    /**
     * Registers the proposer's counters: log entries sent ({@code fencer.proposer.entries}) and lone commands
     * that lingered ({@code fencer.proposer.lingers}, tagged {@code outcome}: {@code company} when another command
     * joined them, {@code expired} when none came within the window), and the longest window a lone command may
     * linger ({@code fencer.proposer.linger.max}, seconds: {@code fencer server --linger}; 0 = lingering off).
     */
    public void registerMetrics(MeterRegistry registry) {
        String lingers = "Lone commands that waited for company (outcome company: joined; expired: none came)";
        FunctionCounter.builder("fencer.proposer.entries", this, Proposer::entriesSent)
                .description("Log entries the proposer sent").register(registry);
        FunctionCounter.builder("fencer.proposer.lingers", this, Proposer::lingersWithCompany)
                .tag("outcome", "company").description(lingers).register(registry);
        FunctionCounter.builder("fencer.proposer.lingers", this, Proposer::lingersExpired)
                .tag("outcome", "expired").description(lingers).register(registry);
        FunctionCounter.builder("fencer.proposer.releases.early", this, Proposer::releasesAnsweredEarly)
                .description("Releases answered before they were durable (a group of one peer, when the client"
                        + " re-sends them)").register(registry);
        FunctionCounter.builder("fencer.proposer.handoffs.early", this, Proposer::handOffsAnswered)
                .description("Releases whose grant was answered before they were durable (a group of one peer, for"
                        + " a client that reports such a grant lost if the peer restarts first)").register(registry);
        Gauge.builder("fencer.proposer.linger.max", this, Proposer::lingerSecondsMax).baseUnit("seconds")
                .description("The longest a lone command waits for company (0 = lingering off)").register(registry);
    }

    private synchronized double lingerSecondsMax() {
        return linger.windowNanosMax() / 1e9;
    }

    private synchronized double entriesSent() {
        return entriesSent;
    }

    private synchronized double lingersWithCompany() {
        return lingersWithCompany;
    }

    private synchronized double releasesAnsweredEarly() {
        return answeredEarly;
    }

    private synchronized double handOffsAnswered() {
        return handOffsAnswered;
    }

    private synchronized double lingersExpired() {
        return lingersExpired;
    }

    /** Returns how many entries may be in flight now: one, unless a full batch waits (see the class doc). */
    private int inFlightEntriesAllowed() {
        assert Thread.holdsLock(this) : "the queue is read under the lock";
        // An entry that carries an early hand-off goes alone: if it fails, the RaiseFloor it owes must come before
        // every command after it, and nothing after it may be in the log already.
        return queue.size() >= BATCH_COMMANDS_MAX && !handOffs.handOffsOutstanding() ? IN_FLIGHT_ENTRIES_MAX : 1;
    }

    private void submit(List<Proposal> batch, long entry, long[] inFlight) {
        List<Command> commands = new ArrayList<>(batch.size());
        batch.forEach(proposal -> commands.add(proposal.command));
        long sentNanos = ticker.nanoTime();
        CompletableFuture<RaftClientReply> reply;
        try {
            byte[] encoded = CommandCodec.encodeCommands(commands);
            assert encoded.length <= CommandSizes.BATCH_HEADER_BYTES
                    + batch.stream().mapToLong(Proposal::bytesMax).sum()
                    : "a batch of " + batch.size() + " commands took " + encoded.length + " bytes, past its bound";
            long callId = callIds.incrementAndGet();
            reply = raft.submit(request(callId, RaftClientRequest.writeRequestType(),
                    Message.valueOf(UnsafeByteOperations.unsafeWrap(encoded))));
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((answer, error) -> {
            try {
                answered(entry, sentNanos);
                complete(batch, answer, error, inFlight);
            } finally {
                synchronized (this) {
                    inFlightEntries--;
                }
                drain();
            }
        });
    }

    /** Records an entry's latency; a watched lone entry answered before any company arrived found none. */
    private synchronized void answered(long entry, long sentNanos) {
        linger.observeEntry(Math.max(0, ticker.nanoTime() - sentNanos));
        if (watchedEntry == entry) {
            linger.observeCompany(false);
            watchedEntry = -1;
        }
    }

    private RaftClientRequest request(long callId, RaftClientRequest.Type type, Message message) {
        return RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(raft.selfId())
                .setGroupId(raft.groupId())
                .setCallId(callId)
                .setMessage(message)
                .setType(type)
                .build();
    }

    /**
     * Marks the entry ending in {@code inFlight}'s sequence done; the durable mark moves over the done entries at
     * the head of the send order. A failed entry may or may not have applied: it starts a new incarnation.
     */
    private synchronized void durable(long[] inFlight, boolean applied, List<Proposal> batch) {
        for (Proposal proposal : batch) {
            handOffs.done(proposal.command, proposal.handOff);
        }
        if (!applied) {
            newEpoch();
        }
        inFlight[0] = -inFlight[0];
        while (!inFlightSequences.isEmpty() && inFlightSequences.peekFirst()[0] < 0) {
            durableSequence = Math.max(durableSequence, -inFlightSequences.pollFirst()[0]);
        }
        assert durableSequence <= queuedSequence : "durable " + durableSequence + " > queued " + queuedSequence;
    }

    /**
     * Completes the batch's futures from the entry's reply, after moving the durable mark: a caller that sees a result
     * then sees a mark that covers it.
     */
    private void complete(List<Proposal> batch, RaftClientReply reply, Throwable error, long[] inFlight) {
        FencerException failure = error != null ? unavailable(error) : replyError(reply);
        if (failure == null && reply.getMessage().getContent().isEmpty()) {
            // The state machine applied nothing: it halted at this entry or before it, or refused it undecodable.
            ApplyHalt halted = stateMachine.halt();
            failure = halted != null ? new UnavailableException(halted.message())
                    : new InternalException("the state machine refused a log entry of " + batch.size()
                            + " commands: it did not decode there");
        }
        if (failure == null) {
            List<Result> results;
            try {
                results = CommandCodec.decodeResults(reply.getMessage().getContent().toByteArray());
            } catch (RuntimeException e) {
                LOG.error("undecodable results for {} commands", batch.size(), e);
                results = List.of();
            }
            if (results.size() == batch.size()) {
                durable(inFlight, true, batch);
                for (int i = 0; i < batch.size(); i++) {
                    batch.get(i).result.complete(results.get(i));
                    if (batch.get(i).early != null && results.get(i) instanceof Result.Rejected rejected) {
                        // Its session ended, or an operator revoked its grant, after it was answered: gone either way.
                        LOG.info("a release answered before it was durable was refused when applied: {}",
                                rejected.error().getMessage());
                    }
                }
                return;
            }
            failure = new InternalException("a log entry of " + batch.size() + " commands answered "
                    + results.size() + " results");
        }
        durable(inFlight, false, batch);
        for (Proposal proposal : batch) {
            proposal.result.completeExceptionally(failure);
        }
    }

    /** Maps a failed reply to Fencer's error catalogue; returns null for a successful reply. */
    private FencerException replyError(RaftClientReply reply) {
        if (reply.isSuccess()) {
            return null;
        }
        org.apache.ratis.protocol.exceptions.NotLeaderException notLeader = reply.getNotLeaderException();
        if (notLeader != null) {
            // Not NOT_LEADER, which says nothing was done: the services check leadership before they propose, so
            // this is a leader that stepped down after the entry was submitted, and Ratis answers so every entry
            // still in flight, which a new leader (or this peer, leading again) may yet commit and apply.
            RaftPeer suggested = notLeader.getSuggestedLeader();
            return new UnavailableException("this peer stopped leading while the command was in its log: it may or"
                    + " may not have been applied (a new leader may still commit it); the leader is "
                    + (suggested == null ? "not known yet" : raft.clientAddress(suggested.getId())));
        }
        RaftException exception = reply.getException();
        ApplyHalt halted = stateMachine.halt();
        if (halted != null) {
            return new UnavailableException(halted.message()); // whatever Ratis says, the halt is why
        }
        if (exception instanceof StateMachineException) {
            LOG.error("the state machine failed a command", exception);
            return new InternalException("the state machine failed: " + exception.getMessage());
        }
        String why = exception == null ? "no reason given" : exception.getClass().getSimpleName() + ": "
                + exception.getMessage();
        return new UnavailableException("the raft group could not serve the request (" + why + ")", exception);
    }

    private static FencerException unavailable(Throwable error) {
        Throwable cause = ErrorCatalogue.unwrap(error);
        if (cause instanceof FencerException fencerException) {
            return fencerException;
        }
        return new UnavailableException("the raft server could not take the request: " + cause, cause);
    }

    /** Fails every queued proposal; later proposals fail at once. In-flight entries complete on their own. */
    @Override
    public void close() {
        List<Proposal> abandoned;
        synchronized (this) {
            closed = true;
            abandoned = new ArrayList<>(queue);
            queue.clear();
            abandoned.forEach(proposal -> handOffs.done(proposal.command, proposal.handOff));
            newEpoch(); // the abandoned commands never reach the log, releases answered early among them
        }
        UnavailableException failure = new UnavailableException("the server is shutting down");
        abandoned.forEach(proposal -> proposal.result.completeExceptionally(failure));
    }
}

package io.fencer.server.raft;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Applied;
import io.fencer.lock.Command;
import io.fencer.lock.CommandChecks;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.Event;
import io.fencer.lock.IdentityUsage;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.server.net.RefusalLog;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.LifeCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Ratis state machine of the lock service: it applies log entries (batches of {@link Command}s) to one
 * {@link LockStateMachine}, replies with their {@link Result}s, hands the {@link Event}s to the server's
 * listeners, and snapshots the whole state to one file ({@link SnapshotFiles}).
 *
 * <p>{@link LockStateMachine} is not thread-safe: applies, snapshots and reads all run under {@link #lock}.
 * Reads that must be linearizable go through Ratis read requests: the proposer registers a read ({@link PendingReads}) and
 * sends its id as the query; Ratis calls {@link #query} once the read index is applied, and the task runs there.
 *
 * <p><b>Entries that must not be applied.</b> A log entry comes from the leader, which checks every command before
 * proposing it ({@link Proposer}, {@link CommandChecks#checkProposal}); but an entry is bytes from another peer or
 * from disk, written perhaps by a buggy or hostile leader. Two kinds are told apart:
 * <ul>
 *   <li><em>Refused entries</em>: an entry that does not decode ({@link CommandCodec} refuses it) is applied as a
 *       no-op; a command that decodes but breaks {@link CommandChecks#checkApplied} is applied as a no-op with a
 *       {@link Result.Rejected} INVALID_ARGUMENT result, the other commands of its entry applied as usual. Each such
 *       entry is logged at WARN with its index and the reason (never its bytes, which may carry secret hashes; the
 *       lines are bounded per interval) and counted ({@code fencer_raft_entries_refused_total}). This is safe
 *       because the decision depends only on the entry's bytes and the state, the same on every replica, so every
 *       replica refuses the same entries and their states never diverge; and, since every earlier release also
 *       left the state unchanged for these entries (it failed to decode them before applying anything, or rejected
 *       the command), replicas of different releases agree too.</li>
 *   <li><em>A halt</em>: anything else that fails while an entry is applied (the state machine throws: a bug, a
 *       failed assertion, memory exhausted) cannot be decided from the entry alone, and the failed command may have
 *       changed part of the state. This peer then halts applying at that index ({@link ApplyHalt}): it logs one
 *       ERROR with the stack trace, keeps its data as it is, and serves no client (every call answers UNAVAILABLE
 *       naming the halt; {@code /healthz} answers 503).</li>
 * </ul>
 *
 * <p><b>How a halt holds Ratis's updater.</b> Ratis's updater thread goes on calling {@link #applyTransaction} for
 * every committed entry; after the halt each call returns at once with an empty reply, touches no state, and the
 * last applied index this state machine reports stays before the halted entry. The alternatives fail: an exception
 * thrown from the apply makes Ratis close the division (CLOSED), and since the log is unchanged the next start
 * replays the entry and closes it again, a crash loop; a failed future is logged by Ratis with a stack trace for
 * every later entry; a future left incomplete hangs Ratis's updater the next time it waits for its applies (before a
 * snapshot, at shutdown). No snapshot is taken while halted ({@link #takeSnapshot} declines, one line per interval):
 * the state may be half-changed by the failed entry and must not be persisted. So the log from the last snapshot on
 * stays on disk, and a restart replays it up to the same entry and halts there again (deterministically, when the
 * cause is), with one ERROR, not a crash loop. A snapshot installed from the leader replaces the state and ends the
 * halt; the apply goes on from it.
 */
public final class RaftLockStateMachine extends BaseStateMachine {
    private static final Logger LOG = LoggerFactory.getLogger(RaftLockStateMachine.class);
    /** At most one line per kind of refused entry per interval; the next line counts those left out. */
    static final Duration REFUSALS_LOG_INTERVAL = Duration.ofSeconds(10);
    /** While halted, at most one line per interval about the entries not applied and the snapshots declined. */
    static final Duration HALTED_LOG_INTERVAL = Duration.ofMinutes(1);

    private final Limits limits;
    private final Applier applier;
    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final ReentrantLock lock = new ReentrantLock();
    private final List<AppliedListener> listeners = new CopyOnWriteArrayList<>();
    private final List<Runnable> leadershipHooks = new CopyOnWriteArrayList<>();
    private final List<Consumer<ApplyHalt>> haltHooks = new CopyOnWriteArrayList<>();
    private final PendingReads reads = new PendingReads();
    private final RefusalLog refusalLines;
    private final RefusalLog haltedLines;
    private final AtomicLong undecodableEntries = new AtomicLong();
    private final AtomicLong malformedEntries = new AtomicLong();
    private final AtomicLong entriesNotApplied = new AtomicLong();
    private LockStateMachine machine; // guarded by lock
    private volatile Counts counts = new Counts(0, 0, 0);
    /** Set when an apply failed (see the class doc); null while this peer applies the log. */
    private volatile ApplyHalt halt;
    /** The store replicated beside the lock state, or null (a single peer's store, or none); set before start. */
    private volatile ReplicatedResource resource;
    /**
     * Whether the log this peer applied, without a {@link #resource}, may have held store entries: then its snapshot
     * cannot say what the group's replicated store held, and carries no store. Else (a group of one, whose store is
     * its own) the replicated store is empty, and its snapshot says so, so that a peer added later, which Ratis sends
     * the leader's latest snapshot, starts with an empty replica. Guarded by {@link #lock}.
     */
    private boolean storeEntriesUnknown;
    /**
     * Whether this peer's latest snapshot holds no store at the level whose log carries store entries: Ratis would
     * send it to a new peer, which refuses it ({@link FormatLevelGate} renews it where it can).
     */
    private volatile boolean latestSnapshotLacksTheStore;
    /**
     * The usage of each identity with an open session, as of the last apply: published from the machine's changes
     * after every log entry (and whole after a snapshot is loaded), under the lock, before the entry's proposers are
     * answered; read without the lock by the leader's quota checks.
     */
    private final ConcurrentHashMap<String, IdentityUsage> usage = new ConcurrentHashMap<>();

    /** Sizes of the state, published after every apply for gauges that must not take the lock. */
    public record Counts(int sessions, int locks, int waiters) {}

    /** Applies one command to the state; a seam for tests that make an apply fail as a bug would. */
    @FunctionalInterface
    interface Applier {
        Applied apply(LockStateMachine machine, Command command);
    }

    public RaftLockStateMachine(Limits limits) {
        this(limits, Ticker.system());
    }

    /** @param ticker the clock of the bounds on log lines */
    public RaftLockStateMachine(Limits limits, Ticker ticker) {
        this(limits, ticker, LockStateMachine::apply);
    }

    RaftLockStateMachine(Limits limits, Ticker ticker, Applier applier) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.applier = Objects.requireNonNull(applier, "applier");
        this.machine = new LockStateMachine(limits);
        this.refusalLines = new RefusalLog(ticker, REFUSALS_LOG_INTERVAL, 4);
        this.haltedLines = new RefusalLog(ticker, HALTED_LOG_INTERVAL, 4);
    }

    /** Returns the limits of the state machine: those the leader checks commands against before proposing. */
    public Limits limits() {
        return limits;
    }

    /** Returns why and where this peer halted applying the log, or null while it applies it (see the class doc). */
    public ApplyHalt halt() {
        return halt;
    }

    /** Adds a hook run once when this peer halts (on Ratis's apply thread, so it must be quick). */
    public void addHaltHook(Consumer<ApplyHalt> hook) {
        haltHooks.add(Objects.requireNonNull(hook, "hook"));
    }

    /**
     * Registers the counts of refused log entries ({@code fencer.raft.entries.refused}, tagged {@code why}:
     * {@code undecodable} for an entry applied as a no-op, {@code malformed} for one with commands applied as
     * no-ops) and the halt ({@code fencer.raft.halted}: 1 while halted; {@code fencer.raft.entries.unapplied}:
     * entries committed after the halt and not applied).
     */
    public void registerMetrics(MeterRegistry registry) {
        String refused = "Log entries refused: undecodable (a no-op), malformed (some commands no-ops), raft-port"
                + " (refused before the log)";
        FunctionCounter.builder("fencer.raft.entries.refused", undecodableEntries, AtomicLong::doubleValue)
                .tag("why", "undecodable").description(refused).register(registry);
        FunctionCounter.builder("fencer.raft.entries.refused", malformedEntries, AtomicLong::doubleValue)
                .tag("why", "malformed").description(refused).register(registry);
        FunctionCounter.builder("fencer.raft.entries.unapplied", entriesNotApplied, AtomicLong::doubleValue)
                .description("Log entries committed after this peer halted applying, not applied").register(registry);
        Gauge.builder("fencer.raft.halted", this, machine -> machine.halt == null ? 0 : 1)
                .description("1 while this peer has halted applying the Raft log (see /healthz)").register(registry);
    }

    /** Adds a receiver of the events of every entry applied from now on (before the start: the log replay too). */
    public void addListener(AppliedListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Adds a hook run (on a Ratis thread, so it must be quick) when the leader changes, when this peer, as the new
     * leader, has applied its whole log, and when Ratis closes this peer's division.
     */
    public void addLeadershipHook(Runnable hook) {
        leadershipHooks.add(Objects.requireNonNull(hook, "hook"));
    }

    /**
     * Returns what the sessions of {@code quotaIdentity} held as of the last apply, without taking the lock: a
     * proposal's effect is in it once the proposal's future completes.
     */
    public IdentityUsage usage(String quotaIdentity) {
        return usage.getOrDefault(quotaIdentity, IdentityUsage.NONE);
    }

    /** Returns the sizes of the state as of the last apply, without taking the lock. */
    public Counts counts() {
        return counts;
    }

    /**
     * Starts from {@code base} instead of an empty state: a restored peer's seed ({@link RestoreSeed}). Called before
     * the Ratis server starts; a snapshot of this peer's own, which includes the seed, replaces it when there is one.
     */
    void seed(LockStateMachine base) {
        Objects.requireNonNull(base, "base");
        lock.lock();
        try {
            if (getLastAppliedTermIndex() != null && getLastAppliedTermIndex().getIndex() >= 0) {
                throw new IllegalStateException("a seed replaces the state of a peer that has applied nothing yet");
            }
            machine = base;
            counts = new Counts(machine.sessionCount(), machine.lockCount(), machine.waiterCount());
            usage.clear();
            usage.putAll(machine.usageByIdentity());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Replicates {@code resource} beside the lock state: it applies the log's store entries and shares the snapshots.
     * Call before the Raft node starts, since starting loads the latest snapshot.
     */
    public void replicate(ReplicatedResource resource) {
        this.resource = java.util.Objects.requireNonNull(resource, "resource");
    }

    /** Runs {@code reader} on the current state under the apply lock; not linearizable (see the class doc). */
    public <T> T readLocal(Function<LockStateMachine, T> reader) {
        lock.lock();
        try {
            return reader.apply(machine);
        } finally {
            lock.unlock();
        }
    }

    /** Registers a read to run in {@link #query} for the message {@link #readMessage(long)} of {@code id}. */
    <T> CompletableFuture<T> registerRead(long id, Function<LockStateMachine, T> reader) {
        return reads.register(id, reader);
    }

    /** Forgets a registered read whose request failed; returns true when it had not run yet. */
    boolean cancelRead(long id) {
        return reads.cancel(id);
    }

    static Message readMessage(long id) {
        return PendingReads.message(id);
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        getLifeCycle().transition(LifeCycle.State.STARTING);
        storage.init(raftStorage);
        loadSnapshot(storage.getLatestSnapshot());
        getLifeCycle().transition(LifeCycle.State.RUNNING);
    }

    /**
     * Called by Ratis on a peer that received a snapshot from the leader (a new peer, which Ratis sends the leader's
     * latest snapshot, or one whose missing entries the leader's log no longer holds), right before the snapshot's
     * files are published: Ratis then reloads this machine
     * ({@link #reinitialize}) only if it is paused, and otherwise stops the peer. Nothing applies meanwhile: the
     * thread that applies is the one that reloads.
     */
    @Override
    public void pause() {
        if (getLifeCycle().compareAndTransition(LifeCycle.State.RUNNING, LifeCycle.State.PAUSING)) {
            getLifeCycle().transition(LifeCycle.State.PAUSED);
        }
    }

    @Override
    public void reinitialize() throws IOException {
        // Called after a snapshot was installed from the leader: the newest file on disk is the state to take.
        getLifeCycle().transition(LifeCycle.State.STARTING);
        loadSnapshot(storage.loadLatestSnapshot());
        getLifeCycle().transition(LifeCycle.State.RUNNING);
    }

    @Override
    public StateMachineStorage getStateMachineStorage() {
        return storage;
    }

    /**
     * Refuses a proposal that is not a current-version command batch before it reaches the log: version 4, which
     * every peer of a group at format level 4 reads, or version 5, which the codec writes only for a command of level
     * 5 (the leader proposes those only once every peer reads them, see {@link FormatLevelGate}). The codec still
     * decodes version 1, the previous release's, whose commands are applied without the secret check (they carry
     * no secret hash): that is for entries already in an upgraded log only, never for new ones. A halted peer
     * refuses every proposal: it would never apply it, while the other peers would.
     */
    @Override
    public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
        TransactionContext transaction = super.startTransaction(request);
        ByteString content = request.getMessage().getContent();
        ApplyHalt halted = halt;
        if (halted != null) {
            transaction.setException(new UnavailableException(halted.message()));
        } else if (content.isEmpty() || (content.byteAt(0) != CommandCodec.VERSION_FOUR
                && content.byteAt(0) != CommandCodec.VERSION)) {
            int version = content.isEmpty() ? -1 : Byte.toUnsignedInt(content.byteAt(0));
            transaction.setException(new IllegalArgumentException("a proposed command batch has version " + version
                    + ", but only versions " + CommandCodec.VERSION_FOUR + " and " + CommandCodec.VERSION
                    + " are accepted into the log"));
        }
        return transaction;
    }

    /**
     * Applies one entry: every command of it, in order, under the lock; an entry that does not decode, or a command
     * that breaks {@link CommandChecks#checkApplied}, is refused and applied as a no-op; anything else that fails
     * halts this peer at the entry (see the class doc for all three).
     */
    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        LogEntryProto entry = Objects.requireNonNull(transaction.getLogEntry(), "log entry");
        if (halt != null) {
            return notApplied(entry);
        }
        List<Command> commands;
        try {
            commands = CommandCodec.decodeCommands(entry.getStateMachineLogEntry().getLogData().toByteArray());
        } catch (IllegalArgumentException e) {
            return refuseUndecodable(entry, e);
        } catch (RuntimeException | Error e) {
            return halted(entry, e); // not a refusal of the codec's: a bug in it, which a fixed release may not have
        }
        List<Event> events = new ArrayList<>();
        byte[] reply = null;
        Throwable failure = null;
        lock.lock();
        try {
            reply = CommandCodec.encodeResults(applyAll(entry, commands, events));
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        } catch (RuntimeException | Error e) {
            failure = e;
            halt = ApplyHalt.of(entry.getIndex(), entry.getTerm(), e); // before any read sees what the failure left
        } finally {
            counts = new Counts(machine.sessionCount(), machine.lockCount(), machine.waiterCount());
            publishUsageChanges();
            lock.unlock();
        }
        if (failure != null) {
            return halted(entry, failure);
        }
        notifyListeners(entry.getIndex(), events);
        return CompletableFuture.completedFuture(Message.valueOf(UnsafeByteOperations.unsafeWrap(reply)));
    }

    /** Applies {@code commands} of {@code entry}, those that break a rule as no-ops; returns their results. */
    private List<Result> applyAll(LogEntryProto entry, List<Command> commands, List<Event> events) {
        assert lock.isHeldByCurrentThread() : "the state is applied under the lock";
        List<Result> results = new ArrayList<>(commands.size());
        InvalidArgumentException firstRefused = null;
        int refused = 0;
        List<byte[]> storeReplies = applyStoreEntries(entry, commands);
        int storeReply = 0;
        for (Command command : commands) {
            if (command instanceof Command.StoreEntry && storeReplies != null) {
                results.add(new Result.StoreReply(storeReplies.get(storeReply++)));
                continue;
            }
            try {
                CommandChecks.checkApplied(command, limits);
            } catch (InvalidArgumentException e) {
                firstRefused = firstRefused == null ? e : firstRefused;
                refused++;
                results.add(new Result.Rejected(e));
                continue;
            }
            Applied applied = applier.apply(machine, command);
            results.add(applied.result());
            events.addAll(applied.events());
        }
        if (refused > 0) {
            malformedEntries.incrementAndGet();
            logRefused("malformed", "log entry {} (term {}): {} of its {} commands refused as malformed and applied"
                    + " as no-ops, the first: {}", entry.getIndex(), entry.getTerm(), refused, commands.size(),
                    firstRefused.getMessage());
        }
        return results;
    }

    /**
     * Hands the store's entries among {@code commands} to the replicated resource, together, and returns its replies in
     * order; or null without a resource or such entries. A failure is this peer's and halts it, as any other failure
     * of an apply does.
     */
    private List<byte[]> applyStoreEntries(LogEntryProto entry, List<Command> commands) {
        ReplicatedResource replicated = resource;
        if (replicated == null) {
            // Every entry of a group of one comes here: a plain loop. A store entry passed over means this peer's
            // snapshots can no longer say what the replicated store holds.
            for (int i = 0; i < commands.size() && !storeEntriesUnknown; i++) {
                storeEntriesUnknown = commands.get(i) instanceof Command.StoreEntry;
            }
            return null;
        }
        List<byte[]> entries = new ArrayList<>();
        for (Command command : commands) {
            if (command instanceof Command.StoreEntry store) {
                entries.add(store.entry());
            }
        }
        if (entries.isEmpty()) {
            return null;
        }
        List<byte[]> replies = replicated.apply(entries, entry.getIndex());
        if (replies.size() != entries.size()) {
            throw new IllegalStateException("the replicated store answered " + replies.size() + " of "
                    + entries.size() + " entries of log entry " + entry.getIndex());
        }
        return replies;
    }

    /** Applies an entry that does not decode as a no-op: counted, logged, and the apply goes on after it. */
    private CompletableFuture<Message> refuseUndecodable(LogEntryProto entry, IllegalArgumentException why) {
        lock.lock();
        try {
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        } finally {
            lock.unlock();
        }
        undecodableEntries.incrementAndGet();
        logRefused("undecodable", "log entry {} (term {}) does not decode and is applied as a no-op: {}",
                entry.getIndex(), entry.getTerm(), why.getMessage());
        notifyListeners(entry.getIndex(), List.of()); // applied, without events, as any entry without events is
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    /** Logs one refused entry at WARN, unless a line of the same kind was logged within the interval. */
    private void logRefused(String kind, String format, Object... arguments) {
        long leftOut = refusalLines.admit(kind);
        if (leftOut >= 0) {
            LOG.warn(format + (leftOut > 0 ? " (and " + leftOut + " more such entries since the last such line)" : ""),
                    arguments);
        }
    }

    /**
     * Halts at {@code entry}, whose apply failed with {@code cause} (see the class doc): the one ERROR with the stack
     * trace, then the halt hooks; returns the entry's (empty) reply.
     */
    private CompletableFuture<Message> halted(LogEntryProto entry, Throwable cause) {
        ApplyHalt halted = ApplyHalt.of(entry.getIndex(), entry.getTerm(), cause);
        halt = halted;
        LOG.error("halted applying the Raft log at log entry {} (term {}): {}; this peer serves no calls until"
                + " recovered: {}", entry.getIndex(), entry.getTerm(), halted.reason(), ApplyHalt.RECOVERY, cause);
        for (Consumer<ApplyHalt> hook : haltHooks) {
            try {
                hook.accept(halted);
            } catch (RuntimeException e) {
                LOG.error("halt hook {} failed", hook, e);
            }
        }
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    /** Passes over an entry committed after the halt: not applied, counted, one line per interval at most. */
    private CompletableFuture<Message> notApplied(LogEntryProto entry) {
        long count = entriesNotApplied.incrementAndGet();
        if (haltedLines.admit("entries") >= 0) {
            ApplyHalt halted = halt;
            LOG.warn("still halted at log entry {}: entry {} not applied ({} entries committed since the halt); see"
                    + " /healthz", halted.index(), entry.getIndex(), count);
        }
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    /**
     * Takes the index of an entry Ratis applied without this state machine (a configuration or metadata entry) as the
     * last applied, unless halted: a halted peer's last applied index stays before the halted entry, so that Ratis
     * neither counts the entries after it as applied in this state nor snapshots past it.
     */
    @Override
    public void notifyTermIndexUpdated(long term, long index) {
        if (halt == null) {
            super.notifyTermIndexUpdated(term, index);
        }
    }

    /** Publishes the usage the last entry changed; an identity whose sessions all ended leaves the map. Under lock. */
    private void publishUsageChanges() {
        machine.takeUsageChanges().forEach((identity, changed) -> {
            if (changed.equals(IdentityUsage.NONE)) {
                usage.remove(identity);
            } else {
                usage.put(identity, changed);
            }
        });
    }

    private void notifyListeners(long revision, List<Event> events) {
        for (AppliedListener listener : listeners) {
            try {
                listener.onApplied(revision, events);
            } catch (RuntimeException e) {
                LOG.error("listener {} failed on events {}", listener, events, e);
            }
        }
    }

    @Override
    public CompletableFuture<Message> query(Message request) {
        PendingReads.Task<?> task;
        try {
            task = reads.take(request.getContent());
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        ApplyHalt halted = halt;
        if (task != null && halted != null) {
            task.fail(new UnavailableException(halted.message())); // the state may be half-changed: never read
        } else if (task != null) {
            lock.lock();
            try {
                task.run(machine);
            } finally {
                lock.unlock();
            }
        }
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    @Override
    public void notifyLeaderReady() {
        leadershipHooks.forEach(Runnable::run);
    }

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId memberId, RaftPeerId newLeaderId) {
        LOG.info("{}: the leader is now {}", memberId, newLeaderId);
        leadershipHooks.forEach(Runnable::run);
    }

    /** Ratis closes the division, on its own (a leader that removed itself) or with the server: it leads no more. */
    @Override
    public void close() throws IOException {
        leadershipHooks.forEach(Runnable::run);
        super.close();
    }

    /**
     * Writes the state to a snapshot file and returns the log index it covers; declines while halted (returns
     * {@link RaftLog#INVALID_LOG_INDEX}, one line per interval at most): the state may be half-changed by the entry
     * that failed, and the log kept from the last snapshot on is what lets a restart reach that entry again.
     */
    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ReplicatedResource.SnapshotWriter store = null;
        lock.lock();
        try {
            ApplyHalt halted = halt;
            if (halted != null) {
                if (haltedLines.admit("snapshots") >= 0) {
                    LOG.warn("no snapshot taken: halted applying the Raft log at log entry {}; see /healthz",
                            halted.index());
                }
                return RaftLog.INVALID_LOG_INDEX;
            }
            last = getLastAppliedTermIndex();
            if (last == null || last.getIndex() < 0) {
                return RaftLog.INVALID_LOG_INDEX; // nothing applied yet: nothing to snapshot
            }
            ReplicatedResource replicated = resource;
            boolean withStore = machine.formatLevel() >= LockStateMachine.FORMAT_LEVEL_STORE
                    && (replicated != null || !storeEntriesUnknown
                            || StoreInSnapshots.alone(getServer(), getGroupId()));
            DataOutputStream out = new DataOutputStream(bytes);
            SnapshotFiles.writeHeader(out, withStore);
            machine.writeSnapshot(out);
            out.flush();
            latestSnapshotLacksTheStore = !withStore
                    && machine.formatLevel() >= LockStateMachine.FORMAT_LEVEL_STORE;
            if (withStore && replicated == null) {
                storeEntriesUnknown = false; // the record now says empty: only an entry passed over later unsays it
            }
            // The store as applied to the same index; without a replica, the empty store no entry ever changed.
            store = !withStore ? null : replicated != null ? replicated.beginSnapshot() : StoreInSnapshots.EMPTY;
        } finally {
            lock.unlock();
        }
        SnapshotFiles.publish(storage, last, bytes, store);
        return last.getIndex();
    }

    /**
     * Returns true when this peer's latest snapshot holds no store at the level whose log carries store entries (one
     * written by a release before a group of one's snapshots held the empty store, or after store entries passed by).
     */
    boolean latestSnapshotLacksTheStore() {
        return latestSnapshotLacksTheStore;
    }

    private void loadSnapshot(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            LOG.info("no snapshot: starting from {} and the log", machine.generation() > 0
                    ? "the restored seed (generation " + machine.generation() + ")" : "an empty state");
            return;
        }
        SnapshotFiles.Loaded loaded = SnapshotFiles.read(snapshot, limits, resource);
        LockStateMachine restored = loaded.machine();
        ApplyHalt ended;
        lock.lock();
        try {
            machine = restored;
            // A snapshot without the store, at a level whose log may hold store entries: what they did is unknown.
            storeEntriesUnknown = !loaded.withStore()
                    && restored.formatLevel() >= LockStateMachine.FORMAT_LEVEL_STORE;
            latestSnapshotLacksTheStore = storeEntriesUnknown;
            setLastAppliedTermIndex(snapshot.getTermIndex());
            counts = new Counts(machine.sessionCount(), machine.lockCount(), machine.waiterCount());
            ended = halt;
            halt = null; // the state this peer could not compute is replaced; the apply goes on from the snapshot
            usage.clear();
            usage.putAll(machine.usageByIdentity());
        } finally {
            lock.unlock();
        }
        if (ended != null) {
            LOG.info("the halt at log entry {} ends: a snapshot at {} replaced the state", ended.index(),
                    snapshot.getTermIndex());
        }
        LOG.info("state loaded from snapshot {} ({} sessions, {} locks)", snapshot.getTermIndex(),
                counts.sessions(), counts.locks());
        for (AppliedListener listener : listeners) {
            listener.onStateLoaded(snapshot.getIndex());
        }
    }
}

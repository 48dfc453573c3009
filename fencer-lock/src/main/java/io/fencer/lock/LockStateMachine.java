package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The lock service's deterministic state machine: sessions, locks, FIFO waiters and per-lock token counters
 * with a global floor. No threads, no clock, no randomness; not thread-safe (the server applies commands
 * from one thread and reads under the same exclusion).
 *
 * <p>Sessions: each keeps the identity that opened it and the {@link SecretHash} of its secret (the leader drew
 * the secret; it is never here). Every command a client makes for a session carries the hash of the secret the
 * client presented, and is refused with {@link io.fencer.core.SessionUnauthenticatedException}, changing nothing,
 * unless it is the session's: this check, not the leader's before proposing, is the authority, because it is made
 * in the same step as the action on every replica (see {@link MachineState#refusal}).
 *
 * <p>Data of the previous release (version-1 log entries and snapshots, before session secrets) still loads; see
 * {@link CommandCodec} for the reasoning. Its sessions have the identity {@link CommandCodec#VERSION_ONE_IDENTITY}
 * and the hash {@link SecretHash#NONE}, which nothing matches; its commands carry {@link SecretHash#NOT_CARRIED} and
 * are applied as that release applied them, without the secret check.
 *
 * <p>Tokens: a grant of lock L gets {@code max(lastToken(L), floor) + 1}. A lock record with no holder, no
 * waiter and no delay is dropped and its last token folded into {@code floor = max(floor, lastToken)}, so a
 * recreated lock starts above every token it ever had without keeping every name forever. The leader's
 * {@link Command.RaiseFloor} lifts the floor above every token issued plus a gap, so that no grant repeats a token a
 * peer answered ahead of its applied state.
 *
 * <p>Cost: every command is O(log n) in locks and sessions plus the work it reports (events, released locks);
 * a retried acquire of a queued session also walks its lock's queue to report its position.
 *
 * <p>Parts: this class is the one public entry point; it dispatches each command to the apply steps of its
 * primitive and answers the reads. The package-private parts share one {@link MachineState}:
 * <ul>
 *   <li>{@link SessionApply}: open, close, expire, lease checkpoints;</li>
 *   <li>{@link LockApply}: acquire, release, end of lock-delay, cancelled waits of plain locks (exclusive or
 *       shared);</li>
 *   <li>{@link SemaphoreApply}: permits of semaphores, and the slots a plain acquire may not take;</li>
 *   <li>{@link MultiLockApply}: all of several locks at once, or a wait on all of them;</li>
 *   <li>{@link Handoff}: whom a freed lock passes to, in the order of its queue;</li>
 *   <li>{@link UsageIndex}: what each quota identity's sessions hold, derived from the sessions;</li>
 *   <li>{@link LockInvariants}: the check of the whole state; {@link SnapshotCodec}: the snapshot format.</li>
 * </ul>
 */
public final class LockStateMachine {
    /**
     * The highest format level this release reads and writes. A group's level decides what its log entries and
     * snapshots may use; it starts at {@link #FORMAT_LEVEL_PREVIOUS} and is raised through the log
     * ({@link Command.SetFormatLevel}) once every peer reads the higher one, so that a group with a peer of the
     * previous release still running writes only what that peer reads.
     */
    public static final int FORMAT_LEVEL = 5;
    /** The level of the previous release: command batches and snapshots of version 4. */
    public static final int FORMAT_LEVEL_PREVIOUS = 4;
    /** The level from which tokens carry a generation and snapshots are of version 5. */
    public static final int FORMAT_LEVEL_GENERATIONS = 5;
    /** The level from which an operator may revoke a grant ({@link Command.Revoke}, a command of level 5). */
    public static final int FORMAT_LEVEL_REVOKE = 5;
    /** The level from which the leader may lift the floor ({@link Command.RaiseFloor}, a command of level 5). */
    public static final int FORMAT_LEVEL_RAISE_FLOOR = 5;
    /**
     * The level from which a lock and a semaphore in use never share a name (the previous release let them, and a
     * group at level 4 may still run it, so it applies such commands as that release did).
     */
    public static final int FORMAT_LEVEL_DISJOINT_NAMES = 5;
    /**
     * The level from which a plain acquire of a lock its session waits for through a multi-lock is refused (the
     * previous release answered it with the multi-lock's place; a group at level 4 may still run it).
     */
    public static final int FORMAT_LEVEL_ONE_WAIT_PER_LOCK = 5;
    /** The level from which the log carries the replicated store's entries ({@link Command.StoreEntry}). */
    public static final int FORMAT_LEVEL_STORE = 5;

    private final MachineState state;
    private final SessionApply sessionApply;
    private final LockApply lockApply;
    private final SemaphoreApply semaphoreApply;
    private final MultiLockApply multiLockApply;

    public LockStateMachine(Limits limits) {
        this(new MachineState(limits));
    }

    /** Wraps a state: an empty one, or one {@link SnapshotCodec} read whole. */
    private LockStateMachine(MachineState state) {
        this.state = state;
        Handoff handoff = new Handoff(state);
        this.sessionApply = new SessionApply(state, handoff);
        this.semaphoreApply = new SemaphoreApply(state);
        this.multiLockApply = new MultiLockApply(state, handoff, semaphoreApply);
        this.lockApply = new LockApply(state, handoff, semaphoreApply, multiLockApply);
    }

    /** Returns an empty machine whose floor starts at {@code floor}, to reach token exhaustion in tests. */
    static LockStateMachine withFloor(Limits limits, long floor) {
        if (floor < 0 || floor > FencingToken.VALUE_MAX) {
            throw new IllegalArgumentException("floor " + floor + " is outside [0, " + FencingToken.VALUE_MAX + "]");
        }
        LockStateMachine machine = new LockStateMachine(limits);
        machine.state.floor = floor;
        return machine;
    }

    /** Applies one command and returns its result and events. Deterministic. */
    public Applied apply(Command command) {
        Objects.requireNonNull(command, "command");
        List<Event> events = new ArrayList<>();
        Result result;
        if (command instanceof Command.OpenSession open) {
            result = sessionApply.openSession(open, events);
        } else if (command instanceof Command.CloseSession close) {
            result = sessionApply.closeSession(close, events);
        } else if (command instanceof Command.ExpireSession expire) {
            result = sessionApply.endSession(expire.sessionId(), EndCause.SESSION_EXPIRED, expire.lockDelay(),
                    events);
        } else if (command instanceof Command.Acquire acquire) {
            result = lockApply.acquire(acquire, events);
        } else if (command instanceof Command.CancelWait cancel) {
            result = lockApply.cancelWait(cancel, events);
        } else if (command instanceof Command.Release release) {
            result = lockApply.release(release, events);
        } else if (command instanceof Command.EndLockDelay end) {
            result = lockApply.endLockDelay(end.lock(), events);
        } else if (command instanceof Command.AcquirePermit permit) {
            result = semaphoreApply.acquirePermit(permit, events);
        } else if (command instanceof Command.AcquireAll all) {
            result = multiLockApply.acquireAll(all, events);
        } else if (command instanceof Command.Revoke revoke) {
            result = lockApply.revoke(revoke, events);
        } else if (command instanceof Command.CheckpointLeases checkpoint) {
            result = sessionApply.checkpointLeases(checkpoint);
        } else if (command instanceof Command.StoreEntry) {
            result = new Result.StoreReply(new byte[0]); // the store's, applied beside this machine, not in it
        } else if (command instanceof Command.RaiseFloor raise) {
            result = state.raiseFloor(raise.gap());
        } else if (command instanceof Command.SetFormatLevel set) {
            state.formatLevel = Math.max(state.formatLevel, set.level());
            result = new Result.FormatLevelSet(state.formatLevel);
        } else {
            throw new IllegalArgumentException("unknown command type " + command.getClass().getName());
        }
        return new Applied(result, events);
    }

    /** The state of one semaphore in use, or empty when it has no record (unused, or idle and dropped). */
    public Optional<SemaphoreView> describeSemaphore(String semaphore) {
        SemaphoreRecord record = state.semaphores.get(semaphore);
        if (record == null) {
            return Optional.empty();
        }
        List<LockView> slots = new ArrayList<>(record.permits);
        for (int permit = 0; permit < record.permits; permit++) {
            LockRecord slot = state.locks.get(record.slot(permit));
            slots.add(slot == null ? null : view(slot, Integer.MAX_VALUE));
        }
        List<LockView.WaiterView> queue = new ArrayList<>(record.waiters.size());
        for (Map.Entry<Long, String> waiter : record.waiters.entrySet()) {
            queue.add(new LockView.WaiterView(waiter.getKey(), waiter.getValue()));
        }
        return Optional.of(new SemaphoreView(record.name, record.permits, slots, queue));
    }

    /** The bounds this machine enforces. */
    public Limits limits() {
        return state.limits;
    }

    /** The state of one lock, or empty when it has no record (never used, or idle and dropped). */
    public Optional<LockView> describe(String lock) {
        return describe(lock, Integer.MAX_VALUE);
    }

    /**
     * The state of one lock with at most its first {@code shownMax} waiters and shared holders (and the count of
     * each), or empty when it has no record. The cost follows what is shown, not the queue.
     */
    public Optional<LockView> describe(String lock, int shownMax) {
        checkShownMax(shownMax);
        LockRecord record = state.locks.get(lock);
        return record == null ? Optional.empty() : Optional.of(view(record, shownMax));
    }

    /** Locks with a record (held, waited for or delayed) whose names start with {@code prefix}, in name order. */
    public List<LockView> list(String prefix, int limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit must not be negative: " + limit);
        }
        List<LockView> views = new ArrayList<>(Math.min(limit, state.locks.size()));
        list(prefix, "", Integer.MAX_VALUE, view -> views.size() < limit && views.add(view));
        return views;
    }

    /**
     * Shows {@code visitor} the locks with a record whose names start with {@code prefix} and sort after
     * {@code startAfter} (empty: from the first), in name order, each with at most its first {@code shownMax} waiters
     * and shared holders, until it returns false or none is left. Returns whether a lock followed the last one the
     * visitor accepted: it returned false on one, and that one is not counted as shown.
     */
    public boolean list(String prefix, String startAfter, int shownMax, Predicate<LockView> visitor) {
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(startAfter, "startAfter");
        checkShownMax(shownMax);
        boolean fromPrefix = startAfter.compareTo(prefix) < 0;
        for (LockRecord record : state.locks.tailMap(fromPrefix ? prefix : startAfter, fromPrefix).values()) {
            if (!record.name.startsWith(prefix)) {
                return false;
            }
            if (!visitor.test(view(record, shownMax))) {
                return true;
            }
        }
        return false;
    }

    /** At least one of each is shown, so that a view of a shared lock names a holder ({@link LockView#anyHolder}). */
    private static void checkShownMax(int shownMax) {
        if (shownMax < 1) {
            throw new IllegalArgumentException("shownMax must be positive: " + shownMax);
        }
    }

    private LockView view(LockRecord record, int shownMax) {
        List<LockView.SharedHolderView> shared = new ArrayList<>(Math.min(shownMax, record.sharedHolders.size()));
        for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
            if (shared.size() == shownMax) {
                break;
            }
            shared.add(new LockView.SharedHolderView(FencingToken.of(record.lockName, holder.getValue(),
                    LockMode.SHARED), holder.getKey(), state.sessions.get(holder.getKey()).identity));
        }
        return record.view(record.held() ? state.sessions.get(record.holderSessionId).identity : null, shared,
                shownMax);
    }

    /**
     * Tells what a token is now. The lock's record gives its last token, or the floor when it has none; a value
     * above it was never issued, a holder's (exclusive, or one of the shared holders', in the mode it was granted
     * in) is current, another lower one is superseded, and the last one ended.
     */
    public Validation validate(FencingToken token) {
        Objects.requireNonNull(token, "token");
        LockRecord record = state.locks.get(token.lock());
        long lastToken = record == null ? state.floor : record.lastToken;
        if (token.value() > lastToken) {
            return new Validation(Validation.Status.NEVER_ISSUED, lastToken, 0, null, null);
        }
        if (record != null && token.mode() == LockMode.EXCLUSIVE && record.held()
                && record.holderTokenValue == token.value()) {
            return new Validation(Validation.Status.CURRENT, lastToken, record.holderSessionId,
                    state.sessions.get(record.holderSessionId).identity, null);
        }
        if (record != null && token.mode() == LockMode.SHARED) {
            for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
                if (holder.getValue() == token.value()) {
                    return new Validation(Validation.Status.CURRENT, lastToken, holder.getKey(),
                            state.sessions.get(holder.getKey()).identity, null);
                }
            }
        }
        if (token.value() < lastToken) {
            return new Validation(Validation.Status.SUPERSEDED, lastToken, 0, null, null);
        }
        return new Validation(Validation.Status.ENDED, lastToken, 0, null, record == null ? null : record.lastEnd);
    }

    /** The state of one open session, or empty when it is unknown or ended. */
    public Optional<SessionView> session(long sessionId) {
        SessionRecord session = state.sessions.get(sessionId);
        return session == null ? Optional.empty() : Optional.of(session.view());
    }

    /** All open sessions, in id order. */
    public Collection<SessionView> sessions() {
        List<SessionView> views = new ArrayList<>(state.sessions.size());
        for (SessionRecord session : state.sessions.values()) {
            views.add(session.view());
        }
        return views;
    }

    /** Names of locks in lock-delay, for a new leader to schedule their ends. */
    public List<String> delayedLocks() {
        return List.copyOf(state.delayed);
    }

    /** Returns the group's format level ({@link #FORMAT_LEVEL}). */
    public int formatLevel() {
        return state.formatLevel;
    }

    /** Returns the token generation this group grants in (0 until a restore). */
    public int generation() {
        return state.generation;
    }

    /**
     * Returns the highest token value issued so far: every lock's last token, and the floor (which a
     * {@link Command.RaiseFloor} may have lifted above every token issued, for tokens a peer answered ahead of its
     * applied state). No token above it was issued.
     */
    public long highestToken() {
        return state.highestToken();
    }

    /**
     * Returns the state a group restored from this one starts with: no session (their leases ran in the group that
     * was lost, and nobody can tell the new group which writes their holders made), no lock held or waited for, the
     * session ids going on from this state's, and every token in {@code generation}, which must be above this state's
     * generation and the generation of every token it issued. So every grant of the restored group exceeds every
     * token this state's group ever granted, even after this state was copied: that group could not leave its
     * generation ({@link MachineState#tokenCeiling}).
     *
     * @throws IllegalArgumentException naming the generation when it is not above this state's
     */
    public LockStateMachine restoredInGeneration(int generation) {
        int highest = Math.max(state.generation, FencingToken.generationOf(highestToken()));
        if (generation <= highest || generation > FencingToken.GENERATION_MAX) {
            throw new IllegalArgumentException("generation " + generation + " must be above the backup's generation "
                    + highest + " and at most " + FencingToken.GENERATION_MAX);
        }
        MachineState restored = new MachineState(state.limits);
        restored.sessionIdLast = state.sessionIdLast;
        restored.formatLevel = FORMAT_LEVEL;
        restored.generation = generation;
        restored.floor = FencingToken.generationBase(generation);
        return new LockStateMachine(restored);
    }

    /**
     * The highest last token of every dropped lock record, or more when a {@link Command.RaiseFloor} lifted it; every
     * new grant of any lock exceeds it.
     */
    public long floor() {
        return state.floor;
    }

    /** The number of open sessions. */
    public int sessionCount() {
        return state.sessions.size();
    }

    /** The number of lock records: locks held, waited for or delayed. */
    public int lockCount() {
        return state.locks.size();
    }

    /** The number of queued waits over all locks. */
    public int waiterCount() {
        return state.waiterCount;
    }

    /** What the sessions of {@code quotaIdentity} hold now; {@link IdentityUsage#NONE} when it has no session. */
    public IdentityUsage usage(String quotaIdentity) {
        return state.usage.of(quotaIdentity);
    }

    /** The usage of every identity with an open session, in no particular order. */
    public Map<String, IdentityUsage> usageByIdentity() {
        return state.usage.byIdentity();
    }

    /**
     * Returns the usage of each identity whose usage changed since the last call, in the order first changed, and
     * forgets the changes: {@link IdentityUsage#NONE} for an identity whose sessions all ended. The server publishes
     * them after each log entry, for its leader to check quotas against without this machine's lock.
     */
    public Map<String, IdentityUsage> takeUsageChanges() {
        return state.usage.takeChanges();
    }

    /**
     * True when {@code release}, applied now, would release its plain lock and grant nobody (its session is open, the
     * secret is the session's, the session holds the lock under the release's token, nobody waits). Changes nothing:
     * a peer that answers such a release before it is durable asks this first.
     */
    public boolean releasesAlone(Command.Release release) {
        return lockApply.releasesAlone(Objects.requireNonNull(release, "release"));
    }

    /**
     * Returns the hand-off of {@code release}'s lock for a peer that answers grants before they are durable (see
     * {@link HandOffView}); empty when the release's session or secret is not right, or the lock is not a plain
     * one held exclusively and undelayed with room for {@code waitersMax} more tokens. Shows at most
     * {@code waitersMax} waiters. Changes nothing.
     */
    public Optional<HandOffView> handOffView(Command.Release release, int waitersMax) {
        if (waitersMax < 1 || waitersMax > 1024) {
            throw new IllegalArgumentException("waitersMax must be in [1, 1024]: " + waitersMax);
        }
        return lockApply.handOffView(Objects.requireNonNull(release, "release"), waitersMax);
    }

    /** The session opened with {@code requestId} (a retried open would return it), or empty. */
    public Optional<SessionView> sessionOpenedBy(String requestId) {
        Long id = requestId.isEmpty() ? null : state.sessionIdsByRequestId.get(requestId);
        return id == null ? Optional.empty() : session(id);
    }

    /**
     * True when the session holds or waits for {@code name}: a lock, or a semaphore one of whose permits it holds or
     * waits for. An acquire of it again takes nothing more (it is a retry), so a quota need not make room for it.
     */
    public boolean takesPart(long sessionId, String name) {
        SessionRecord session = state.sessions.get(sessionId);
        if (session == null) {
            return false;
        }
        if (session.held().contains(name) || session.waiting().contains(name)
                || session.waitingPermits().contains(name)) {
            return true;
        }
        SemaphoreRecord semaphore = state.semaphores.get(name);
        return semaphore != null && state.permitOf(semaphore, sessionId) != null;
    }

    /**
     * Checks every invariant of the state over all sessions and locks (linear: for tests and restored snapshots);
     * see {@link LockInvariants}.
     *
     * @throws IllegalStateException naming the values when one is broken
     */
    public void checkInvariants() {
        new LockInvariants(state).check();
    }

    /**
     * Writes the whole state; {@link #readSnapshot} restores an equal machine. A session is written with its
     * identity and the hash of its secret: the secret itself is never in the state. The format is
     * {@link SnapshotCodec}'s.
     */
    public void writeSnapshot(DataOutput out) throws IOException {
        SnapshotCodec.write(state, out);
    }

    /**
     * Reads a state written by {@link #writeSnapshot}, or by an earlier release (snapshot versions 1 to 4; see
     * {@link SnapshotCodec} for how each loads). The state is checked whole: a corrupt snapshot fails with an
     * {@link IOException} saying what is wrong, never yields a machine that breaks its invariants.
     */
    public static LockStateMachine readSnapshot(DataInput in, Limits limits) throws IOException {
        return new LockStateMachine(SnapshotCodec.read(in, limits));
    }
}

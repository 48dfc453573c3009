package io.fencer.server.locks;

import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.Ticker;
import io.fencer.lock.Command;
import io.fencer.lock.Event;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.lock.SessionView;
import io.fencer.server.raft.AppliedListener;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's clock for sessions and lock-delays: session deadlines live here, in memory, never in the state
 * machine (keepalives are not logged: etcd's design), and the keeper proposes {@code ExpireSession} when a
 * deadline passes and {@code EndLockDelay} when a delay is over.
 *
 * <p>On becoming leader (including the first election after a restart) every session of the state machine gets
 * a fresh deadline of now + L + {@link RaftNode#takeoverBound() B}: a grace period, never a mass expiry of sessions
 * whose keepalives went to the old leader, and long enough that no keepalive a deposed leader acknowledged outlives
 * it. L is the session's ttl, or less when a lease bound is recorded for it (below). Fencing tokens carry safety;
 * these clocks carry what lease-only users (a {@code lock exec} command) rely on.
 *
 * <p>The restart rule: a takeover never gives a session more than its own ttl (+ B), and a session that had used up
 * its lease before the takeover does not get a whole new one. Keepalives are not logged, so a new leader cannot know
 * when a session was last renewed, and must assume it was renewed just before; left at that, every restart (or
 * election) would hand every session, kept alive or abandoned, a fresh ttl, and a restart every ttl would keep
 * abandoned sessions (a flood of them) open for ever. So the leader records bounds, as etcd checkpoints its leases:
 * when a session's lease has run down below half of what a takeover would give it now (its ttl, or its last bound)
 * and has at least {@link #CHECKPOINT_REMAINING_MILLIS_MIN} ms left, the leader proposes {@code CheckpointLeases}
 * with the time left, and a new leader gives the session that much (+ B) instead of its ttl. The bound stays true
 * because a keepalive of a session whose bound is recorded (or proposed) is acknowledged only after the leader has
 * logged that the session was renewed ({@code RENEWED}, which clears the bound): a checkpoint proposal and the clear
 * are ordered in the log as they were decided (both are proposed under {@link #checkpointLock}), so a renewal is
 * either counted in a bound or logged after it. A session kept alive as clients do (every ttl / 3) never runs below
 * half and costs no log entry; an abandoned one costs a few (each bound at most half the one before), and after a
 * takeover it lives at most about twice the lease it had left (and at least until the bound, as it must).
 *
 * <p>Lease safety: a keepalive is acknowledged only {@linkplain #confirm confirmed}, while this peer still leads in
 * the term the keepalive arrived in and holds Ratis's leader lease ({@link RaftNode#holdsLeaderLease}), and it renews
 * from the keepalive's arrival, never from the later moment of confirmation. {@value #UNSAFE_LEASE_ACK_PROPERTY}
 * turns this off, for tests that must show a checker catches the unsafe behaviour.
 *
 * <p>Each lease also holds the hash of its session's secret, so the leader checks a keepalive's secret here, without
 * the state machine's lock (keepalives are the most frequent calls), and checks the secret of other calls before it
 * proposes them: a refusal costs no log entry. The state machine checks those again, authoritatively.
 *
 * <p>Time comes from the configured {@link Ticker}. A scanner thread checks deadlines every
 * {@link #SCAN_INTERVAL_MILLIS} ms and detects leadership by polling Ratis (woken early by leader-ready events).
 */
public final class SessionKeeper implements AppliedListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SessionKeeper.class);
    static final long SCAN_INTERVAL_MILLIS = 50;
    /** How often keepalives held for a lapsed lease look at it again. */
    static final long CONFIRM_POLL_MILLIS = 5;
    /** The test-only switch of the lease fix: {@link RaftNode#UNSAFE_LEASE_ACK_PROPERTY}. */
    public static final String UNSAFE_LEASE_ACK_PROPERTY = RaftNode.UNSAFE_LEASE_ACK_PROPERTY;
    private static final long NOT_SERVING = -1;
    /** The least time left for which a lease bound is recorded: shorter leases end before a bound would matter. */
    static final long CHECKPOINT_REMAINING_MILLIS_MIN = 5_000;
    /** The most {@code CheckpointLeases} commands one scan proposes (each of up to 1,024 sessions). */
    static final int CHECKPOINT_COMMANDS_PER_SCAN_MAX = 8;
    /**
     * The most {@code ExpireSession} commands proposed and not yet answered: four full log entries. An expiry storm
     * (sessions abandoned together) leaves in waves of this size, so the proposer's queue, which refuses commands
     * past 65,536 as overloaded, keeps room for clients, and a client's command waits behind a few entries, not behind
     * every expiry.
     */
    static final int EXPIRIES_IN_FLIGHT_MAX = 1_024;

    private final Ticker ticker;
    private final long lockDelayNanos;
    private final RaftNode raft;
    private final RaftLockStateMachine stateMachine;
    private final Proposer proposer;
    private final ConcurrentHashMap<Long, Lease> leases = new ConcurrentHashMap<>();
    /** The grants revoked from open sessions, told in every keepalive answer of their session. */
    private final RevokedGrants revokedGrants = new RevokedGrants();
    private final ConcurrentHashMap<String, Long> delayEndNanos = new ConcurrentHashMap<>();
    private final Set<String> delaysEnding = ConcurrentHashMap.newKeySet();
    /** Expiries proposed and not yet answered; only the scanner adds to it, so it stays within the bound. */
    private final AtomicInteger expiriesInFlight = new AtomicInteger();
    /** True when a scan left due sessions for later: the answers of its wave ask for the next scan. */
    private final AtomicBoolean expiriesHeldBack = new AtomicBoolean();
    /** Each expiry at DEBUG; a summary per scan at INFO, so that an expiry storm logs lines by the wave. */
    private final ExpiryLog expiryLog = new ExpiryLog(LOG);
    private final ScheduledExecutorService scanner;
    /** True: acknowledge on {@code isLeader()} alone and give no takeover bound (see the property). */
    private final boolean unsafeLeaseAck;
    private final long takeoverBoundNanos;
    /** Work waiting for the lease to be held again; run by the scanner thread every {@link #CONFIRM_POLL_MILLIS}. */
    private final ConcurrentLinkedQueue<Runnable> awaitingLease = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean leasePollScheduled = new AtomicBoolean();
    /** The term in which this peer reset the deadlines as leader, or {@link #NOT_SERVING}. */
    private volatile long servingTerm = NOT_SERVING;
    /**
     * Held while a lease bound or its clearing is decided and proposed, so that the two are proposed (hence logged)
     * in the order they were decided: a clear decided after a bound is logged after it.
     */
    private final Object checkpointLock = new Object();

    /** Where a lease's bound stands in the replicated state, as this leader knows it. */
    enum Bound {
        /** No bound recorded: a keepalive renews at once. */
        NONE,
        /** A bound is proposed (and may be recorded): a keepalive first clears it. */
        PROPOSED,
        /** A bound is (or, after a failed proposal, may be) recorded: a keepalive first clears it. */
        RECORDED,
        /** Its clearing is proposed: keepalives wait for it. */
        CLEARING
    }

    /**
     * A session's lease: its ttl, its deadline on the ticker, whether its expiry has been proposed, the hash of the
     * session's secret, which a keepalive must present, the identity its quotas count, and its lease bound.
     */
    private record Lease(long ttlMillis, long deadlineNanos, boolean expiring, SecretHash secretHash,
            String quotaIdentity, Bound bound, long boundMillis) {
        Lease renewed(long deadlineNanos) {
            return new Lease(ttlMillis, deadlineNanos, false, secretHash, quotaIdentity, bound, boundMillis);
        }

        Lease withExpiring(boolean expiring) {
            return new Lease(ttlMillis, deadlineNanos, expiring, secretHash, quotaIdentity, bound, boundMillis);
        }

        Lease withBound(Bound bound, long boundMillis) {
            return new Lease(ttlMillis, deadlineNanos, expiring, secretHash, quotaIdentity, bound, boundMillis);
        }
    }

    /** What {@link #keepAlive} did. */
    enum Renewal {
        /** The lease was renewed. */
        RENEWED,
        /** The session is unknown, ended, or its expiry is proposed. */
        EXPIRED,
        /** The session's lease bound must be cleared in the log first: ask again once it is (a retry soon). */
        CLEARING_BOUND
    }

    /** What {@link #confirm} says of a keepalive that arrived in some term. */
    enum Confirmation {
        /** Acknowledge it: this peer leads in its term and holds the lease. */
        CONFIRMED,
        /** Hold it: this peer leads in its term, but its lease lapsed for now. */
        PENDING,
        /** Never acknowledge it: this peer no longer leads in the term it arrived in. */
        LOST
    }

    /** As the full constructor, with the unsafe acknowledgement as {@link #unsafeLeaseAckRequested()} says. */
    public SessionKeeper(Ticker ticker, Duration lockDelay, RaftNode raft, RaftLockStateMachine stateMachine,
            Proposer proposer) {
        this(ticker, lockDelay, raft, stateMachine, proposer, unsafeLeaseAckRequested());
    }

    /** True when a lock freed by expiry, or by a revoke, waits out a lock-delay before its next grant. */
    public boolean lockDelayEnabled() {
        return lockDelayNanos > 0;
    }

    SessionKeeper(Ticker ticker, Duration lockDelay, RaftNode raft, RaftLockStateMachine stateMachine,
            Proposer proposer, boolean unsafeLeaseAck) {
        this.unsafeLeaseAck = unsafeLeaseAck;
        this.takeoverBoundNanos = unsafeLeaseAck ? 0 : RaftNode.takeoverBound().toNanos();
        if (unsafeLeaseAck) {
            LOG.warn("UNSAFE: {}=true: Ratis's leader lease is off, keepalives are acknowledged on isLeader() "
                    + "alone and a new leader adds no takeover bound; a deposed leader may extend leases another "
                    + "leader expires. Tests only.",
                    UNSAFE_LEASE_ACK_PROPERTY);
        }
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        if (lockDelay.isNegative()) {
            throw new IllegalArgumentException("lockDelay must not be negative: " + lockDelay);
        }
        this.lockDelayNanos = lockDelay.toNanos();
        this.raft = Objects.requireNonNull(raft, "raft");
        this.stateMachine = Objects.requireNonNull(stateMachine, "stateMachine");
        this.proposer = Objects.requireNonNull(proposer, "proposer");
        this.scanner = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "fencer-session-keeper");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Returns true when the JVM system property {@value #UNSAFE_LEASE_ACK_PROPERTY} is {@code true}. */
    public static boolean unsafeLeaseAckRequested() {
        return RaftNode.unsafeLeaseAckRequested();
    }

    /** Returns the ticker's reading now: a keepalive's arrival. */
    long now() {
        return ticker.nanoTime();
    }

    /** Returns the term this peer serves as leader, or -1 when it does not serve. */
    long servingTerm() {
        return isServing() ? servingTerm : NOT_SERVING;
    }

    /**
     * Says whether a keepalive that arrived while this peer served {@code arrivalTerm} may be acknowledged now.
     * Unsafe mode: whenever this peer is the leader.
     */
    Confirmation confirm(long arrivalTerm) {
        if (unsafeLeaseAck) {
            return raft.isLeader() ? Confirmation.CONFIRMED : Confirmation.LOST;
        }
        if (arrivalTerm == NOT_SERVING || servingTerm != arrivalTerm || !raft.isLeader()
                || raft.currentTerm() != arrivalTerm) {
            return Confirmation.LOST;
        }
        return raft.holdsLeaderLease(arrivalTerm) ? Confirmation.CONFIRMED : Confirmation.PENDING;
    }

    /**
     * Runs {@code retry} on the keeper's thread within about {@link #CONFIRM_POLL_MILLIS} ms, to look at the lease
     * again; each caller registers at most one retry at a time, so the queue is bounded by the callers.
     */
    void retryWhenLeaseMayHold(Runnable retry) {
        awaitingLease.add(retry);
        if (leasePollScheduled.compareAndSet(false, true)) {
            try {
                scanner.schedule(this::runAwaitingLease, CONFIRM_POLL_MILLIS, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                LOG.debug("keeper closed; lease retry dropped");
            }
        }
    }

    private void runAwaitingLease() {
        leasePollScheduled.set(false);
        for (int count = awaitingLease.size(); count > 0; count--) {
            Runnable retry = awaitingLease.poll();
            if (retry == null) {
                return;
            }
            try {
                retry.run(); // it registers again when the lease still lapses
            } catch (RuntimeException e) {
                LOG.error("a keepalive held for the lease failed", e);
            }
        }
    }

    /** Starts the scanner. */
    public void start() {
        scanner.scheduleWithFixedDelay(this::scan, 0, SCAN_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Scans at once, e.g. because this peer just became a ready leader. */
    public void wakeUp() {
        try {
            scanner.execute(this::scan);
        } catch (RejectedExecutionException e) {
            LOG.debug("keeper closed; wake-up ignored");
        }
    }

    /** True while this peer is the leader and has reset the deadlines for its term. */
    boolean isServing() {
        long term = servingTerm;
        return term != NOT_SERVING && raft.isLeader() && raft.currentTerm() == term;
    }

    @Override
    public void onApplied(List<Event> events) {
        for (Event event : events) {
            if (event instanceof Event.SessionOpened opened) {
                long now = ticker.nanoTime();
                leases.put(opened.sessionId(), new Lease(opened.ttlMillis(), deadline(now, opened.ttlMillis()),
                        false, opened.secretHash(), opened.quotaIdentity(), Bound.NONE, -1));
            } else if (event instanceof Event.SessionEnded ended) {
                leases.remove(ended.sessionId());
                revokedGrants.sessionEnded(ended.sessionId());
            } else if (event instanceof Event.Revoked revoked) {
                revokedGrants.revoked(revoked.sessionId(), revoked.token(), revoked.revokedBy());
            } else if (event instanceof Event.LockDelayStarted delayed && raft.isLeader()) {
                // Followers skip this: a new leader schedules every delayed lock when it takes over.
                delayEndNanos.put(delayed.lock(), ticker.nanoTime() + lockDelayNanos);
            }
        }
    }

    /** Returns the grants revoked from the open session {@code sessionId}, oldest first (usually none). */
    List<io.fencer.api.v1.RevokedGrant> revokedGrants(long sessionId) {
        return revokedGrants.of(sessionId);
    }

    /** True while this peer keeps a lease for the session: it is open, as far as this peer has applied. */
    boolean keeps(long sessionId) {
        return leases.containsKey(sessionId);
    }

    /** Returns the identity whose quotas the session counts against, or null when this peer keeps no such lease. */
    String quotaIdentity(long sessionId) {
        Lease lease = leases.get(sessionId);
        return lease == null ? null : lease.quotaIdentity();
    }

    /**
     * Renews a session's lease from {@code arrivalNanos} (the keepalive's arrival, on the ticker), if
     * {@code presented} is the hash of its secret, and says what it did: renewed; expired, when the session is
     * unknown, ended, or its expiry is already proposed; or not yet, when a lease bound is recorded for the session
     * (see the class doc): its clearing is then proposed, and the caller asks again soon. A deadline never moves
     * back. Call only for a {@link Confirmation#CONFIRMED} keepalive.
     *
     * @throws SessionUnauthenticatedException when the session is kept here and {@code presented} is not its
     *     secret's hash; nothing was renewed
     */
    Renewal keepAlive(long sessionId, SecretHash presented, long arrivalNanos) {
        Renewal[] outcome = {Renewal.EXPIRED};
        boolean[] refused = {false};
        leases.computeIfPresent(sessionId, (id, lease) -> {
            if (!lease.secretHash().matches(presented)) {
                refused[0] = true;
                return lease;
            }
            if (lease.expiring()) {
                return lease;
            }
            if (lease.bound() != Bound.NONE) {
                outcome[0] = Renewal.CLEARING_BOUND;
                return lease;
            }
            outcome[0] = Renewal.RENEWED;
            long fromArrival = deadline(arrivalNanos, lease.ttlMillis());
            return lease.renewed(fromArrival - lease.deadlineNanos() > 0 ? fromArrival : lease.deadlineNanos());
        });
        if (refused[0]) {
            throw new SessionUnauthenticatedException(sessionId);
        }
        if (outcome[0] == Renewal.CLEARING_BOUND) {
            clearBound(sessionId);
        }
        return outcome[0];
    }

    /** Returns the ttl of a session kept here, or 0. */
    long ttlMillis(long sessionId) {
        Lease lease = leases.get(sessionId);
        return lease == null ? 0 : lease.ttlMillis();
    }

    /**
     * Proposes that the session was renewed, clearing its lease bound, unless that is proposed already; once it is
     * applied the session's keepalives renew at once again. On failure the bound is taken as recorded, and the next
     * keepalive proposes the clearing again.
     */
    private void clearBound(long sessionId) {
        synchronized (checkpointLock) {
            boolean[] claimed = {false};
            leases.computeIfPresent(sessionId, (id, lease) -> {
                if (lease.bound() == Bound.PROPOSED || lease.bound() == Bound.RECORDED) {
                    claimed[0] = true;
                    return lease.withBound(Bound.CLEARING, -1);
                }
                return lease;
            });
            if (!claimed[0]) {
                return;
            }
            Command.LeaseCheckpoint renewed = new Command.LeaseCheckpoint(sessionId,
                    Command.LeaseCheckpoint.RENEWED);
            proposer.propose(new Command.CheckpointLeases(List.of(renewed))).whenComplete((result, error) -> {
                boolean cleared = error == null && result instanceof Result.LeasesCheckpointed;
                leases.computeIfPresent(sessionId, (id, lease) -> lease.bound() != Bound.CLEARING ? lease
                        : cleared ? lease.withBound(Bound.NONE, -1) : lease.withBound(Bound.RECORDED, -1));
                if (!cleared) {
                    LOG.warn("clearing the lease bound of session {} failed: {}", sessionId, reason(error, result));
                }
            });
        }
    }

    /**
     * Refuses a call for a session kept here whose secret is not {@code presented}, before anything is proposed.
     * A session not kept here passes: the state machine, which checks every command again, decides.
     *
     * @throws SessionUnauthenticatedException when the session is kept here with another secret
     */
    void checkSecret(long sessionId, SecretHash presented) {
        Lease lease = leases.get(sessionId);
        if (lease != null && !lease.secretHash().matches(presented)) {
            throw new SessionUnauthenticatedException(sessionId);
        }
    }

    /**
     * Returns how long a session's lease still runs, in milliseconds; 0 when unknown or past, or when this peer does
     * not hold the leader lease now (a deposed leader's deadlines may be stale), as for keepalives.
     */
    long remainingMillis(long sessionId) {
        long term = servingTerm();
        if (confirm(term) != Confirmation.CONFIRMED) {
            return 0;
        }
        Lease lease = leases.get(sessionId);
        if (lease == null || lease.expiring()) {
            return 0;
        }
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(lease.deadlineNanos() - ticker.nanoTime()));
    }

    /** Looks at the deadlines now; the scanner runs it, and a test that moves the ticker by hand. */
    void scan() {
        try {
            if (!raft.isLeaderReady() || stateMachine.halt() != null) {
                // A halted peer proposes nothing (every proposal would fail) and acknowledges no keepalive.
                servingTerm = NOT_SERVING;
                return;
            }
            long term = raft.currentTerm();
            if (term != servingTerm) {
                resetAsNewLeader(term);
                servingTerm = term;
            }
            long now = ticker.nanoTime();
            expireDueSessions(now);
            endDueDelays(now);
            checkpointLeases(now);
        } catch (RuntimeException e) {
            LOG.error("session keeper scan failed", e);
        } finally {
            expiryLog.flush(); // also when this peer no longer leads: its failed expiries are summed up then
        }
    }

    /**
     * Gives every session a fresh lease of L + {@link RaftNode#takeoverBound() B}, L its ttl or its recorded lease
     * bound ({@link SessionView#takeoverLeaseMillis()}), and schedules the end of every lock-delay, as of now: B covers
     * the keepalives a deposed leader may still have acknowledged, and a bound holds every renewal before it (see
     * the class doc).
     */
    private void resetAsNewLeader(long term) {
        int[] sizes = stateMachine.readLocal((LockStateMachine machine) -> {
            long now = ticker.nanoTime();
            Map<Long, Lease> fresh = new HashMap<>();
            for (SessionView session : machine.sessions()) {
                boolean bounded = session.leaseBoundMillis() >= 0;
                fresh.put(session.sessionId(), new Lease(session.ttlMillis(),
                        deadline(now, session.takeoverLeaseMillis()) + takeoverBoundNanos, false,
                        session.secretHash(), session.quotaIdentity(), bounded ? Bound.RECORDED : Bound.NONE,
                        bounded ? session.leaseBoundMillis() : -1));
            }
            leases.clear();
            leases.putAll(fresh);
            delayEndNanos.clear();
            delaysEnding.clear();
            for (String lock : machine.delayedLocks()) {
                delayEndNanos.put(lock, now + lockDelayNanos);
            }
            return new int[] {fresh.size(), delayEndNanos.size()};
        });
        LOG.info("leader of term {}: {} sessions get a fresh lease (ttl or recorded bound, + {} ms), {} lock-delays"
                + " restart", term, sizes[0], TimeUnit.NANOSECONDS.toMillis(takeoverBoundNanos), sizes[1]);
    }

    /**
     * Proposes the expiry of every due session, at most {@link #EXPIRIES_IN_FLIGHT_MAX} unanswered at once; the rest
     * wait for the scan that the wave's answers ask for once half of it is answered, or for the next periodic one.
     */
    private void expireDueSessions(long now) {
        for (Long sessionId : leases.keySet()) {
            if (expiriesInFlight.get() >= EXPIRIES_IN_FLIGHT_MAX) {
                expiriesHeldBack.set(true);
                return;
            }
            boolean[] claimed = {false};
            Lease lease = leases.computeIfPresent(sessionId, (id, current) -> {
                if (current.expiring() || now - current.deadlineNanos() < 0) {
                    return current;
                }
                claimed[0] = true; // this scan moves it to expiring, so only this scan proposes the expiry
                return current.withExpiring(true);
            });
            if (claimed[0]) {
                expiriesInFlight.incrementAndGet();
                proposeExpiry(sessionId, lease.ttlMillis());
            }
        }
    }

    private void proposeExpiry(long sessionId, long ttlMillis) {
        expiryLog.expiring(sessionId, ttlMillis);
        proposer.propose(new Command.ExpireSession(sessionId, lockDelayNanos > 0)).whenComplete((result, error) -> {
            if (error != null || result instanceof Result.Rejected) {
                // A later scan tries again while this peer leads; otherwise the next leader takes over.
                leases.computeIfPresent(sessionId, (id, current) -> current.withExpiring(false));
                expiryLog.failed(sessionId, error != null ? error : result);
            } else {
                leases.remove(sessionId);
            }
            if (expiriesInFlight.decrementAndGet() <= EXPIRIES_IN_FLIGHT_MAX / 2
                    && expiriesHeldBack.compareAndSet(true, false)) {
                wakeUp(); // the next wave, without waiting for the next periodic scan
            }
        });
    }

    /**
     * Records lease bounds for sessions whose leases have run down below half of what a takeover would give them
     * now (see the class doc), at most {@link #CHECKPOINT_COMMANDS_PER_SCAN_MAX} commands per scan; the rest wait for
     * the next scan. Candidates are found without the lock, and claimed and proposed under it.
     */
    private void checkpointLeases(long now) {
        List<Long> candidates = new ArrayList<>();
        int most = CHECKPOINT_COMMANDS_PER_SCAN_MAX * Command.CheckpointLeases.CHECKPOINTS_MAX;
        for (Map.Entry<Long, Lease> entry : leases.entrySet()) {
            if (candidates.size() >= most) {
                break;
            }
            if (dueForBound(entry.getValue(), now) > 0) {
                candidates.add(entry.getKey());
            }
        }
        if (candidates.isEmpty()) {
            return;
        }
        synchronized (checkpointLock) {
            List<Command.LeaseCheckpoint> batch = new ArrayList<>();
            for (Long sessionId : candidates) {
                long[] remaining = {0};
                leases.computeIfPresent(sessionId, (id, lease) -> {
                    remaining[0] = dueForBound(lease, now);
                    return remaining[0] > 0 ? lease.withBound(Bound.PROPOSED, remaining[0]) : lease;
                });
                if (remaining[0] > 0) {
                    batch.add(new Command.LeaseCheckpoint(sessionId, remaining[0]));
                }
                if (batch.size() == Command.CheckpointLeases.CHECKPOINTS_MAX) {
                    proposeBounds(batch);
                    batch = new ArrayList<>();
                }
            }
            if (!batch.isEmpty()) {
                proposeBounds(batch);
            }
        }
    }

    /**
     * Returns the bound to record for {@code lease} now, in milliseconds (its time left, rounded up), or 0 when none
     * is due: it expires or is being bounded or cleared, it has more than half of what a takeover would give it, or
     * too little left to matter.
     */
    private static long dueForBound(Lease lease, long now) {
        if (lease.expiring() || lease.bound() == Bound.PROPOSED || lease.bound() == Bound.CLEARING) {
            return 0;
        }
        long remainingMillis = TimeUnit.NANOSECONDS.toMillis(lease.deadlineNanos() - now + 999_999);
        long takeoverMillis = lease.bound() == Bound.RECORDED && lease.boundMillis() >= 0 ? lease.boundMillis()
                : lease.ttlMillis();
        if (remainingMillis < CHECKPOINT_REMAINING_MILLIS_MIN || remainingMillis * 2 >= takeoverMillis) {
            return 0;
        }
        return remainingMillis;
    }

    /** Proposes one batch of bounds; each lease still bounded by its entry is then recorded (or may be). */
    private void proposeBounds(List<Command.LeaseCheckpoint> batch) {
        proposer.propose(new Command.CheckpointLeases(batch)).whenComplete((result, error) -> {
            // Recorded, or after a failure perhaps recorded: either way a keepalive must clear it first.
            for (Command.LeaseCheckpoint entry : batch) {
                leases.computeIfPresent(entry.sessionId(), (id, lease) -> lease.bound() == Bound.PROPOSED
                        && lease.boundMillis() == entry.remainingMillis()
                        ? lease.withBound(Bound.RECORDED, entry.remainingMillis()) : lease);
            }
            if (error != null || result instanceof Result.Rejected) {
                LOG.warn("recording {} lease bounds failed: {}", batch.size(), reason(error, result));
            }
        });
    }

    private void endDueDelays(long now) {
        for (Map.Entry<String, Long> entry : delayEndNanos.entrySet()) {
            String lock = entry.getKey();
            if (now - entry.getValue() < 0 || !delaysEnding.add(lock)) {
                continue;
            }
            proposer.propose(new Command.EndLockDelay(lock)).whenComplete((result, e) -> {
                delaysEnding.remove(lock);
                if (e != null || result instanceof Result.Rejected) {
                    LOG.warn("ending the lock-delay of {} failed: {}", lock, reason(e, result));
                } else {
                    delayEndNanos.remove(lock, entry.getValue());
                }
            });
        }
    }

    private static long deadline(long nowNanos, long ttlMillis) {
        return nowNanos + TimeUnit.MILLISECONDS.toNanos(ttlMillis);
    }

    @Override
    public void close() {
        scanner.shutdownNow();
    }

    /**
     * The reason a proposal of the keeper's failed, as text for a log line: slf4j takes a Throwable in the last place
     * for a stack trace, not for the message's {@code {}}.
     */
    private static String reason(Throwable error, Result result) {
        return String.valueOf(error != null ? error : result);
    }
}

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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's clock for sessions and lock-delays: session deadlines live here, in memory, never in the state
 * machine (keepalives are not logged: etcd's design), and the keeper proposes {@code ExpireSession} when a
 * deadline passes and {@code EndLockDelay} when a delay is over.
 *
 * <p>On becoming leader (including the first election after a restart) every session of the state machine gets
 * a fresh deadline of now + ttl + {@link RaftNode#takeoverBound() B}: a grace period, never a mass expiry of sessions
 * whose keepalives went to the old leader, and long enough that no keepalive a deposed leader acknowledged outlives
 * it. Fencing tokens carry safety; these clocks carry what lease-only users (a {@code lock exec} command) rely on.
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

    private final Ticker ticker;
    private final long lockDelayNanos;
    private final RaftNode raft;
    private final RaftLockStateMachine stateMachine;
    private final Proposer proposer;
    private final ConcurrentHashMap<Long, Lease> leases = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Long> delayEndNanos = new ConcurrentHashMap<>();
    private final Set<String> delaysEnding = ConcurrentHashMap.newKeySet();
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
     * A session's lease: its ttl, its deadline on the ticker, whether its expiry has been proposed, and the hash of
     * the session's secret, which a keepalive must present.
     */
    private record Lease(long ttlMillis, long deadlineNanos, boolean expiring, SecretHash secretHash) {
        Lease renewed(long deadlineNanos) {
            return new Lease(ttlMillis, deadlineNanos, false, secretHash);
        }

        Lease withExpiring(boolean expiring) {
            return new Lease(ttlMillis, deadlineNanos, expiring, secretHash);
        }
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
                        false, opened.secretHash()));
            } else if (event instanceof Event.SessionEnded ended) {
                leases.remove(ended.sessionId());
            } else if (event instanceof Event.LockDelayStarted delayed && raft.isLeader()) {
                // Followers skip this: a new leader schedules every delayed lock when it takes over.
                delayEndNanos.put(delayed.lock(), ticker.nanoTime() + lockDelayNanos);
            }
        }
    }

    /** True while this peer keeps a lease for the session: it is open, as far as this peer has applied. */
    boolean keeps(long sessionId) {
        return leases.containsKey(sessionId);
    }

    /**
     * Renews a session's lease from {@code arrivalNanos} (the keepalive's arrival, on the ticker), if
     * {@code presented} is the hash of its secret; returns its ttl, or empty when the session is unknown, ended, or its
     * expiry is already proposed. A deadline never moves back. Call only for a {@link Confirmation#CONFIRMED}
     * keepalive.
     *
     * @throws SessionUnauthenticatedException when the session is kept here and {@code presented} is not its
     *     secret's hash; nothing was renewed
     */
    OptionalLong keepAlive(long sessionId, SecretHash presented, long arrivalNanos) {
        boolean[] refused = {false};
        Lease renewed = leases.computeIfPresent(sessionId, (id, lease) -> {
            if (!lease.secretHash().matches(presented)) {
                refused[0] = true;
                return lease;
            }
            if (lease.expiring()) {
                return lease;
            }
            long fromArrival = deadline(arrivalNanos, lease.ttlMillis());
            return lease.renewed(fromArrival - lease.deadlineNanos() > 0 ? fromArrival : lease.deadlineNanos());
        });
        if (refused[0]) {
            throw new SessionUnauthenticatedException(sessionId);
        }
        return renewed == null || renewed.expiring() ? OptionalLong.empty() : OptionalLong.of(renewed.ttlMillis());
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

    private void scan() {
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
        } catch (RuntimeException e) {
            LOG.error("session keeper scan failed", e);
        }
    }

    /**
     * Gives every session a fresh lease of ttl + {@link RaftNode#takeoverBound() B} and schedules the end of every
     * lock-delay, as of now: B covers the keepalives a deposed leader may still have acknowledged.
     */
    private void resetAsNewLeader(long term) {
        int[] sizes = stateMachine.readLocal((LockStateMachine machine) -> {
            long now = ticker.nanoTime();
            Map<Long, Lease> fresh = new HashMap<>();
            for (SessionView session : machine.sessions()) {
                fresh.put(session.sessionId(), new Lease(session.ttlMillis(),
                        deadline(now, session.ttlMillis()) + takeoverBoundNanos, false, session.secretHash()));
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
        LOG.info("leader of term {}: {} sessions get a fresh lease (ttl + {} ms), {} lock-delays restart", term,
                sizes[0], TimeUnit.NANOSECONDS.toMillis(takeoverBoundNanos), sizes[1]);
    }

    private void expireDueSessions(long now) {
        for (Long sessionId : leases.keySet()) {
            boolean[] claimed = {false};
            Lease lease = leases.computeIfPresent(sessionId, (id, current) -> {
                if (current.expiring() || now - current.deadlineNanos() < 0) {
                    return current;
                }
                claimed[0] = true; // this scan moves it to expiring, so only this scan proposes the expiry
                return current.withExpiring(true);
            });
            if (claimed[0]) {
                proposeExpiry(sessionId, lease.ttlMillis());
            }
        }
    }

    private void proposeExpiry(long sessionId, long ttlMillis) {
        LOG.info("session {} expires: no keepalive within its ttl of {} ms", sessionId, ttlMillis);
        proposer.propose(new Command.ExpireSession(sessionId, lockDelayNanos > 0)).whenComplete((result, error) -> {
            if (error != null || result instanceof Result.Rejected) {
                // A later scan tries again while this peer leads; otherwise the next leader takes over.
                leases.computeIfPresent(sessionId, (id, current) -> current.withExpiring(false));
                LOG.warn("expiring session {} failed: {}", sessionId, error != null ? error : result);
            } else {
                leases.remove(sessionId);
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
                    LOG.warn("ending the lock-delay of {} failed: {}", lock, e != null ? e : result);
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
}

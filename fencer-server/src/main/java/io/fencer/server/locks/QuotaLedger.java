package io.fencer.server.locks;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.lock.IdentityUsage;
import io.fencer.server.IdentityQuotas;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The leader's admission control of per-identity quotas ({@link IdentityQuotas}): before a command that may open a
 * session, take a lock or queue a wait is proposed, it reserves that much of its identity's quota; the reservation
 * is refused, and nothing proposed, when the identity's applied usage plus the reservations in flight would pass a
 * quota; it is given back once the command is applied (or failed), when the applied usage holds its effect.
 *
 * <p>Why here, and not in the state machine. The state machine must stay deterministic, and quotas are
 * configuration: server options and ACL files that may differ from peer to peer and change on reload. Checked while
 * applying, the same log would leave replicas in different states. So the state machine only counts, per identity,
 * what its sessions hold ({@link IdentityUsage}, from the quota identity each session recorded when it opened: the
 * counts survive restarts and failovers, and every replica has the same), and the leader, which proposes every
 * command, decides with its own quotas what it proposes. A new leader counts from the replicated state at once; the
 * reservations of commands in flight are this leader's alone, and the commands a deposed leader had in flight are
 * either in the log (and counted) or lost.
 *
 * <p>A reservation counts the most a command may add (an acquire that is granted at once queues nothing), and the
 * applied usage already holds the effect of an applied command until its reservation is given back: both err on the
 * side of refusing, for the moment a command is in flight. A retry that takes nothing more (an open whose session
 * exists, an acquire of a lock the session holds or waits for) is let through by the caller at the quota.
 *
 * <p>Thread-safe: reservations are made and given back under this object's lock, a short section of map updates.
 */
final class QuotaLedger {
    private final Function<String, IdentityUsage> applied;
    private final Function<String, IdentityQuotas> quotas;
    /** Per identity: sessions, locks and waiters reserved by commands in flight. */
    private final Map<String, int[]> inFlight = new HashMap<>(); // guarded by this

    /**
     * @param applied the usage of an identity as of the last apply (lock-free)
     * @param quotas the quotas of an identity, ACL overrides applied
     */
    QuotaLedger(Function<String, IdentityUsage> applied, Function<String, IdentityQuotas> quotas) {
        this.applied = Objects.requireNonNull(applied, "applied");
        this.quotas = Objects.requireNonNull(quotas, "quotas");
    }

    /** A part of an identity's quota held for one command in flight; give it back once with {@link #release()}. */
    final class Reservation {
        private final String identity;
        private final int sessions;
        private final int locks;
        private final int waiters;
        private final AtomicBoolean released = new AtomicBoolean();

        private Reservation(String identity, int sessions, int locks, int waiters) {
            this.identity = identity;
            this.sessions = sessions;
            this.locks = locks;
            this.waiters = waiters;
        }

        /** Gives the reservation back; later calls do nothing. */
        void release() {
            if (identity != null && released.compareAndSet(false, true)) {
                giveBack(this);
            }
        }
    }

    /** Returns a reservation of nothing, for a command admitted without one (a retry). */
    Reservation none() {
        return new Reservation(null, 0, 0, 0);
    }

    /**
     * Reserves {@code sessions} sessions, {@code locks} lock records and {@code waiters} waits of
     * {@code identity}'s quotas for one command.
     *
     * @throws LimitExceededException naming the identity, the quota passed, its value and the count, when the
     *     identity's applied usage plus what is in flight plus this would pass it; nothing is reserved then
     */
    synchronized Reservation reserve(String identity, int sessions, int locks, int waiters) {
        if (sessions < 0 || locks < 0 || waiters < 0 || waiters > locks) {
            throw new IllegalArgumentException("a reservation of " + sessions + " sessions, " + locks + " locks and "
                    + waiters + " waiters");
        }
        IdentityQuotas quota = quotas.apply(identity);
        IdentityUsage usage = applied.apply(identity);
        int[] pending = inFlight.getOrDefault(identity, new int[3]);
        check(identity, "sessionsPerIdentityMax", quota.sessionsPerIdentityMax(), usage.sessions(), pending[0],
                sessions, "sessions open");
        check(identity, "locksPerIdentityMax", quota.locksPerIdentityMax(), usage.locks(), pending[1], locks,
                "locks held or waited for");
        check(identity, "waitersPerIdentityMax", quota.waitersPerIdentityMax(), usage.waiters(), pending[2],
                waiters, "waits queued");
        int[] counts = inFlight.computeIfAbsent(identity, key -> new int[3]);
        counts[0] += sessions;
        counts[1] += locks;
        counts[2] += waiters;
        return new Reservation(identity, sessions, locks, waiters);
    }

    private static void check(String identity, String quota, int max, int applied, int pending, int asked,
            String what) {
        if (asked > 0 && (long) applied + pending + asked > max) {
            throw new LimitExceededException(quota, max, identity, "identity '"
                    + InvalidArgumentException.printable(identity) + "' has " + applied + " " + what
                    + (pending > 0 ? " and " + pending + " more being added" : "") + "; " + asked + " more would pass"
                    + " its quota " + quota + " of " + max + ": end what it no longer needs, or ask the operator for"
                    + " a higher quota");
        }
    }

    private synchronized void giveBack(Reservation reservation) {
        int[] counts = inFlight.get(reservation.identity);
        assert counts != null : "no reservation in flight for " + reservation.identity;
        counts[0] -= reservation.sessions;
        counts[1] -= reservation.locks;
        counts[2] -= reservation.waiters;
        assert counts[0] >= 0 && counts[1] >= 0 && counts[2] >= 0 : "negative reservations of "
                + reservation.identity;
        if (counts[0] == 0 && counts[1] == 0 && counts[2] == 0) {
            inFlight.remove(reservation.identity);
        }
    }

    /** Returns what {@code identity} has reserved in flight: sessions, locks, waiters (for tests). */
    synchronized int[] inFlight(String identity) {
        return inFlight.getOrDefault(identity, new int[3]).clone();
    }
}

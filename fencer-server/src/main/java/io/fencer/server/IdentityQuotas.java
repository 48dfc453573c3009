package io.fencer.server;

import io.fencer.lock.Limits;
import io.fencer.server.watch.WatchLimits;

/**
 * The quotas of one identity on a lock server: how much of the server's capacity the sessions one identity opened
 * may take, so that no one client can exhaust a limit of the whole server ({@link Limits#sessionsMax()},
 * {@link Limits#locksMax()}) and leave every other client refused.
 *
 * <p>The identity is a client certificate's CN, or for a caller without one {@code anonymous@ADDRESS}, by the network
 * address it connects from (see {@code io.fencer.server.rpc.Identities#quotaIdentity()}): plaintext callers all share
 * the identity {@code anonymous}, and one flooding client would otherwise use up the quota of all of them. An ACL file
 * may set other quotas for some identities ({@code IDENTITY quota sessions 50}, see
 * {@link io.fencer.server.auth.AclFile}).
 *
 * <p>The defaults are a tenth of the corresponding limit of the server ({@link Limits#DEFAULT}): 10,000 sessions and
 * 100,000 lock records, so that ten identities can fill the server and one cannot; and 1,000 waits, a tenth of the
 * waiters one lock may queue, so that one identity cannot fill a lock's queue alone; and 100 Watch streams, a tenth of
 * a peer's ({@link WatchLimits#DEFAULT}), so that one client cannot take every watcher's place on a peer. Each is far
 * more than a benchmark's 64 sessions or the chaos harness's workers need from one address.
 *
 * @param sessionsPerIdentityMax most sessions open at once for one identity
 * @param locksPerIdentityMax most lock records one identity's sessions take part in at once: locks held (and
 *     permits) plus waits queued, one per lock a wait is queued on
 * @param waitersPerIdentityMax most waits one identity's sessions have queued at once, counted as in
 *     {@code locksPerIdentityMax}
 * @param watchersPerIdentityMax most Watch streams one identity may have open on one peer at once (each peer counts
 *     its own: a Watch is served by the peer it was opened on)
 */
public record IdentityQuotas(int sessionsPerIdentityMax, int locksPerIdentityMax, int waitersPerIdentityMax,
        int watchersPerIdentityMax) {
    /** A tenth of each of {@link Limits#DEFAULT}'s sessions, locks and waiters per lock, and of a peer's watchers. */
    public static final IdentityQuotas DEFAULT = new IdentityQuotas(Limits.DEFAULT.sessionsMax() / 10,
            Limits.DEFAULT.locksMax() / 10, Limits.DEFAULT.waitersPerLockMax() / 10,
            WatchLimits.DEFAULT.watchersMax() / 10);

    public IdentityQuotas {
        if (sessionsPerIdentityMax < 1 || locksPerIdentityMax < 1 || waitersPerIdentityMax < 1
                || watchersPerIdentityMax < 1) {
            throw new IllegalArgumentException("quotas must be positive: sessionsPerIdentityMax "
                    + sessionsPerIdentityMax + ", locksPerIdentityMax " + locksPerIdentityMax
                    + ", waitersPerIdentityMax " + waitersPerIdentityMax + ", watchersPerIdentityMax "
                    + watchersPerIdentityMax);
        }
    }

    /** Returns these quotas of sessions, locks and waiters, with the default quota of watchers. */
    public IdentityQuotas(int sessionsPerIdentityMax, int locksPerIdentityMax, int waitersPerIdentityMax) {
        this(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                WatchLimits.DEFAULT.watchersMax() / 10);
    }

    public IdentityQuotas withSessionsPerIdentityMax(int sessionsPerIdentityMax) {
        return new IdentityQuotas(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                watchersPerIdentityMax);
    }

    public IdentityQuotas withLocksPerIdentityMax(int locksPerIdentityMax) {
        return new IdentityQuotas(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                watchersPerIdentityMax);
    }

    public IdentityQuotas withWaitersPerIdentityMax(int waitersPerIdentityMax) {
        return new IdentityQuotas(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                watchersPerIdentityMax);
    }

    public IdentityQuotas withWatchersPerIdentityMax(int watchersPerIdentityMax) {
        return new IdentityQuotas(sessionsPerIdentityMax, locksPerIdentityMax, waitersPerIdentityMax,
                watchersPerIdentityMax);
    }
}

package io.fencer.lock;

/**
 * What the sessions one identity opened hold in the lock state machine: the count a per-identity quota is checked
 * against. The identity is a session's {@linkplain Command.OpenSession#quotaIdentity() quota identity}, recorded
 * in the replicated state when the session opened, so every replica (and a restarted or newly elected leader)
 * derives the same counts from the same log.
 *
 * @param sessions open sessions
 * @param locks lock records the sessions take part in: locks held (in either mode, permits included) plus waits
 *     queued, one per lock a wait is queued on (a multi-lock wait on n locks counts n)
 * @param waiters waits queued, counted as in {@code locks}
 */
public record IdentityUsage(int sessions, int locks, int waiters) {
    /** The usage of an identity with no open session. */
    public static final IdentityUsage NONE = new IdentityUsage(0, 0, 0);

    public IdentityUsage {
        if (sessions < 0 || locks < 0 || waiters < 0 || waiters > locks) {
            throw new IllegalArgumentException("usage out of range: " + sessions + " sessions, " + locks
                    + " locks, " + waiters + " waiters");
        }
    }
}

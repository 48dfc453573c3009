package io.fencer.core;

/**
 * A configured limit is reached (sessions, locks, waiters per lock, ...); {@link #limit()} names it. A per-identity
 * quota ({@code sessionsPerIdentityMax} ...) also names the identity it counts, {@link #identity()}.
 */
public final class LimitExceededException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String limit;
    private final long limitValue;
    private final String identity;

    public LimitExceededException(String limit, long limitValue, String message) {
        this(limit, limitValue, "", message);
    }

    /**
     * A per-identity quota reached.
     *
     * @param identity the identity the quota counts: a client certificate's CN, or {@code anonymous@ADDRESS} for a
     *     caller without one; empty for a limit of the whole server
     */
    public LimitExceededException(String limit, long limitValue, String identity, String message) {
        super(message);
        this.limit = limit;
        this.limitValue = limitValue;
        this.identity = identity == null ? "" : identity;
    }

    /** Returns the identity a per-identity quota counts, or empty for a limit of the whole server. */
    public String identity() {
        return identity;
    }

    /** Returns the limit's configuration name, e.g. {@code waitersPerLockMax}. */
    public String limit() {
        return limit;
    }

    public long limitValue() {
        return limitValue;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.LIMIT_EXCEEDED;
    }
}

package io.fencer.core;

/** A configured limit is reached (sessions, locks, waiters per lock, ...); {@link #limit()} names it. */
public final class LimitExceededException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String limit;
    private final long limitValue;

    public LimitExceededException(String limit, long limitValue, String message) {
        super(message);
        this.limit = limit;
        this.limitValue = limitValue;
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

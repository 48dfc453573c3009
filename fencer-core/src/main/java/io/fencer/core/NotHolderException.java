package io.fencer.core;

/**
 * A release (or other holder-only operation) presented a token that is not the lock's current holder's:
 * superseded, expired or already released. Nothing changed.
 */
public final class NotHolderException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final long presented;
    private final long current;

    /**
     * @param current the current holder's token value, or {@link FencingToken#NONE} when the lock is free
     */
    public NotHolderException(String lock, long presented, long current) {
        super("token " + lock + "#" + presented + " is not the holder of lock '" + lock + "'"
                + (current == FencingToken.NONE ? "; the lock is free" : "; the holder is " + lock + "#" + current));
        this.lock = lock;
        this.presented = presented;
        this.current = current;
    }

    public String lock() {
        return lock;
    }

    public long presented() {
        return presented;
    }

    /** Returns the current holder's token value, or {@link FencingToken#NONE} when the lock is free. */
    public long current() {
        return current;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.NOT_HOLDER;
    }
}

package io.fencer.core;

/** The lock's token counter reached {@link FencingToken#VALUE_MAX}; it cannot be granted again. */
public final class TokenExhaustedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final long lastToken;

    public TokenExhaustedException(String lock, long lastToken) {
        super("lock '" + lock + "' cannot be granted: its last token " + lastToken + " reached the maximum "
                + FencingToken.VALUE_MAX);
        this.lock = lock;
        this.lastToken = lastToken;
    }

    public String lock() {
        return lock;
    }

    /** Returns the lock's last token value at the refusal; the lock service reports {@link FencingToken#VALUE_MAX}. */
    public long lastToken() {
        return lastToken;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.TOKEN_EXHAUSTED;
    }
}

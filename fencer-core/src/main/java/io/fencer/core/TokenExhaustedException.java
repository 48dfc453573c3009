package io.fencer.core;

/** The lock's token counter reached {@link FencingToken#VALUE_MAX}; it cannot be granted again. */
public final class TokenExhaustedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;

    public TokenExhaustedException(String lock, long lastToken) {
        super("lock '" + lock + "' cannot be granted: its last token " + lastToken + " reached the maximum "
                + FencingToken.VALUE_MAX);
        this.lock = lock;
    }

    public String lock() {
        return lock;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.TOKEN_EXHAUSTED;
    }
}

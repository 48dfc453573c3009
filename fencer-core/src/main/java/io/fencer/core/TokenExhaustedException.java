package io.fencer.core;

/** The lock's token counter reached {@link FencingToken#VALUE_MAX}; it cannot be granted again. */
public final class TokenExhaustedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final long lastToken;

    public TokenExhaustedException(String lock, long lastToken) {
        super(message(lock, lastToken));
        this.lock = lock;
        this.lastToken = lastToken;
    }

    /**
     * Names the end the token reached: {@link FencingToken#VALUE_MAX}, or the end of its generation, where a group
     * stops before the maximum (each generation holds {@code 2^48 - 1} grants of a lock). Made from the two values
     * the wire carries, so a client rebuilds the server's message.
     */
    private static String message(String lock, long lastToken) {
        String refused = "lock '" + lock + "' cannot be granted: its last token " + lastToken;
        if (lastToken >= FencingToken.VALUE_MAX || lastToken < 0) {
            return refused + " reached the maximum " + FencingToken.VALUE_MAX;
        }
        int generation = FencingToken.generationOf(lastToken);
        return refused + " is the last of token generation " + generation + ", which ends at "
                + FencingToken.generationLast(generation) + " (2^" + FencingToken.GENERATION_SHIFT + " - 1 grants of"
                + " a lock); a group restored from a backup grants in a later generation";
    }

    public String lock() {
        return lock;
    }

    /** Returns the lock's last token value at the refusal: its generation's end, or {@link FencingToken#VALUE_MAX}. */
    public long lastToken() {
        return lastToken;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.TOKEN_EXHAUSTED;
    }
}

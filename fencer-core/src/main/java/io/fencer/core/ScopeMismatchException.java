package io.fencer.core;

/** A token of one lock was presented to a resource scope bound to another lock; it was not compared. */
public final class ScopeMismatchException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String scope;
    private final String tokenLock;
    private final long tokenValue;

    public ScopeMismatchException(String scope, FencingToken token) {
        super("token " + token + " belongs to lock '" + token.lock() + "', not to scope '" + scope + "'");
        this.scope = scope;
        this.tokenLock = token.lock();
        this.tokenValue = token.value();
    }

    public String scope() {
        return scope;
    }

    /** Returns the lock of the presented token. */
    public String tokenLock() {
        return tokenLock;
    }

    /** Returns the presented token, of another lock than the scope's. */
    public FencingToken token() {
        return new FencingToken(tokenLock, tokenValue);
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.SCOPE_MISMATCH;
    }
}

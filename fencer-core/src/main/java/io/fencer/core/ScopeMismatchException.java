package io.fencer.core;

/** A token of one lock was presented to a resource scope bound to another lock; it was not compared. */
public final class ScopeMismatchException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String scope;
    private final String tokenLock;

    public ScopeMismatchException(String scope, FencingToken token) {
        super("token " + token + " belongs to lock '" + token.lock() + "', not to scope '" + scope + "'");
        this.scope = scope;
        this.tokenLock = token.lock();
    }

    public String scope() {
        return scope;
    }

    public String tokenLock() {
        return tokenLock;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.SCOPE_MISMATCH;
    }
}

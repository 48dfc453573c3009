package io.fencer.core;

/**
 * A retry under an idempotency key carried other ops than the write first applied with that key and token: the
 * resource kept the first write and applied nothing of this one. Answering it {@code replayed} would tell the
 * client that ops it never saw applied were its own; a new write needs a new key.
 *
 * <p>The error names the scope, the idempotency key and the token, never the ops' keys or values.
 */
public final class IdempotencyMismatchException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String scope;
    private final String idempotencyKey;
    private final long token;

    /**
     * @param scope the scope written to
     * @param idempotencyKey the key the retry and the first write share
     * @param token the value of the token the retry and the first write share
     */
    public IdempotencyMismatchException(String scope, String idempotencyKey, long token) {
        super("the retry with idempotency key '" + idempotencyKey + "' and token " + token + " to scope '" + scope
                + "' carries other ops than the write first applied with them; it was not applied (a retry must"
                + " repeat its write exactly, a new write needs a new key)");
        this.scope = scope;
        this.idempotencyKey = idempotencyKey;
        this.token = token;
    }

    public String scope() {
        return scope;
    }

    public String idempotencyKey() {
        return idempotencyKey;
    }

    /** Returns the value of the token the retry presented, the same as the first write's. */
    public long token() {
        return token;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.IDEMPOTENCY_MISMATCH;
    }
}

package io.fencer.core;

/**
 * A resource that requires signed tokens refused a sequencer whose signature is missing, made with a key it
 * does not know, or wrong (forged or altered). Nothing was compared and nothing changed.
 *
 * <p>Signatures stop a client from forging a huge token and locking every honest holder out; see
 * {@link TokenKeys} and {@link Sequencer#parse(String, TokenKeys)}.
 */
public final class BadTokenSignatureException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final long value;
    private final String why;

    /**
     * @param lock the lock named by the sequencer
     * @param value the token value named by the sequencer
     * @param why the reason, as a clause: "it is unsigned and this resource requires signed tokens"
     */
    public BadTokenSignatureException(String lock, long value, String why) {
        super("token " + lock + "#" + value + " refused: " + why);
        this.lock = lock;
        this.value = value;
        this.why = why;
    }

    public String lock() {
        return lock;
    }

    public long value() {
        return value;
    }

    /** Returns the reason alone, without the token. */
    public String why() {
        return why;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.BAD_TOKEN_SIGNATURE;
    }
}

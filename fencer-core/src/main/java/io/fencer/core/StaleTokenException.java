package io.fencer.core;

/**
 * A resource refused a token because it has already accepted a newer one: the grant this token came from
 * was superseded (its holder was probably paused past its lease). The write did not happen.
 */
public class StaleTokenException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String scope;
    private final long presented;
    private final long accepted;
    private final FencePolicy policy;

    public StaleTokenException(String scope, long presented, long accepted, FencePolicy policy) {
        super("stale token " + scope + "#" + presented + " refused by scope '" + scope + "': accepted token is "
                + scope + "#" + accepted + " (policy " + policy + ")");
        this.scope = scope;
        this.presented = presented;
        this.accepted = accepted;
        this.policy = policy;
    }

    protected StaleTokenException(StaleTokenException cause) {
        super(cause.getMessage(), cause);
        this.scope = cause.scope;
        this.presented = cause.presented;
        this.accepted = cause.accepted;
        this.policy = cause.policy;
    }

    public String scope() {
        return scope;
    }

    public long presented() {
        return presented;
    }

    /** Returns the resource's accepted token value at the moment of refusal. */
    public long accepted() {
        return accepted;
    }

    /** Returns the policy by which the resource compared the tokens. */
    public FencePolicy policy() {
        return policy;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.STALE_TOKEN;
    }
}

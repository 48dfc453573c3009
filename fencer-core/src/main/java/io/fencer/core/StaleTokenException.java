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
    private final String why;

    public StaleTokenException(String scope, long presented, long accepted, FencePolicy policy) {
        this(scope, presented, accepted, policy, null);
    }

    /**
     * As the other constructor, with {@code why} the token counts as stale when the scope itself has not accepted
     * {@code accepted}: the store beside a lock service refuses a scope's first write under a grant that service has
     * superseded, and {@code accepted} is then the lock's latest token there. Null or empty: the scope accepted it.
     */
    public StaleTokenException(String scope, long presented, long accepted, FencePolicy policy, String why) {
        super("stale token " + scope + "#" + presented + " refused by scope '" + scope + "': "
                + (why == null || why.isEmpty() ? "accepted token is " + scope + "#" + accepted : why)
                + " (policy " + policy + ")");
        this.scope = scope;
        this.presented = presented;
        this.accepted = accepted;
        this.policy = policy;
        this.why = why == null ? "" : why;
    }

    protected StaleTokenException(StaleTokenException cause) {
        super(cause.getMessage(), cause);
        this.scope = cause.scope;
        this.presented = cause.presented;
        this.accepted = cause.accepted;
        this.policy = cause.policy;
        this.why = cause.why;
    }

    public String scope() {
        return scope;
    }

    public long presented() {
        return presented;
    }

    /**
     * Returns the resource's accepted token value at the moment of refusal; with a {@link #why()}, the lock's latest
     * token in the lock service that superseded the presented one.
     */
    public long accepted() {
        return accepted;
    }

    /** Returns the policy by which the resource compared the tokens. */
    public FencePolicy policy() {
        return policy;
    }

    /**
     * Returns why the token is stale when the scope has not accepted {@link #accepted()} itself (a scope's first
     * write under a grant the lock service beside the store superseded); empty when it has.
     */
    public String why() {
        return why;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.STALE_TOKEN;
    }
}

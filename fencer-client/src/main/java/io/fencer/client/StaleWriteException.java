package io.fencer.client;

import io.fencer.client.internal.StaleDiagnostics;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import java.util.Objects;

/**
 * The store refused a write (or a fenced read, or a unit) because its scope has accepted a newer token than the
 * one presented: the grant this token came from was superseded, most likely while its holder was paused past its
 * lease. Nothing was applied, unless {@link #retried()}.
 *
 * <p>{@link #diagnose()} asks the lock service what happened to the token, to tell the expected case (superseded
 * by a later grant) from a real inconsistency between lock service and store.
 */
public final class StaleWriteException extends StaleTokenException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final boolean retried;
    /** The lock service to ask in {@link #diagnose()}; not carried across serialization. */
    private final transient FencerClient lockService;

    /**
     * @param refusal the store's refusal, as the error catalogue mapped it
     * @param presented the token the refused request presented
     * @param retried true when the refusal answered a retry of a write whose earlier attempt's outcome is unknown
     * @param lockService the lock service for {@link #diagnose()}, or null
     */
    public StaleWriteException(StaleTokenException refusal, FencingToken presented, boolean retried,
            FencerClient lockService) {
        super(refusal);
        Objects.requireNonNull(presented, "presented");
        if (presented.value() != refusal.presented()) {
            throw new IllegalArgumentException("the refusal names token value " + refusal.presented()
                    + " but the request presented " + presented);
        }
        this.lock = presented.lock();
        this.retried = retried;
        this.lockService = lockService;
    }

    /** Returns the refused token. */
    public FencingToken token() {
        return new FencingToken(lock, presented());
    }

    /**
     * Returns the scope's accepted token at the refusal: a token of the same lock, newer than (or, under a STRICT
     * scope, equal to) the refused one. With a {@link #why()}, the scope had accepted none yet, and this is the
     * lock's latest token in the lock service beside the store, which superseded the refused one.
     */
    public FencingToken acceptedToken() {
        return new FencingToken(lock, accepted());
    }

    /**
     * Returns true when this refusal answered a retry of an idempotent write whose earlier attempt got no answer:
     * that earlier attempt may have been applied before a newer token arrived.
     */
    public boolean retried() {
        return retried;
    }

    /**
     * Asks the lock service (a linearizable Validate of the refused token) what happened to it. Never throws for
     * operating errors: an unreachable or unconfigured lock service gives {@link StaleDiagnosis.Kind#UNKNOWN}. A
     * {@link StaleDiagnosis.Kind#FENCING_INCONSISTENCY} is also logged as WARNING.
     */
    public StaleDiagnosis diagnose() {
        return StaleDiagnostics.diagnose(lockService, scope(), token(), accepted());
    }

    /**
     * Returns {@code stale token orders#31 refused by scope 'orders': accepted orders#32} (or the store's
     * {@link #why()} in place of the accepted token), and what a retried write may have done.
     */
    @Override
    public String getMessage() {
        return "stale token " + lock + "#" + presented() + " refused by scope '" + scope() + "': "
                + (why().isEmpty() ? "accepted " + lock + "#" + accepted() : why())
                + (retried ? " (an earlier attempt of this write got no answer and may have been"
                + " applied before)" : "");
    }
}

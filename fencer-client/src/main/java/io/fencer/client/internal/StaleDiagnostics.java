package io.fencer.client.internal;

import io.fencer.client.FencerClient;
import io.fencer.client.StaleDiagnosis;
import io.fencer.client.StaleDiagnosis.Kind;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import java.util.Locale;

/**
 * Diagnoses a stale refusal by asking the lock service about the refused token. The reasoning: Validate is a
 * linearizable read made after the store's refusal, so every token the store genuinely accepted was issued before
 * it and the service's latest issued token is at least the scope's accepted one. A service that says otherwise
 * (the refused token is still current, or nothing as high as the accepted token was ever issued) contradicts the
 * store: a token was issued twice, or the store was fed a forged one.
 */
public final class StaleDiagnostics {
    private static final System.Logger LOG = System.getLogger(StaleDiagnostics.class.getName());

    private StaleDiagnostics() {}

    /**
     * Returns the diagnosis of {@code presented}, refused by {@code scope} whose accepted token value was
     * {@code accepted}; never throws for operating errors.
     *
     * @param lockService the lock service that issued the token, or null when none is known
     */
    public static StaleDiagnosis diagnose(FencerClient lockService, String scope, FencingToken presented,
            long accepted) {
        if (accepted < presented.value()) {
            throw new IllegalArgumentException("a stale refusal of " + presented + " by scope '" + scope
                    + "' cannot have accepted " + accepted + ", below it");
        }
        if (lockService == null) {
            return unknown(scope, presented, accepted, "no lock service client was given to the store client, so the"
                    + " lock service could not be asked about " + presented);
        }
        TokenStatus status;
        try {
            status = lockService.validate(presented);
        } catch (FencerException | IllegalStateException e) {
            return unknown(scope, presented, accepted, "the lock service could not be asked about " + presented + ": "
                    + e.getMessage());
        }
        return judge(scope, presented, accepted, status);
    }

    /** Returns the verdict on the lock service's answer {@code status}. */
    static StaleDiagnosis judge(String scope, FencingToken presented, long accepted, TokenStatus status) {
        String lock = presented.lock();
        String acceptedText = lock + "#" + accepted;
        String ended = status.ended() == null ? null : status.ended().toLowerCase(Locale.ROOT).replace('_', ' ');
        if (status.status() == TokenStatus.Status.CURRENT && presented.value() < accepted) {
            return inconsistent(scope, presented, accepted, "the lock service says " + presented + " is the"
                    + " CURRENT holder of lock '" + lock + "', yet scope '" + scope + "' has accepted the higher "
                    + acceptedText + ": a token was issued twice, or the store was fed a forged token");
        }
        if (status.status() == TokenStatus.Status.NEVER_ISSUED || status.lastToken() < accepted) {
            return inconsistent(scope, presented, accepted, "the lock service's latest token for lock '" + lock
                    + "' is " + lock + "#" + status.lastToken() + " (" + presented + " is " + status.status()
                    + "), yet scope '" + scope + "' has accepted " + acceptedText + ": the store was fed a forged"
                    + " token, or the lock service lost state and will issue tokens twice");
        }
        switch (status.status()) {
            case SUPERSEDED:
                String latest = lock + "#" + status.lastToken();
                return new StaleDiagnosis(Kind.SUPERSEDED, presented, scope, accepted, status.lastToken(),
                        status.ended(), presented + " was superseded: a later grant exists, the lock service's latest"
                        + " token for lock '" + lock + "' is " + latest + (status.lastToken() == accepted
                        ? ", which wrote to scope '" + scope + "'" : "; scope '" + scope + "' accepted " + acceptedText)
                        + (ended == null ? "" : " (" + presented + "'s grant ended: " + ended + ")"));
            case CURRENT:
                // presented < accepted was judged above: the scope refused the current token's second write.
                return new StaleDiagnosis(Kind.ALREADY_USED, presented, scope, accepted, 0, null, presented
                        + " still holds lock '" + lock + "', but scope '" + scope + "' has already accepted it"
                        + " and admits one write per grant (policy STRICT)");
            case ENDED:
                // lastToken >= accepted >= presented and ENDED means lastToken == presented: so accepted == presented.
                assert accepted == presented.value() : "ENDED " + presented + " with accepted " + accepted;
                return new StaleDiagnosis(Kind.ENDED, presented, scope, accepted, 0, status.ended(), presented
                        + "'s grant has ended" + (ended == null ? "" : " (" + ended + ")") + " with no later grant,"
                        + " and scope '" + scope + "' has already accepted it (policy STRICT: one write per grant)");
            default:
                throw new IllegalStateException("unhandled token status " + status.status());
        }
    }

    private static StaleDiagnosis inconsistent(String scope, FencingToken presented, long accepted, String detail) {
        StaleDiagnosis diagnosis = new StaleDiagnosis(Kind.FENCING_INCONSISTENCY, presented, scope, accepted, 0, null,
                "FENCING INCONSISTENCY: " + detail);
        LOG.log(System.Logger.Level.WARNING, diagnosis.detail());
        return diagnosis;
    }

    private static StaleDiagnosis unknown(String scope, FencingToken presented, long accepted, String detail) {
        return new StaleDiagnosis(Kind.UNKNOWN, presented, scope, accepted, 0, null, detail);
    }
}

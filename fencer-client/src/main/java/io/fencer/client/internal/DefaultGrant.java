package io.fencer.client.internal;

import io.fencer.client.Grant;
import io.fencer.client.GrantLoss;
import io.fencer.client.SessionLoss;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One grant of a lock through a session; {@link #close()} releases it once. Its session tells it when it is lost
 * (revoked, or the session lost) while it is open: see {@link DefaultSession#track}. Thread-safe.
 */
final class DefaultGrant implements Grant {
    private final DefaultSession session;
    private final FencingToken token;
    private final String sequencer;
    private final AtomicBoolean released = new AtomicBoolean();
    /** This grant's loss, shared with the other objects of the same grant (see {@link DefaultSession#track}). */
    private final CompletableFuture<GrantLoss> lost;
    /** What callers see: completing or cancelling it does not touch {@link #lost}. */
    private final CompletionStage<GrantLoss> lostView;

    /**
     * Creates the grant of {@code token} through {@code session}.
     *
     * @param sequencer the wire form the service sent with the token, already checked to name {@code token}
     */
    DefaultGrant(DefaultSession session, FencingToken token, String sequencer) {
        this.session = session;
        this.token = token;
        this.sequencer = sequencer;
        this.lost = session.track(token);
        this.lostView = lost.minimalCompletionStage();
    }

    @Override
    public FencingToken token() {
        return token;
    }

    @Override
    public String sequencer() {
        return sequencer;
    }

    @Override
    public CompletionStage<GrantLoss> lost() {
        return lostView;
    }

    /** The loss of the grant of {@code token} of session {@code sessionId}, which {@code identity} revoked. */
    static GrantLoss revoked(FencingToken token, long sessionId, String identity) {
        return new GrantLoss(token, GrantLoss.Cause.REVOKED, identity, "grant " + token + " of session " + sessionId
                + " was revoked by '" + identity + "': the lock passes to its next waiter under a higher token, and"
                + " resources refuse this token once that holder has written");
    }

    /** The loss of the grant of {@code token} with its session, lost (not closed) as {@code loss} says. */
    static GrantLoss sessionLost(FencingToken token, SessionLoss loss) {
        return new GrantLoss(token, GrantLoss.Cause.SESSION_LOST, null, "grant " + token + " ended with its"
                + " session (" + loss.cause() + "): " + loss.detail());
    }

    /** The loss of the grant of {@code token} of session {@code sessionId}, answered before it was durable. */
    static GrantLoss notDurable(FencingToken token, long sessionId) {
        return new GrantLoss(token, GrantLoss.Cause.NOT_DURABLE, null, "grant " + token + " of session " + sessionId
                + " was answered before it was durable, and the service restarted or failed a log entry first: it may"
                + " never have taken effect, and a later grant of the lock carries a higher token; the client gives"
                + " the lock's place up");
    }

    /**
     * True once there is nothing left for this grant to release: an operator revoked it, or it was lost before it was
     * durable and its session gives its place up itself (a release sent anyway, before that loss was told here, is
     * harmless: the service releases a token's own grant only, and answers NOT_HOLDER to any other).
     */
    private boolean endedByTheService() {
        GrantLoss loss = lost.getNow(null);
        return loss != null && (loss.cause() == GrantLoss.Cause.REVOKED || loss.cause() == GrantLoss.Cause.NOT_DURABLE);
    }

    /**
     * Releases the lock unless this grant is already gone. NOT_HOLDER (superseded, or released by an earlier
     * attempt of this very call whose answer was lost) and SESSION_EXPIRED mean exactly that, and are not errors;
     * neither is SESSION_UNAUTHENTICATED, after which the session is lost and its locks end with its lease.
     * The release is sent without waiting when it can be ({@link DefaultSession#releaseWithoutWaiting}); when it
     * waits and the service cannot be reached, the {@link io.fencer.core.UnavailableException} is thrown and a later
     * close tries again.
     */
    @Override
    public void close() {
        end(false);
    }

    @Override
    public void release() {
        end(true);
    }

    private void end(boolean waitForTheService) {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        session.untrack(token, lost);
        if (endedByTheService()) {
            return; // a release would only be refused NOT_HOLDER, or be a second one
        }
        SessionLoss loss = session.knownLoss();
        if (loss != null && loss.cause() != SessionLoss.Cause.UNREACHABLE) {
            return; // the session is closed or expired: the service has released its locks
        }
        try {
            if (waitForTheService) {
                session.releaseToken(token);
            } else {
                session.releaseWithoutWaiting(token);
            }
        } catch (NotHolderException | SessionExpiredException | SessionUnauthenticatedException alreadyGone) {
            // The grant ended before, or cannot be released by this client any more: nothing to release.
        } catch (RuntimeException e) {
            released.set(false);
            session.retrack(token, lost);
            throw e;
        }
    }

    @Override
    public String toString() {
        return "Grant[" + token + ", session " + session.id() + "]";
    }
}

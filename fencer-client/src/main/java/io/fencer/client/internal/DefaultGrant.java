package io.fencer.client.internal;

import io.fencer.client.Grant;
import io.fencer.client.SessionLoss;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import java.util.concurrent.atomic.AtomicBoolean;

/** One grant of a lock through a session; {@link #close()} releases it once. Thread-safe. */
final class DefaultGrant implements Grant {
    private final DefaultSession session;
    private final FencingToken token;
    private final String sequencer;
    private final AtomicBoolean released = new AtomicBoolean();

    /**
     * Creates the grant of {@code token} through {@code session}.
     *
     * @param sequencer the wire form the service sent with the token, already checked to name {@code token}
     */
    DefaultGrant(DefaultSession session, FencingToken token, String sequencer) {
        this.session = session;
        this.token = token;
        this.sequencer = sequencer;
    }

    @Override
    public FencingToken token() {
        return token;
    }

    @Override
    public String sequencer() {
        return sequencer;
    }

    /**
     * Releases the lock unless this grant is already gone. NOT_HOLDER (superseded, or released by an earlier
     * attempt of this very call whose answer was lost) and SESSION_EXPIRED mean exactly that, and are not errors;
     * neither is SESSION_UNAUTHENTICATED, after which the session is lost and its locks end with its lease.
     * When the service cannot be reached the {@link io.fencer.core.UnavailableException} is thrown and a later
     * close tries again.
     */
    @Override
    public void close() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        SessionLoss loss = session.knownLoss();
        if (loss != null && loss.cause() != SessionLoss.Cause.UNREACHABLE) {
            return; // the session is closed or expired: the service has released its locks
        }
        try {
            session.releaseToken(token);
        } catch (NotHolderException | SessionExpiredException | SessionUnauthenticatedException alreadyGone) {
            // The grant ended before, or cannot be released by this client any more: nothing to release.
        } catch (RuntimeException e) {
            released.set(false);
            throw e;
        }
    }

    @Override
    public String toString() {
        return "Grant[" + token + ", session " + session.id() + "]";
    }
}

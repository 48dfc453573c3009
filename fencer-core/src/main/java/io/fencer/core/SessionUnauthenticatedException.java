package io.fencer.core;

/**
 * A call that acts for a session did not prove it is the session's opener: the session secret it presented is
 * missing or is not the one {@code OpenSession} returned. Nothing changed.
 *
 * <p>The sentence names the session and why, never the secret presented: a wrong secret may be a real secret of
 * another session, and errors travel to clients and into logs.
 */
public final class SessionUnauthenticatedException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final long sessionId;

    public SessionUnauthenticatedException(long sessionId) {
        this(sessionId, "session " + sessionId + " refused: the session secret presented is not this session's");
    }

    /**
     * @param message the sentence: it names the session and why, and must never hold the secret presented
     */
    public SessionUnauthenticatedException(long sessionId, String message) {
        super(message);
        this.sessionId = sessionId;
    }

    public long sessionId() {
        return sessionId;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.SESSION_UNAUTHENTICATED;
    }
}

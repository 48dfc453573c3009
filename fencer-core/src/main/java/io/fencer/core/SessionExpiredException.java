package io.fencer.core;

/** The session is unknown or has ended (expired or closed): its locks are gone. */
public final class SessionExpiredException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final long sessionId;

    public SessionExpiredException(long sessionId) {
        this(sessionId, "session " + sessionId + " is unknown or has ended");
    }

    public SessionExpiredException(long sessionId, String message) {
        super(message);
        this.sessionId = sessionId;
    }

    public long sessionId() {
        return sessionId;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.SESSION_EXPIRED;
    }
}

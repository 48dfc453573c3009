package io.fencer.core;

/**
 * A release (or other holder-only operation) presented a token that is not the lock's current holder's:
 * superseded, expired or already released, or held by another session than the one that presented it. Nothing
 * changed.
 */
public final class NotHolderException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String lock;
    private final long presented;
    private final long current;
    private final long sessionId;
    private final String why;

    /**
     * A refusal that names no session: the token alone was not the holder's.
     *
     * @param current the current holder's token value, or {@link FencingToken#NONE} when the lock is free
     */
    public NotHolderException(String lock, long presented, long current) {
        this(lock, presented, current, 0);
    }

    /**
     * A refusal of a token presented by session {@code sessionId}: the token is not the one that session holds the
     * lock under (it holds another one, or the lock is another session's, or free).
     *
     * @param current the current holder's token value, or {@link FencingToken#NONE} when the lock is free
     * @param sessionId the session that presented the token, or 0 when the refusal names none
     */
    public NotHolderException(String lock, long presented, long current, long sessionId) {
        this(lock, presented, current, sessionId, "");
    }

    /**
     * As the other constructors, with {@code why} the call needed the holder's token, as a clause appended to the
     * sentence (e.g. which scope a CreateScope was to claim); empty for none. A {@code presented} of
     * {@link FencingToken#NONE} means that no token of the lock was presented.
     */
    public NotHolderException(String lock, long presented, long current, long sessionId, String why) {
        super(sentence(lock, presented, current, sessionId) + (why == null || why.isEmpty() ? "" : ": " + why));
        this.lock = lock;
        this.presented = presented;
        this.current = current;
        this.sessionId = sessionId;
        this.why = why == null ? "" : why;
    }

    /** Returns why the call needed the holder's token, when the refusal says; empty otherwise. */
    public String why() {
        return why;
    }

    private static String sentence(String lock, long presented, long current, long sessionId) {
        String holder = current == FencingToken.NONE ? "the lock is free" : "the holder is " + lock + "#" + current;
        if (presented == FencingToken.NONE) {
            return "no token of lock '" + lock + "' was presented; " + holder;
        }
        if (sessionId == 0) {
            return "token " + lock + "#" + presented + " is not the holder of lock '" + lock + "'; " + holder;
        }
        return "token " + lock + "#" + presented + " is not held by session " + sessionId + " on lock '" + lock
                + "'; " + holder;
    }

    public String lock() {
        return lock;
    }

    public long presented() {
        return presented;
    }

    /** Returns the current holder's token value, or {@link FencingToken#NONE} when the lock is free. */
    public long current() {
        return current;
    }

    /** Returns the session that presented the token, or 0 when the refusal names none (older servers too). */
    public long sessionId() {
        return sessionId;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.NOT_HOLDER;
    }
}

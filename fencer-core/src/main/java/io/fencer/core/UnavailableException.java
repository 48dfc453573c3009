package io.fencer.core;

/**
 * The service could not be reached or has no leader. The operation may or may not have taken effect:
 * retry it with the same request id, which makes the retry idempotent.
 */
public final class UnavailableException extends FencerException {
    private static final long serialVersionUID = 1L;

    public UnavailableException(String message) {
        super(message);
    }

    public UnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.UNAVAILABLE;
    }
}

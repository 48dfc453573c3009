package io.fencer.core;

/** The server hit a bug; the message says what it reported. Please report it. */
public final class InternalException extends FencerException {
    private static final long serialVersionUID = 1L;

    public InternalException(String message) {
        super(message);
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.INTERNAL;
    }
}

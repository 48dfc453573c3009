package io.fencer.core;

import io.fencer.core.internal.ErrorFields;
/**
 * The base of Fencer's typed errors: expected operating errors, each with one {@link ErrorReason}.
 * Programmer errors are not of this type; they fail fast with the JDK's exceptions. {@link ErrorFields} takes
 * any of them apart into its fields and builds it back, to carry it over the wire or through a reply.
 */
public abstract class FencerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected FencerException(String message) {
        super(message);
    }

    protected FencerException(String message, Throwable cause) {
        super(message, cause);
    }

    /** Returns the catalogue reason of this error. */
    public abstract ErrorReason reason();
}

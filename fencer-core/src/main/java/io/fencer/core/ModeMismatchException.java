package io.fencer.core;

/**
 * A resource refused a write under a shared-mode token: shared holders of a read-write lock overlap, so a write by
 * one of them would not be exclusive. Fenced reads under the same token are accepted. Nothing was written and the
 * accepted token did not move.
 */
public final class ModeMismatchException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final String scope;
    private final long presented;
    private final LockMode mode;

    public ModeMismatchException(String scope, long presented, LockMode mode) {
        super("token " + scope + "#" + presented + " is a " + mode.text() + "-mode grant: scope '" + scope
                + "' refuses writes under it (only an exclusive grant may write; shared grants may read)");
        this.scope = scope;
        this.presented = presented;
        this.mode = mode;
    }

    public String scope() {
        return scope;
    }

    /** Returns the value of the refused token. */
    public long presented() {
        return presented;
    }

    /** Returns the refused token's mode, {@link LockMode#SHARED}. */
    public LockMode mode() {
        return mode;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.MODE_MISMATCH;
    }
}

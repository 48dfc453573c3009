package io.fencer.core;

/**
 * How a grant holds its lock: alone ({@link #EXCLUSIVE}, a mutex and a writer) or beside other shared holders
 * ({@link #SHARED}, a reader of a read-write lock).
 *
 * <p>Every grant, in either mode, takes a fresh token from the lock's one counter, so a shared grant after an
 * exclusive one carries a higher value, and an exclusive grant after readers one higher than all of them. A
 * resource accepts a fenced read under a token of either mode, compared as any token (refused once a higher token
 * was accepted); it refuses a write under a shared token with {@link ModeMismatchException}, because readers
 * overlap and a write by one of them would not be exclusive.
 */
public enum LockMode {
    /** The only holder of its lock: may write to the resource. */
    EXCLUSIVE,
    /** One of possibly many holders in shared mode: may read, never write. */
    SHARED;

    /** Returns the name used in sequencers and in the CLI: {@code exclusive} or {@code shared}. */
    public String text() {
        return this == EXCLUSIVE ? "exclusive" : "shared";
    }

    /**
     * Parses a mode's text, {@code exclusive} or {@code shared}.
     *
     * @throws InvalidArgumentException with field {@code mode} naming the text when it is neither
     */
    public static LockMode ofText(String text) {
        if ("exclusive".equals(text)) {
            return EXCLUSIVE;
        }
        if ("shared".equals(text)) {
            return SHARED;
        }
        throw new InvalidArgumentException("mode", text == null ? "" : text, "unknown lock mode '"
                + InvalidArgumentException.printable(text == null ? "" : text) + "': expected exclusive or shared");
    }
}

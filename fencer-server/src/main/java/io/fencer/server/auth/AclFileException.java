package io.fencer.server.auth;

/**
 * An ACL file that cannot be used: unreadable, over a limit, or with a malformed line. The message names the file,
 * the line (when one is at fault) and what is wrong with it.
 */
public final class AclFileException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int line;

    AclFileException(String message, int line, Throwable cause) {
        super(message, cause);
        this.line = line;
    }

    /** Returns the number (from 1) of the line at fault, or 0 when the file as a whole is. */
    public int line() {
        return line;
    }
}

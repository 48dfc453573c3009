package io.fencer.jdbc;

import io.fencer.core.FencingToken;
import java.sql.SQLException;

/**
 * A database failure of a fenced transaction: the unchecked wrapper of the {@link SQLException} (available as
 * {@link #getCause()}).
 *
 * <p>Thrown by {@link JdbcFence#run} for a failure before the commit (the check, the caller's work), the transaction
 * was rolled back: nothing of it committed. When the commit itself failed, {@link #outcomeUnknown()} is true and the
 * transaction may or may not have been committed: the COMMIT may have reached the database and committed, and only
 * its answer been lost (the connection dropped, a socket timeout, the server stopped after committing). Read back
 * whether its writes are there before retrying a write that is not idempotent (an insert, an increment), or it may
 * be applied twice.
 *
 * <p>Thrown for a statement in the caller's own transaction (as by a fence inside a Spring-managed transaction), it
 * says nothing of that transaction, which its owner rolls back or commits.
 */
public final class FencedSqlException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final boolean outcomeUnknown;

    public FencedSqlException(String message, SQLException cause) {
        this(message + ": " + describe(cause), cause, false);
    }

    private FencedSqlException(String message, SQLException cause, boolean outcomeUnknown) {
        super(message, cause);
        this.outcomeUnknown = outcomeUnknown;
    }

    /** The failure of the commit of {@code token}'s transaction, whose outcome the caller cannot know from it. */
    static FencedSqlException commitFailed(FencingToken token, SQLException cause) {
        return new FencedSqlException("the commit of the fenced transaction of " + token + " failed: "
                + describe(cause) + "; the transaction may or may not have been committed (the database may have"
                + " committed it and only its answer was lost): read back whether its writes are there before"
                + " retrying a write that is not idempotent", cause, true);
    }

    private static String describe(SQLException cause) {
        return cause.getMessage() + " (SQLState " + cause.getSQLState() + ")";
    }

    /**
     * Returns true when the failure was the commit's own, so that the transaction may or may not have been
     * committed (see the class comment); false when it failed before its commit and was rolled back.
     */
    public boolean outcomeUnknown() {
        return outcomeUnknown;
    }

    @Override
    public synchronized SQLException getCause() {
        return (SQLException) super.getCause();
    }
}

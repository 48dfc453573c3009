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
 * be applied twice. Unless the database answered the COMMIT with a refusal that rolls a transaction back, an
 * integrity constraint checked at commit (SQLState class 23: a deferred unique or foreign key) or a transaction
 * rollback (class 40: a serialization failure, a deadlock): that answer is the database's own, sent instead of
 * committing, so {@link #outcomeUnknown()} is false and nothing of the transaction committed (a serialization
 * failure is safe to retry as a whole).
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

    /**
     * The failure of the commit of {@code token}'s transaction: refused and rolled back when the database answered
     * with an integrity or transaction-rollback error ({@link #refusedAtCommit}), of unknown outcome otherwise.
     */
    static FencedSqlException commitFailed(FencingToken token, SQLException cause) {
        if (refusedAtCommit(cause)) {
            return new FencedSqlException("the database refused the commit of the fenced transaction of " + token
                    + ": " + describe(cause) + "; it rolled the transaction back, nothing of it committed", cause,
                    false);
        }
        return new FencedSqlException("the commit of the fenced transaction of " + token + " failed: "
                + describe(cause) + "; the transaction may or may not have been committed (the database may have"
                + " committed it and only its answer was lost): read back whether its writes are there before"
                + " retrying a write that is not idempotent", cause, true);
    }

    /**
     * True when a COMMIT's failure is the database's answer that it rolled the transaction back: SQLState class 23
     * (integrity constraint violation) or 40 (transaction rollback), as the server sent it. A lost answer is never
     * one of them: drivers report a broken connection or a timeout as class 08 or with no SQLState. Nor can such an
     * error follow a commit: PostgreSQL checks deferred constraints and serializability before it writes the commit
     * record and turns an error after it into a PANIC (it cannot abort a committed transaction), which reaches the
     * client as a broken connection; MariaDB reports an error while committing (ER_ERROR_DURING_COMMIT) as HY000.
     */
    static boolean refusedAtCommit(SQLException cause) {
        String state = cause.getSQLState();
        return state != null && (state.startsWith("23") || state.startsWith("40"));
    }

    private static String describe(SQLException cause) {
        return cause.getMessage() + " (SQLState " + cause.getSQLState() + ")";
    }

    /**
     * Returns true when the failure was the commit's own, so that the transaction may or may not have been
     * committed (see the class comment); false when it failed before its commit, or the database refused the commit,
     * and was rolled back.
     */
    public boolean outcomeUnknown() {
        return outcomeUnknown;
    }

    @Override
    public synchronized SQLException getCause() {
        return (SQLException) super.getCause();
    }
}

package io.fencer.jdbc;

import java.sql.SQLException;

/**
 * A database failure during a fenced transaction run by {@link JdbcFence#run}: the unchecked wrapper of the
 * {@link SQLException} (available as {@link #getCause()}). The transaction was rolled back.
 */
public final class FencedSqlException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public FencedSqlException(String message, SQLException cause) {
        super(message + ": " + cause.getMessage() + " (SQLState " + cause.getSQLState() + ")", cause);
    }

    @Override
    public synchronized SQLException getCause() {
        return (SQLException) super.getCause();
    }
}

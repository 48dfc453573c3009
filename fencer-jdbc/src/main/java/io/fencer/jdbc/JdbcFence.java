package io.fencer.jdbc;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;

/**
 * A fence kept inside the user's own SQL database: one row per scope holding the highest accepted token, checked
 * and advanced in the same transaction as the caller's writes.
 *
 * <p>Why in the same transaction: the token check and the write must be one atomic step, or a stale write can land
 * between them. The check takes the scope row's write lock, which the database holds until commit, so a concurrent
 * check of the same scope waits, then re-reads the committed token and is refused if it was passed; the accepted token
 * is as durable as the data it guards.
 *
 * <p>How, on databases with row locks (PostgreSQL, MySQL, H2): the check locks the scope's row and reads its
 * token ({@code SELECT ... FOR NO KEY UPDATE} on PostgreSQL, {@code FOR UPDATE} elsewhere). The common case, the
 * holder of a grant writing again with the token already accepted, is then admitted with the lock held and writes
 * nothing: no new row version, less WAL. A higher token raises the row with an {@code UPDATE} under the lock the
 * check already holds; a lower one is refused. Only a scope without a row takes the insert path, which cannot
 * overwrite a concurrently inserted higher token. On SQLite, which locks the whole database on its first write,
 * the check is one conditional upsert. On every dialect {@code updated_at} records when the scope's accepted
 * token last changed, not when it was last checked.
 *
 * <pre>{@code
 * JdbcFence fence = new JdbcFence(Dialect.POSTGRESQL);
 * fence.run(dataSource, token, connection -> { ...caller's writes... ; return null; });
 * // or, in a transaction of the caller's whose first write is one statement (one round trip on PostgreSQL):
 * fence.executeUpdate(connection, token, "UPDATE accounts SET balance = ? WHERE id = ?", 150L, 17L);
 * }</pre>
 *
 * <p>A scope is a lock name: {@link #check(Connection, FencingToken)} uses the token's lock as the scope.
 * Thread-safe and stateless beyond its configuration.
 *
 * <p>Isolation: designed for READ COMMITTED, the default of PostgreSQL. Under REPEATABLE READ or SERIALIZABLE a
 * contended scope may fail with the database's serialization error instead of a clean {@link StaleTokenException};
 * the fence still holds (nothing stale commits), and the caller retries as for any serialization failure. MySQL and
 * MariaDB are the exception: their default is REPEATABLE READ, where two transactions fencing a new scope deadlock
 * on InnoDB's gap locks, so with {@link Dialect#MYSQL} the check requires READ COMMITTED and throws
 * {@link IllegalStateException} at any other level. Set it for every connection in the JDBC URL
 * ({@code transactionIsolation=READ_COMMITTED} with MariaDB Connector/J), in the connection pool's settings, or
 * with {@link Connection#setTransactionIsolation(int)} before the transaction begins: then the driver knows the
 * level, where with only the server's {@code transaction-isolation = READ-COMMITTED} it may ask the server on
 * every check, one more round trip.
 */
public final class JdbcFence {
    /** The default fence table name. */
    public static final String TABLE_DEFAULT = "fencer_fence";
    /** SQLState class of integrity constraint violations (duplicate key). */
    private static final String INTEGRITY_VIOLATION_CLASS = "23";
    private static final System.Logger LOG = System.getLogger(JdbcFence.class.getName());

    private final Dialect dialect;
    private final String table;
    private final FencePolicy policy;
    private final String insertIfAbsentSql;
    private final String lockSql; // null when the dialect has no row locks
    private final String admitSql;
    private final String admitUpsertSql; // null when the dialect has no conditional upsert
    private final String acceptedSql;
    private final RefusalCounter refusals;

    /** Creates a fence on table {@value #TABLE_DEFAULT} with policy {@link FencePolicy#AT_LEAST}. */
    public JdbcFence(Dialect dialect) {
        this(dialect, TABLE_DEFAULT, FencePolicy.AT_LEAST);
    }

    /**
     * Creates a fence.
     *
     * @param table a plain SQL identifier ({@code [A-Za-z_][A-Za-z0-9_]*}, at most 63 characters)
     * @throws IllegalArgumentException when the table name is not a plain identifier
     */
    public JdbcFence(Dialect dialect, String table, FencePolicy policy) {
        this(dialect, table, policy, new RefusalCounter(null, "jdbc"));
    }

    /**
     * Creates a fence that counts its refusals into {@code registry} as {@code fencer_adapter_refusals_total{
     * adapter="jdbc", scope, reason}} ({@code stale_token}, {@code scope_mismatch}, {@code mode_mismatch}), scope
     * being the fence scope (the lock name): the first 1,000 scopes refused keep a series each, later ones count as
     * {@code scope="_other"}.
     *
     * @param table a plain SQL identifier ({@code [A-Za-z_][A-Za-z0-9_]*}, at most 63 characters)
     * @throws IllegalArgumentException when the table name is not a plain identifier
     */
    public JdbcFence(Dialect dialect, String table, FencePolicy policy, MeterRegistry registry) {
        this(dialect, table, policy, new RefusalCounter(Objects.requireNonNull(registry, "registry"), "jdbc"));
    }

    private JdbcFence(Dialect dialect, String table, FencePolicy policy, RefusalCounter refusals) {
        this.refusals = refusals;
        this.dialect = Objects.requireNonNull(dialect, "dialect");
        this.table = SqlIdentifiers.check("fence table", table);
        this.policy = Objects.requireNonNull(policy, "policy");
        this.insertIfAbsentSql = dialect.insertIfAbsentSql(table);
        this.lockSql = dialect.lockSql(table);
        String admits = policy == FencePolicy.STRICT ? "token < ?" : "token <= ?";
        this.admitUpsertSql = dialect.admitUpsertSql(table, policy == FencePolicy.STRICT ? "<" : "<=");
        // updated_at first: MySQL evaluates assignments left to right, so it must compare the token not yet set.
        this.admitSql = "UPDATE " + table + " SET updated_at = CASE WHEN token = ? THEN updated_at"
                + " ELSE CURRENT_TIMESTAMP END, token = ? WHERE scope = ? AND " + admits;
        this.acceptedSql = "SELECT token FROM " + table + " WHERE scope = ?";
    }

    public Dialect dialect() {
        return dialect;
    }

    public String table() {
        return table;
    }

    public FencePolicy policy() {
        return policy;
    }

    /**
     * Creates the fence table when absent: {@code scope VARCHAR(256) PRIMARY KEY, token BIGINT NOT NULL,
     * updated_at TIMESTAMP}, where {@code updated_at} is when the scope's accepted token last changed (a check
     * that admits the already accepted token leaves the row as it is). On MySQL and MariaDB the scope is
     * {@code VARBINARY(256)}, so that names differing only in case, accents or trailing spaces stay distinct
     * scopes; a table created as {@code VARCHAR} by an earlier version is left as it is. Leaves the connection's
     * commit mode alone: with autoCommit off, the caller commits.
     */
    public void createTable(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            String scopeType = dialect.scopeType(LockNames.BYTES_MAX);
            statement.execute("CREATE TABLE IF NOT EXISTS " + table + " (scope " + scopeType
                    + " PRIMARY KEY, token BIGINT NOT NULL, updated_at TIMESTAMP)");
        }
    }

    /**
     * Admits {@code token} in scope {@code token.lock()} inside the caller's open transaction, or refuses it.
     * Call it BEFORE the transaction's writes; on success the scope row stays locked until commit or rollback.
     *
     * @throws IllegalStateException when the connection is in autoCommit mode: the check would be its own
     *     transaction and guard nothing; or, with {@link Dialect#MYSQL}, when its isolation level is not READ
     *     COMMITTED (see the class comment)
     * @throws StaleTokenException when the scope has accepted a newer token (for AT_LEAST) or the same or newer
     *     (for STRICT); the transaction has been rolled back, so nothing written in it earlier can be committed
     * @throws ModeMismatchException when {@code token} is a shared-mode grant, which may read
     *     ({@link #checkRead}) but not write; the transaction has been rolled back as for a stale token
     */
    public void check(Connection connection, FencingToken token) throws SQLException {
        Objects.requireNonNull(token, "token");
        requireExclusive(connection, token.lock(), token);
        admit(connection, token.lock(), token.value());
    }

    /**
     * Checks {@code token} for a fenced read inside the caller's transaction, without locking or raising the
     * scope's row: refused when the scope has accepted a higher token. A token of either mode may read; a
     * shared-mode token (a reader of a read-write lock) is compared as any token, so a reader is refused once a
     * later exclusive grant has written. Nothing is rolled back: a read wrote nothing.
     *
     * @throws StaleTokenException when the scope's accepted token is above {@code token}
     */
    public void checkRead(Connection connection, FencingToken token) throws SQLException {
        Objects.requireNonNull(token, "token");
        long accepted = accepted(connection, token.lock());
        if (token.value() < accepted) {
            throw refusals.refused(token.lock(), new StaleTokenException(token.lock(), token.value(), accepted,
                    policy));
        }
    }

    /**
     * Refuses a shared-mode token before anything is written under it, rolling the transaction back as every
     * refusal does: shared holders overlap, so none of them may write.
     */
    private void requireExclusive(Connection connection, String scope, FencingToken token)
            throws SQLException {
        if (token.mode() != LockMode.EXCLUSIVE) {
            ModeMismatchException refusal = refusals.refused(scope,
                    new ModeMismatchException(scope, token.value(), token.mode()));
            rollbackQuietly(connection, refusal);
            throw refusal;
        }
    }

    /**
     * As {@link #check(Connection, FencingToken)} for a token in wire form.
     *
     * @throws io.fencer.core.InvalidArgumentException when the sequencer is malformed
     */
    public void check(Connection connection, String sequencer) throws SQLException {
        check(connection, Sequencer.parse(sequencer));
    }

    /**
     * As {@link #check(Connection, FencingToken)} for a caller whose scope is bound to one lock.
     *
     * @throws ScopeMismatchException when {@code token} belongs to another lock than {@code scope}; nothing is
     *     compared or changed
     */
    public void check(Connection connection, String scope, FencingToken token) throws SQLException {
        LockNames.check("scope", scope);
        Objects.requireNonNull(token, "token");
        if (!scope.equals(token.lock())) {
            throw refusals.refused(scope, new ScopeMismatchException(scope, token));
        }
        requireExclusive(connection, scope, token);
        admit(connection, scope, token.value());
    }

    /** Returns the scope's accepted token value, or {@link FencingToken#NONE} when it has none. */
    public long accepted(Connection connection, String scope) throws SQLException {
        LockNames.check("scope", scope);
        try (PreparedStatement select = connection.prepareStatement(acceptedSql)) {
            select.setString(1, scope);
            try (ResultSet rows = select.executeQuery()) {
                return rows.next() ? rows.getLong(1) : FencingToken.NONE;
            }
        }
    }

    /**
     * Runs {@code work} in one fenced transaction: opens a connection, turns autoCommit off, checks
     * {@code token}, runs {@code work}, commits. On an exception before the commit it rolls back and rethrows:
     * {@link StaleTokenException} and other unchecked exceptions as they are, a {@link SQLException} wrapped in
     * {@link FencedSqlException}. Always restores autoCommit and closes the connection. Once the commit has
     * succeeded, it returns {@code work}'s result even if restoring autoCommit or closing the connection then fails
     * (a connection dropped right after the commit's answer): the transaction committed, and that failure is logged
     * as a warning, not thrown.
     *
     * @throws FencedSqlException with {@link FencedSqlException#outcomeUnknown()} true when the commit itself
     *     failed: the transaction may or may not have been committed (its answer may be what was lost), so read
     *     back before retrying a write that is not idempotent; false when the database refused the commit with an
     *     integrity or transaction-rollback error (SQLState class 23 or 40) and rolled the transaction back
     */
    public <T> T run(DataSource dataSource, FencingToken token, Work<T> work) {
        Objects.requireNonNull(work, "work");
        Connection connection;
        boolean autoCommit;
        T result;
        try {
            connection = dataSource.getConnection();
            try {
                autoCommit = connection.getAutoCommit();
                connection.setAutoCommit(false);
                result = commitFenced(connection, autoCommit, token, work);
            } catch (Throwable failure) {
                closeAfterFailure(connection, failure);
                throw failure;
            }
        } catch (SQLException e) {
            throw new FencedSqlException("fenced transaction of " + token + " failed", e);
        }
        endCommitted(connection, autoCommit, token);
        return result;
    }

    /**
     * Checks {@code token}, runs {@code work} and commits, returning its result; on a failure before or at the
     * commit, rolls back and restores autoCommit ({@link #endFailed}) and rethrows, a failed commit as a
     * {@link FencedSqlException} whose outcome is unknown. The caller closes the connection.
     */
    private <T> T commitFenced(Connection connection, boolean autoCommit, FencingToken token, Work<T> work)
            throws SQLException {
        T result;
        try {
            check(connection, token);
            result = work.run(connection);
        } catch (Throwable failure) {
            endFailed(connection, autoCommit, failure);
            throw failure;
        }
        try {
            connection.commit();
        } catch (Throwable commitFailure) {
            endFailed(connection, autoCommit, commitFailure);
            if (commitFailure instanceof SQLException sqlFailure) {
                // Not "rolled back" unless the database said so: the COMMIT may have committed, its answer lost.
                throw FencedSqlException.commitFailed(token, sqlFailure);
            }
            throw commitFailure;
        }
        return result;
    }

    /**
     * Restores autoCommit and closes the connection of a committed transaction, and logs, not throws, their
     * failure: thrown, it would read as the transaction's (FencedSqlException without outcomeUnknown: rolled back),
     * and a caller retrying a committed write would apply it twice. The caller's result stands. The connection is
     * then the pool's or driver's to mend or discard (a pool resets autoCommit on return and evicts a broken
     * connection; a plain one is closed or lost with its socket). Logged, not dropped, because a pool whose close
     * fails may be leaking connections; System.Logger is the JDK's, so this costs the adapter no dependency.
     */
    private static void endCommitted(Connection connection, boolean autoCommit, FencingToken token) {
        Exception failure = null;
        try {
            connection.setAutoCommit(autoCommit);
        } catch (SQLException | RuntimeException restoreFailure) {
            failure = restoreFailure;
        }
        try {
            connection.close(); // even after a failed restore: a pooled connection must go back to its pool
        } catch (SQLException | RuntimeException closeFailure) {
            if (failure == null) {
                failure = closeFailure;
            } else {
                failure.addSuppressed(closeFailure);
            }
        }
        if (failure != null) {
            LOG.log(System.Logger.Level.WARNING, "the fenced transaction of " + token + " committed, but restoring"
                    + " autoCommit or closing its connection failed afterwards; the transaction's result stands",
                    failure);
        }
    }

    /** Closes the connection of a failed run; a failure to close joins {@code failure} as suppressed. */
    private static void closeAfterFailure(Connection connection, Throwable failure) {
        try {
            connection.close();
        } catch (SQLException | RuntimeException closeFailure) {
            failure.addSuppressed(closeFailure);
        }
    }

    /** The caller's writes of one fenced transaction, run by {@link #run} after the check. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    /**
     * Runs one write statement fenced by {@code token} in the caller's open transaction, the check first, and
     * returns the statement's update count: {@link #check(Connection, FencingToken)} followed by
     * {@code sql} with {@code parameters} bound to its {@code ?} placeholders in order (by
     * {@link PreparedStatement#setObject(int, Object)}).
     *
     * <p>Why: a check of its own is a round trip of its own, and on a small transaction the round trip is most of
     * what the fence costs. On PostgreSQL the row-lock query and {@code sql} go to the server as one pipelined
     * message and run in that order, so the scope's row is locked before the write runs, and the token is judged
     * from the answer. Nothing commits before the caller commits: a refused token rolls the transaction back,
     * write included, and a token that raises the scope costs one more statement, as with {@code check}. Other
     * dialects run the check, then {@code sql}.
     *
     * <p>Two differences from {@code check} then a write, both on PostgreSQL only: when the write itself fails
     * (a constraint, a syntax error), its {@link SQLException} is reported even if the token was also stale, and
     * the caller rolls back as for any failed statement; and on a scope's first use, which has no row to lock
     * yet, the fence row is inserted after the write, still in the same transaction. Writes racing on that first
     * use are ordered by the row's insert: their commits stay in token order, but values their statements draw
     * (a sequence, an identity column) may interleave across tokens.
     *
     * @param sql one statement that returns no rows ({@code INSERT}, {@code UPDATE}, {@code DELETE}); it may not
     *     contain {@code ;}, so it cannot smuggle a second statement past the count
     * @throws IllegalArgumentException when {@code sql} contains {@code ;}
     * @throws IllegalStateException when the connection is in autoCommit mode, or at an isolation level the dialect
     *     refuses (as for {@code check})
     * @throws StaleTokenException when the scope has accepted a newer token; the transaction has been rolled back
     * @throws SQLException when the write fails or returns rows; the caller rolls back
     */
    public int executeUpdate(Connection connection, FencingToken token, String sql, Object... parameters)
            throws SQLException {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(sql, "sql");
        Objects.requireNonNull(parameters, "parameters");
        if (sql.indexOf(';') >= 0) {
            throw new IllegalArgumentException("fenced statement must be one statement without ';': " + sql);
        }
        requireExclusive(connection, token.lock(), token);
        if (!dialect.pipelinesStatements() || lockSql == null) {
            check(connection, token);
            try (PreparedStatement write = connection.prepareStatement(sql)) {
                bind(write, 1, parameters);
                return write.executeUpdate();
            }
        }
        requireTransaction(connection, token.lock());
        return pipelinedUpdate(connection, token.lock(), token.value(), sql, parameters);
    }

    /** Sends the row-lock query and the write as one message, then judges the token from the query's answer. */
    private int pipelinedUpdate(Connection connection, String scope, long presented, String sql, Object[] parameters)
            throws SQLException {
        try (PreparedStatement pipelined = connection.prepareStatement(lockSql + "; " + sql)) {
            pipelined.setString(1, scope);
            bind(pipelined, 2, parameters);
            pipelined.execute();
            OptionalLong locked;
            try (ResultSet rows = pipelined.getResultSet()) {
                locked = lockedToken(rows, scope);
            }
            boolean returnedRows = pipelined.getMoreResults();
            int updated = returnedRows ? -1 : pipelined.getUpdateCount();
            // The token first, even for a misused statement: a stale one rolls its write back, as every refusal does,
            // where the rows' error alone would leave that write in a transaction the caller might still commit.
            decide(connection, scope, presented, locked);
            if (returnedRows) {
                throw new SQLException("fenced statement returned rows, where a write was expected: " + sql);
            }
            return updated;
        }
    }

    private static void bind(PreparedStatement statement, int first, Object[] parameters) throws SQLException {
        for (int i = 0; i < parameters.length; i++) {
            statement.setObject(first + i, parameters[i]);
        }
    }

    private void admit(Connection connection, String scope, long presented) throws SQLException {
        requireTransaction(connection, scope);
        requireIsolation(connection, scope);
        decide(connection, scope, presented, lockSql != null ? lockRow(connection, scope) : OptionalLong.empty());
    }

    private static void requireTransaction(Connection connection, String scope) throws SQLException {
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("fence check of scope '" + scope + "' needs a transaction: the"
                    + " connection is in autoCommit mode, so the check could not guard the writes");
        }
    }

    private void requireIsolation(Connection connection, String scope) throws SQLException {
        int required = dialect.isolationRequired();
        if (required == Connection.TRANSACTION_NONE) {
            return;
        }
        int isolation = connection.getTransactionIsolation();
        if (isolation != required) {
            throw new IllegalStateException("fence check of scope '" + scope + "' with dialect " + dialect
                    + " needs isolation " + isolationName(required) + ", the connection is at "
                    + isolationName(isolation) + " (where transactions fencing a new scope deadlock on gap locks):"
                    + " set transactionIsolation=READ_COMMITTED in the JDBC URL (MariaDB Connector/J) or the pool, or"
                    + " call setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED) before the transaction");
        }
    }

    private static String isolationName(int isolation) {
        return switch (isolation) {
            case Connection.TRANSACTION_READ_UNCOMMITTED -> "READ UNCOMMITTED";
            case Connection.TRANSACTION_READ_COMMITTED -> "READ COMMITTED";
            case Connection.TRANSACTION_REPEATABLE_READ -> "REPEATABLE READ";
            case Connection.TRANSACTION_SERIALIZABLE -> "SERIALIZABLE";
            default -> "isolation level " + isolation;
        };
    }

    /**
     * Admits, raises or refuses {@code presented} given the token of the scope's row this transaction has locked,
     * or takes the race-free insert path when the scope had no row to lock.
     */
    private void decide(Connection connection, String scope, long presented, OptionalLong locked)
            throws SQLException {
        if (locked.isEmpty()) {
            insertOrAdmit(connection, scope, presented);
            return;
        }
        long accepted = locked.getAsLong();
        if (!policy.admits(presented, accepted)) {
            throw refusal(connection, scope, presented, accepted);
        }
        if (presented != accepted) {
            raise(connection, scope, presented, accepted);
        }
        // Otherwise the token is the accepted one (AT_LEAST): the row lock alone keeps any higher token waiting
        // until this transaction ends, and writing the same token again would only cost a row version.
    }

    /**
     * Locks the scope's row until the transaction ends and returns its token, or empty when the scope has no row
     * (nothing is locked then).
     */
    private OptionalLong lockRow(Connection connection, String scope) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement(lockSql)) {
            select.setString(1, scope);
            try (ResultSet rows = select.executeQuery()) {
                return lockedToken(rows, scope);
            }
        }
    }

    /** Reads the token from the rows of {@link #lockSql}: empty when the scope has no row. */
    private OptionalLong lockedToken(ResultSet rows, String scope) throws SQLException {
        if (!rows.next()) {
            return OptionalLong.empty();
        }
        long accepted = rows.getLong(1);
        if (rows.next()) {
            throw new IllegalStateException("fence table " + table + " has several rows of scope '" + scope
                    + "'; it lacks its primary key on scope");
        }
        return OptionalLong.of(accepted);
    }

    /** Raises the token of the scope's row, which this transaction has locked with {@code accepted} in it. */
    private void raise(Connection connection, String scope, long presented, long accepted) throws SQLException {
        assert presented > accepted : "raise from " + accepted + " to " + presented;
        int updated = update(connection, scope, presented);
        if (updated != 1) {
            // The row was locked by this transaction and admitted the token: nothing else could have changed it.
            throw new IllegalStateException("fence update of scope '" + scope + "' from locked token " + accepted
                    + " to " + presented + " changed " + updated + " rows");
        }
    }

    /** The path of a scope without a row, and of dialects without row locks: the race-free insert. */
    private void insertOrAdmit(Connection connection, String scope, long presented) throws SQLException {
        int updated = admitUpsertSql != null ? upsert(connection, scope, presented)
                : insertThenUpdate(connection, scope, presented);
        if (updated == 1) {
            return;
        }
        if (updated != 0) {
            throw new IllegalStateException("fence update of scope '" + scope + "' changed " + updated
                    + " rows; table " + table + " lacks its primary key on scope");
        }
        throw refusal(connection, scope, presented, accepted(connection, scope));
    }

    /** Rolls the transaction back, so nothing it wrote before the check can commit, and returns the refusal. */
    private StaleTokenException refusal(Connection connection, String scope, long presented, long accepted)
            throws SQLException {
        connection.rollback();
        return refusals.refused(scope, new StaleTokenException(scope, presented, accepted, policy));
    }

    private int upsert(Connection connection, String scope, long presented) throws SQLException {
        try (PreparedStatement upsert = connection.prepareStatement(admitUpsertSql)) {
            upsert.setString(1, scope);
            upsert.setLong(2, presented);
            return upsert.executeUpdate();
        }
    }

    private int insertThenUpdate(Connection connection, String scope, long presented) throws SQLException {
        insertIfAbsent(connection, scope);
        return update(connection, scope, presented);
    }

    /** Runs the conditional update that sets the scope's token when the stored one admits it. */
    private int update(Connection connection, String scope, long presented) throws SQLException {
        try (PreparedStatement update = connection.prepareStatement(admitSql)) {
            update.setLong(1, presented);
            update.setLong(2, presented);
            update.setString(3, scope);
            update.setLong(4, presented);
            return update.executeUpdate();
        }
    }

    private void insertIfAbsent(Connection connection, String scope) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement(insertIfAbsentSql)) {
            insert.setString(1, scope);
            insert.executeUpdate();
        } catch (SQLException e) {
            String state = e.getSQLState();
            boolean duplicate = state != null && state.startsWith(INTEGRITY_VIOLATION_CLASS);
            if (!(dialect.ignoresDuplicateKey() && duplicate)) {
                throw e;
            }
            // A concurrent transaction inserted the row first; the conditional update below decides.
        }
    }

    /**
     * Rolls back and restores autoCommit after {@code failure}, which stays the error thrown: their own failures,
     * likely when the connection is gone, join it as suppressed. After a failed commit the rollback is not for a
     * COMMIT the database received (that ended the transaction, committed or not) but for one that never left the
     * driver: restoring autoCommit on a connection still in its transaction would commit it.
     */
    private static void endFailed(Connection connection, boolean autoCommit, Throwable failure) {
        rollbackQuietly(connection, failure);
        try {
            connection.setAutoCommit(autoCommit);
        } catch (SQLException restoreFailure) {
            failure.addSuppressed(restoreFailure);
        }
    }

    private static void rollbackQuietly(Connection connection, Throwable failure) {
        try {
            connection.rollback();
        } catch (SQLException rollbackFailure) {
            failure.addSuppressed(rollbackFailure);
        }
    }
}

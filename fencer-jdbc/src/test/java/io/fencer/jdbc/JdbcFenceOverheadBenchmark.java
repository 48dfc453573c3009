package io.fencer.jdbc;

import io.fencer.core.FencingToken;
import io.fencer.testing.FreePorts;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;

/**
 * Measures what the fence costs on a real PostgreSQL: 32 threads commit the same insert transactions without the
 * fence, with {@link JdbcFence#check} then the insert, and with {@link JdbcFence#executeUpdate} (check and insert
 * in one round trip), in alternating rounds of one run, and prints each fenced form's overhead.
 * Not a test (it asserts nothing and takes a minute); run it by hand:
 *
 * <pre>
 * ./mvnw -B -q -pl fencer-jdbc -am test-compile -DskipTests
 * java -cp "$(cat fencer-jdbc/target/classpath.txt)" io.fencer.jdbc.JdbcFenceOverheadBenchmark
 * </pre>
 *
 * (write the class path with {@code ./mvnw -q -pl fencer-jdbc dependency:build-classpath
 * -Dmdep.outputFile=target/classpath.txt} and append the module's {@code target/classes} and
 * {@code target/test-classes}).
 * Each thread fences its own scope (one lock per resource, the recommended shape); {@code --one-scope} makes all
 * threads share one scope, which serializes them on its row lock by design.
 */
public final class JdbcFenceOverheadBenchmark {
    private static final int THREADS = 32;
    private static final long ROUND_NANOS = 5_000_000_000L;
    private static final int ROUNDS = 3;
    private static final String INSERT_SQL = "INSERT INTO orders (thread, total) VALUES (?, ?)";
    private static final long TOTAL = 4200;

    private JdbcFenceOverheadBenchmark() {}

    public static void main(String[] arguments) throws Exception {
        boolean oneScope = List.of(arguments).contains("--one-scope");
        try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setPort(FreePorts.one()).start()) {
            DataSource dataSource = postgres.getPostgresDatabase();
            JdbcFence fence = new JdbcFence(Dialect.POSTGRESQL);
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement()) {
                fence.createTable(connection);
                statement.execute("CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, thread INT, total BIGINT)");
            }
            double[] perSecond = new double[Mode.values().length];
            for (Mode mode : Mode.values()) {
                round(dataSource, fence, mode, oneScope); // warm-up of every path
            }
            for (int i = 0; i < ROUNDS; i++) {
                for (Mode mode : Mode.values()) {
                    perSecond[mode.ordinal()] += round(dataSource, fence, mode, oneScope) / ROUNDS;
                }
            }
            double unfenced = perSecond[Mode.UNFENCED.ordinal()];
            System.out.printf("PostgreSQL, %d threads, %s: unfenced %.0f tx/s%n", THREADS,
                    oneScope ? "one scope" : "one scope per thread", unfenced);
            for (Mode mode : List.of(Mode.CHECK_THEN_INSERT, Mode.EXECUTE_UPDATE)) {
                double fenced = perSecond[mode.ordinal()];
                System.out.printf("  %-17s %.0f tx/s, overhead %.1f%%%n", mode, fenced,
                        100.0 * (unfenced - fenced) / unfenced);
            }
        }
    }

    /** How one transaction writes its insert. */
    private enum Mode {
        UNFENCED,
        /** {@link JdbcFence#check}, then the insert: two round trips before the commit. */
        CHECK_THEN_INSERT,
        /** {@link JdbcFence#executeUpdate}: the check and the insert in one round trip. */
        EXECUTE_UPDATE
    }

    /** Runs THREADS threads for one round and returns committed transactions per second. */
    private static double round(DataSource dataSource, JdbcFence fence, Mode mode, boolean oneScope)
            throws InterruptedException {
        LongAdder commits = new LongAdder();
        long end = System.nanoTime() + ROUND_NANOS;
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int thread = t;
            FencingToken token = new FencingToken(oneScope ? "orders" : "orders-" + t, 1);
            Thread worker = new Thread(() -> {
                // One connection per thread, as a pool would hand out: the figure is the transaction, not the connect.
                try (Connection connection = dataSource.getConnection()) {
                    connection.setAutoCommit(false);
                    while (System.nanoTime() < end) {
                        switch (mode) {
                            case UNFENCED -> insert(connection, thread);
                            case CHECK_THEN_INSERT -> {
                                fence.check(connection, token);
                                insert(connection, thread);
                            }
                            case EXECUTE_UPDATE -> fence.executeUpdate(connection, token, INSERT_SQL, thread, TOTAL);
                        }
                        connection.commit();
                        commits.increment();
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            threads.add(worker);
            worker.start();
        }
        for (Thread worker : threads) {
            worker.join();
        }
        return commits.sum() / (ROUND_NANOS / 1e9);
    }

    private static int insert(Connection connection, int thread) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement(INSERT_SQL)) {
            insert.setInt(1, thread);
            insert.setLong(2, TOTAL);
            return insert.executeUpdate();
        }
    }
}

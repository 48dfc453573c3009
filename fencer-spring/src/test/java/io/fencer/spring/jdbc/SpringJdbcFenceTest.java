package io.fencer.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.jdbc.Dialect;
import io.fencer.jdbc.JdbcFence;
import io.fencer.spring.FencerAutoConfiguration;
import io.fencer.spring.FencerMetrics;
import io.fencer.testing.FreePorts;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.JdbcTemplateAutoConfiguration;
import org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link SpringJdbcFence} in a real Spring context on real PostgreSQL: the check runs on the Spring transaction's
 * own connection, so a refused token rolls back what the transaction wrote, even a write its caller makes after
 * catching the refusal.
 */
class SpringJdbcFenceTest {
    @TempDir
    static Path directory;
    private static EmbeddedPostgres postgres;

    private final AtomicInteger refusals = new AtomicInteger();
    private final ApplicationContextRunner contexts = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
                    TransactionAutoConfiguration.class, FencerAutoConfiguration.class))
            .withBean(FencerMetrics.class, () -> new FencerMetrics() {
                @Override
                public void staleRefused() {
                    refusals.incrementAndGet();
                }
            })
            .withPropertyValues("fencer.jdbc.create-table=true");

    @BeforeAll
    static void startPostgres() throws IOException {
        postgres = EmbeddedPostgres.builder().setDataDirectory(directory.resolve("postgres")).setPort(FreePorts.one())
                .setCleanDataDirectory(true).start();
    }

    @AfterAll
    static void stopPostgres() throws IOException {
        postgres.close();
    }

    @BeforeEach
    void freshTables() {
        JdbcTemplate jdbc = new JdbcTemplate(postgres.getPostgresDatabase());
        jdbc.execute("DROP TABLE IF EXISTS ledger");
        jdbc.execute("DROP TABLE IF EXISTS fencer_fence");
        jdbc.execute("CREATE TABLE ledger (entry TEXT NOT NULL)");
    }

    private ApplicationContextRunner onPostgres() {
        return contexts.withPropertyValues("spring.datasource.url=" + postgres.getJdbcUrl("postgres", "postgres"));
    }

    @Test
    void springJdbcFence_autoConfigured_detectsPostgresAndCreatesItsTable() {
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            assertThat(fence.fence().dialect()).isEqualTo(Dialect.POSTGRESQL);
            assertThat(fence.fence().table()).isEqualTo(JdbcFence.TABLE_DEFAULT);
            assertThat(new JdbcTemplate(postgres.getPostgresDatabase()).queryForObject(
                    "SELECT count(*) FROM fencer_fence", Integer.class)).isZero();
        });
    }

    @Test
    void check_newerThenOlderToken_commitsTheNewerAndRollsBackTheOlder() {
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
            JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);

            transactions.executeWithoutResult(status -> {
                fence.check(new FencingToken("ledger", 34));
                jdbc.update("INSERT INTO ledger VALUES ('by #34')");
            });
            Throwable refused = catchThrowable(() -> transactions.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO ledger VALUES ('by #33, before its check')");
                fence.check(new FencingToken("ledger", 33));
                jdbc.update("INSERT INTO ledger VALUES ('by #33')");
            }));

            assertThat(refused).isInstanceOf(StaleTokenException.class);
            assertThat(((StaleTokenException) refused).accepted()).isEqualTo(34);
            assertThat(entries()).containsExactly("by #34");
            assertThat(refusals).hasValue(1);
        });
    }

    @Test
    void check_refusalCaughtByTheCaller_transactionStillCannotCommit() {
        // Regression: a caller that catches the refusal and writes on must not commit those writes; the fence's
        // own rollback alone leaves the connection open to a fresh transaction that Spring would commit.
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
            JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
            transactions.executeWithoutResult(status -> fence.check(new FencingToken("ledger", 34)));

            Throwable commit = catchThrowable(() -> transactions.executeWithoutResult(status -> {
                Throwable swallowed = catchThrowable(() -> fence.check(new FencingToken("ledger", 33)));
                assertThat(swallowed).isInstanceOf(StaleTokenException.class);
                jdbc.update("INSERT INTO ledger VALUES ('by #33 after its refusal')");
            }));

            assertThat(commit).as("the commit of the refused transaction fails").isNotNull();
            assertThat(entries()).isEmpty();
        });
    }

    @Test
    void jdbcFenceAlone_refusalCaughtByTheCaller_letsLaterWritesCommit() {
        // The control of the regression above: the plain fence on the same Spring transaction's connection.
        onPostgres().run(context -> {
            DataSource dataSource = context.getBean(DataSource.class);
            JdbcFence plain = context.getBean(SpringJdbcFence.class).fence();
            TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
            JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
            transactions.executeWithoutResult(status -> check(plain, dataSource, 34));

            transactions.executeWithoutResult(status -> {
                assertThat(catchThrowable(() -> check(plain, dataSource, 33))).isInstanceOf(StaleTokenException.class);
                jdbc.update("INSERT INTO ledger VALUES ('by #33 after its refusal')");
            });

            assertThat(entries()).as("the hole is real").containsExactly("by #33 after its refusal");
        });
    }

    @Test
    void executeUpdate_staleToken_rollsBackItsOwnWrite() {
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
            transactions.executeWithoutResult(status ->
                    fence.executeUpdate(new FencingToken("ledger", 34), "INSERT INTO ledger VALUES (?)", "by #34"));

            Throwable refused = catchThrowable(() -> transactions.executeWithoutResult(status ->
                    fence.executeUpdate(new FencingToken("ledger", 33), "INSERT INTO ledger VALUES (?)", "by #33")));

            assertThat(refused).isInstanceOf(StaleTokenException.class);
            assertThat(entries()).containsExactly("by #34");
        });
    }

    @Test
    void check_outsideATransaction_isRefusedAsGuardingNothing() {
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            assertThatThrownBy(() -> fence.check(new FencingToken("ledger", 1)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("Spring-managed transaction");
        });
    }

    @Test
    void checkCurrentJob_outsideAJob_isRefused() {
        onPostgres().run(context -> {
            SpringJdbcFence fence = context.getBean(SpringJdbcFence.class);
            TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
            assertThatThrownBy(() -> transactions.executeWithoutResult(status -> fence.checkCurrentJob()))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("no Fencer-locked job");
        });
    }

    private static void check(JdbcFence fence, DataSource dataSource, long token) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            fence.check(connection, new FencingToken("ledger", token));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    private static List<String> entries() {
        return new JdbcTemplate(postgres.getPostgresDatabase()).queryForList("SELECT entry FROM ledger", String.class);
    }
}

package io.fencer.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Path;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fence contract on an embedded PostgreSQL, plus durability of the accepted token across a restart. */
class PostgresJdbcFenceTest extends JdbcFenceContractTest {
    private static EmbeddedPostgres postgres;

    @BeforeAll
    static void startPostgres() throws Exception {
        postgres = EmbeddedPostgres.start();
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
    void check_afterDatabaseRestart_stillRefusesStaleToken(@TempDir Path directory) throws Exception {
        Path data = directory.resolve("pgdata");
        JdbcFence fence = new JdbcFence(Dialect.POSTGRESQL);
        try (EmbeddedPostgres first = EmbeddedPostgres.builder().setDataDirectory(data)
                .setCleanDataDirectory(false).start()) { // clean would delete the data directory on close
            try (var connection = first.getPostgresDatabase().getConnection()) {
                fence.createTable(connection);
            }
            fence.run(first.getPostgresDatabase(), new FencingToken("orders", 2), connection -> null);
        }
        try (EmbeddedPostgres restarted = EmbeddedPostgres.builder().setDataDirectory(data)
                .setCleanDataDirectory(false).start()) {
            assertThatThrownBy(() -> fence.run(restarted.getPostgresDatabase(), new FencingToken("orders", 1),
                    connection -> null))
                    .isInstanceOfSatisfying(StaleTokenException.class,
                            stale -> assertThat(stale.accepted()).isEqualTo(2));
        }
    }
}

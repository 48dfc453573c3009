package io.fencer.jdbc;

import java.nio.file.Path;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/** The fence contract on a SQLite file database. */
class SqliteJdbcFenceTest extends JdbcFenceContractTest {
    @TempDir
    Path directory;
    private SQLiteDataSource dataSource;

    @BeforeEach
    void openDatabase() {
        SQLiteConfig config = new SQLiteConfig();
        config.setBusyTimeout(60_000); // writers queue on SQLite's database lock instead of failing
        dataSource = new SQLiteDataSource(config);
        dataSource.setUrl("jdbc:sqlite:" + directory.resolve("fence.db"));
    }

    @Override
    DataSource dataSource() {
        return dataSource;
    }

    @Override
    Dialect dialect() {
        return Dialect.SQLITE;
    }

    @Override
    int threads() {
        return 8;
    }

    @Override
    String identityColumn() {
        return "INTEGER PRIMARY KEY AUTOINCREMENT";
    }
}

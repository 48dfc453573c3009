package io.fencer.jdbc;

/**
 * A SQL dialect the fence speaks: it decides only how a scope's row is inserted when absent, without races
 * and without ever overwriting an existing (possibly higher) token.
 */
public enum Dialect {
    /** PostgreSQL 9.5 or later: {@code INSERT ... ON CONFLICT (scope) DO NOTHING}. */
    POSTGRESQL {
        @Override
        String insertIfAbsentSql(String table) {
            return "INSERT INTO " + table + " (scope, token, updated_at) VALUES (?, 0, CURRENT_TIMESTAMP)"
                    + " ON CONFLICT (scope) DO NOTHING";
        }
    },
    /** MySQL and MariaDB: {@code INSERT IGNORE}. */
    MYSQL {
        @Override
        String insertIfAbsentSql(String table) {
            return "INSERT IGNORE INTO " + table + " (scope, token, updated_at) VALUES (?, 0, CURRENT_TIMESTAMP)";
        }
    },
    /** SQLite: {@code INSERT OR IGNORE}. */
    SQLITE {
        @Override
        String insertIfAbsentSql(String table) {
            return "INSERT OR IGNORE INTO " + table + " (scope, token, updated_at) VALUES (?, 0, CURRENT_TIMESTAMP)";
        }
    },
    /**
     * H2 2.x: a standard {@code MERGE ... WHEN NOT MATCHED THEN INSERT}, which never updates an existing row
     * (H2's {@code MERGE ... KEY} would reset the token to 0). A concurrent insert of the same scope can still
     * fail with a duplicate key; the fence ignores that failure, which H2 rolls back per statement.
     */
    H2 {
        @Override
        String insertIfAbsentSql(String table) {
            return "MERGE INTO " + table + " f USING (SELECT CAST(? AS VARCHAR(256)) AS scope) s"
                    + " ON f.scope = s.scope WHEN NOT MATCHED THEN"
                    + " INSERT (scope, token, updated_at) VALUES (s.scope, 0, CURRENT_TIMESTAMP)";
        }

        @Override
        boolean ignoresDuplicateKey() {
            return true;
        }
    };

    /** Returns the statement inserting the row of scope {@code ?} with token 0 when it is absent. */
    abstract String insertIfAbsentSql(String table);

    /**
     * Returns true when a duplicate-key failure of the insert-if-absent statement leaves the transaction usable
     * (statement-level rollback) and means the row exists; false where the statement itself cannot fail so.
     */
    boolean ignoresDuplicateKey() {
        return false;
    }
}

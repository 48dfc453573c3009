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

        @Override
        String admitUpsertSql(String table, String comparison) {
            // ON CONFLICT DO UPDATE locks the existing row and evaluates WHERE on its latest committed version.
            return "INSERT INTO " + table + " AS f (scope, token, updated_at) VALUES (?, ?, CURRENT_TIMESTAMP)"
                    + " ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, updated_at = CURRENT_TIMESTAMP"
                    + " WHERE f.token " + comparison + " EXCLUDED.token";
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

        @Override
        String admitUpsertSql(String table, String comparison) {
            return "INSERT INTO " + table + " (scope, token, updated_at) VALUES (?, ?, CURRENT_TIMESTAMP)"
                    + " ON CONFLICT (scope) DO UPDATE SET token = excluded.token, updated_at = CURRENT_TIMESTAMP"
                    + " WHERE " + table + ".token " + comparison + " excluded.token";
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
     * Returns one statement that inserts the scope's row with token {@code ?}, or raises its token to it when the
     * stored token compares with {@code comparison} ({@code <=} or {@code <}), changing one row when admitted and
     * none when refused; or null when the dialect has no such conditional upsert (then an insert-if-absent and a
     * conditional update run instead). One round trip instead of two: the fence costs a statement, not two.
     */
    String admitUpsertSql(String table, String comparison) {
        return null;
    }

    /**
     * Returns true when a duplicate-key failure of the insert-if-absent statement leaves the transaction usable
     * (statement-level rollback) and means the row exists; false where the statement itself cannot fail so.
     */
    boolean ignoresDuplicateKey() {
        return false;
    }
}

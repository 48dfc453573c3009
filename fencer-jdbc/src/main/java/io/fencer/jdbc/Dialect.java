package io.fencer.jdbc;

import java.sql.Connection;

/**
 * A SQL dialect the fence speaks: it decides how a scope's existing row is locked for the rest of the transaction,
 * and how the row is inserted when absent, without races and without ever overwriting an existing (possibly
 * higher) token.
 */
public enum Dialect {
    /**
     * PostgreSQL 9.5 or later: the row locked by {@code SELECT ... FOR NO KEY UPDATE}, a missing one inserted by
     * {@code INSERT ... ON CONFLICT}.
     */
    POSTGRESQL {
        @Override
        String lockSql(String table) {
            // NO KEY UPDATE: conflicts with every writer of the row, but not with the KEY SHARE locks that foreign
            // keys referencing the fence table take; unlike FOR SHARE, a later UPDATE by the holder is no upgrade
            // that two raising transactions could deadlock on.
            return "SELECT token FROM " + table + " WHERE scope = ? FOR NO KEY UPDATE";
        }

        @Override
        String insertIfAbsentSql(String table) {
            return "INSERT INTO " + table + " (scope, token, updated_at) VALUES (?, 0, CURRENT_TIMESTAMP)"
                    + " ON CONFLICT (scope) DO NOTHING";
        }

        @Override
        boolean pipelinesStatements() {
            return true;
        }

        @Override
        String admitUpsertSql(String table, String comparison) {
            // ON CONFLICT DO UPDATE locks the existing row and evaluates WHERE on its latest committed version.
            return "INSERT INTO " + table + " AS f (scope, token, updated_at) VALUES (?, ?, CURRENT_TIMESTAMP)"
                    + " ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, updated_at = CASE WHEN f.token ="
                    + " EXCLUDED.token THEN f.updated_at ELSE CURRENT_TIMESTAMP END"
                    + " WHERE f.token " + comparison + " EXCLUDED.token";
        }
    },
    /**
     * MySQL and MariaDB (InnoDB), at READ COMMITTED only: the row locked by {@code SELECT ... FOR UPDATE}, a missing
     * one inserted by an {@code INSERT ... ON DUPLICATE KEY UPDATE} that changes nothing, the scope stored as bytes.
     * Under InnoDB's default REPEATABLE READ (and SERIALIZABLE), the lock of a scope whose row does not exist yet is
     * a gap lock, which two transactions fencing a new scope both take and both need released to insert the row: a
     * deadlock. READ COMMITTED takes no gap locks, so the fence refuses a connection at any other level.
     */
    MYSQL {
        @Override
        String lockSql(String table) {
            return "SELECT token FROM " + table + " WHERE scope = ? FOR UPDATE";
        }

        @Override
        String insertIfAbsentSql(String table) {
            // Not INSERT IGNORE: on a duplicate key it takes a shared lock on the row, so two transactions that both
            // found the scope missing and then waited for its first inserter to commit each hold a shared lock the
            // other's token update must wait for, a deadlock. ON DUPLICATE KEY UPDATE takes the exclusive lock.
            return "INSERT INTO " + table + " (scope, token, updated_at) VALUES (?, 0, CURRENT_TIMESTAMP)"
                    + " ON DUPLICATE KEY UPDATE scope = scope";
        }

        @Override
        String scopeType(int bytesMax) {
            // The default collations ignore case, accents and trailing spaces, and a latin1 server cannot store every
            // name: distinct locks would share a row. Bytes compare exactly, and VARBINARY counts bytes, as LockNames.
            return "VARBINARY(" + bytesMax + ")";
        }

        @Override
        int isolationRequired() {
            return Connection.TRANSACTION_READ_COMMITTED;
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
                    + " ON CONFLICT (scope) DO UPDATE SET token = excluded.token, updated_at = CASE WHEN " + table
                    + ".token = excluded.token THEN " + table + ".updated_at ELSE CURRENT_TIMESTAMP END"
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
        String lockSql(String table) {
            return "SELECT token FROM " + table + " WHERE scope = ? FOR UPDATE";
        }

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

    /**
     * Returns the statement that reads the token of scope {@code ?} and locks its row against every other writer
     * until the transaction ends, reading the latest committed version once a concurrent writer has committed
     * (READ COMMITTED); or null when the dialect has no row locks. SQLite locks the whole database on its first
     * write, and a read before that write would have to upgrade its lock, which SQLite refuses with SQLITE_BUSY
     * while another writer waits: its fence stays one conditional upsert. When the scope has no row yet, the fence
     * falls back to the race-free insert.
     */
    String lockSql(String table) {
        return null;
    }

    /**
     * Returns the statement inserting the row of scope {@code ?} with token 0 when it is absent; when present, it
     * changes nothing.
     */
    abstract String insertIfAbsentSql(String table);

    /**
     * Returns one statement that inserts the scope's row with token {@code ?}, or raises its token to it when the
     * stored token compares with {@code comparison} ({@code <=} or {@code <}), changing one row when admitted and
     * none when refused, and {@code updated_at} only when the token changes; or null when the dialect has no such
     * conditional upsert (then an insert-if-absent and a conditional update run instead). One round trip instead
     * of two: on SQLite for every check, elsewhere for a scope that has no row to lock yet.
     */
    String admitUpsertSql(String table, String comparison) {
        return null;
    }

    /**
     * Returns the column type of the fence table's scope, a lock name of at most {@code bytesMax} UTF-8 bytes:
     * one that compares names exactly, as Java compares strings.
     */
    String scopeType(int bytesMax) {
        return "VARCHAR(" + bytesMax + ")";
    }

    /**
     * Returns the transaction isolation level ({@link Connection#TRANSACTION_READ_COMMITTED} and its kin) that a
     * connection must be at for the fence to check a token, or {@link Connection#TRANSACTION_NONE} when any will do.
     */
    int isolationRequired() {
        return Connection.TRANSACTION_NONE;
    }

    /**
     * Returns true when a duplicate-key failure of the insert-if-absent statement leaves the transaction usable
     * (statement-level rollback) and means the row exists; false where the statement itself cannot fail so.
     */
    boolean ignoresDuplicateKey() {
        return false;
    }

    /**
     * Returns true when the driver sends the statements of one prepared {@code "a; b"} to the server in one round
     * trip, runs them in order and stops at the first failure, with parameters numbered across both: the
     * PostgreSQL driver does by default. MySQL's needs {@code allowMultiQueries}, and SQLite's and H2's prepare
     * only one statement, so they keep two round trips.
     */
    boolean pipelinesStatements() {
        return false;
    }
}

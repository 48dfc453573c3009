package io.fencer.jdbc;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Row-level fencing for tables whose rows carry their own token column: each write is one conditional
 * {@code UPDATE ... WHERE id = ? AND (token_col IS NULL OR token_col <= ?)}, a conditional update that is itself
 * the write, so it needs no transaction of its own. The row is the scope: the caller binds a table to one lock.
 * A NULL token column means a row never fenced, which any token admits. Thread-safe.
 */
public final class FencedRows {
    private final FencePolicy policy;
    private final RefusalCounter refusals;

    /** Creates row fencing with policy {@link FencePolicy#AT_LEAST}. */
    public FencedRows() {
        this(FencePolicy.AT_LEAST);
    }

    public FencedRows(FencePolicy policy) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.refusals = new RefusalCounter(null, "jdbc");
    }

    /**
     * Creates row fencing that counts its refusals into {@code registry} as {@code fencer_adapter_refusals_total{
     * adapter="jdbc", scope=<the table>, reason}} ({@code stale_token}, {@code mode_mismatch}): the scope tag is the
     * table, not the row, so that the series stay as few as the fenced tables.
     */
    public FencedRows(FencePolicy policy, MeterRegistry registry) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.refusals = new RefusalCounter(Objects.requireNonNull(registry, "registry"), "jdbc");
    }

    /**
     * Sets {@code values} and {@code tokenColumn = token.value()} on the row {@code idColumn = id} when the
     * row's token admits {@code token}. Identifiers must be plain ({@code [A-Za-z_][A-Za-z0-9_]*}); values are
     * bound as parameters in the map's iteration order.
     *
     * @throws StaleTokenException when the row exists with a token that refuses {@code token} (scope is
     *     {@code table/id})
     * @throws RowMissingException when no row has that id
     * @throws IllegalArgumentException when an identifier is not plain, or {@code values} sets the id or token
     *     column
     */
    public void update(Connection connection, String table, String idColumn, Object id, String tokenColumn,
            FencingToken token, Map<String, ?> values) throws SQLException {
        SqlIdentifiers.check("table", table);
        SqlIdentifiers.check("id column", idColumn);
        SqlIdentifiers.check("token column", tokenColumn);
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(token, "token");
        if (token.mode() != LockMode.EXCLUSIVE) { // readers overlap: none of them may write
            throw refusals.refused(table, new ModeMismatchException(table + "/" + id, token.value(), token.mode()));
        }
        StringBuilder sql = new StringBuilder("UPDATE ").append(table).append(" SET ");
        List<Object> parameters = new ArrayList<>();
        for (Map.Entry<String, ?> value : values.entrySet()) {
            String column = SqlIdentifiers.check("value column", value.getKey());
            if (column.equalsIgnoreCase(idColumn) || column.equalsIgnoreCase(tokenColumn)) {
                throw new IllegalArgumentException("values must not set the id or token column, got '" + column + "'");
            }
            sql.append(column).append(" = ?, ");
            parameters.add(value.getValue());
        }
        String admits = policy == FencePolicy.STRICT ? " < ?)" : " <= ?)";
        sql.append(tokenColumn).append(" = ? WHERE ").append(idColumn).append(" = ? AND (").append(tokenColumn)
                .append(" IS NULL OR ").append(tokenColumn).append(admits);
        parameters.add(token.value());
        parameters.add(id);
        parameters.add(token.value());
        int updated;
        try (PreparedStatement update = connection.prepareStatement(sql.toString())) {
            for (int i = 0; i < parameters.size(); i++) {
                update.setObject(i + 1, parameters.get(i));
            }
            updated = update.executeUpdate();
        }
        if (updated == 0) {
            throw refusal(connection, table, idColumn, id, tokenColumn, token);
        }
    }

    private RuntimeException refusal(Connection connection, String table, String idColumn, Object id,
            String tokenColumn, FencingToken token) throws SQLException {
        String sql = "SELECT " + tokenColumn + " FROM " + table + " WHERE " + idColumn + " = ?";
        try (PreparedStatement select = connection.prepareStatement(sql)) {
            select.setObject(1, id);
            try (ResultSet rows = select.executeQuery()) {
                if (!rows.next()) {
                    return new RowMissingException(table, idColumn, id);
                }
                long accepted = rows.getLong(1);
                boolean empty = rows.wasNull();
                boolean admits = policy == FencePolicy.STRICT ? token.value() > accepted : token.value() >= accepted;
                // A read that would admit the token cannot explain the refusal: the row changed after the update
                // read it, or this transaction reads an older snapshot (REPEATABLE READ), so say that, not a number.
                String why = !empty && !admits ? null : "the row's token changed while the update was refused, or this"
                        + " transaction reads a snapshot older than the row (it reads " + (empty ? "no token" : "token "
                        + accepted) + "): nothing was written; read the row again, at READ COMMITTED, to learn why";
                return refusals.refused(table, new StaleTokenException(table + "/" + id, token.value(), accepted,
                        policy, why));
            }
        }
    }
}

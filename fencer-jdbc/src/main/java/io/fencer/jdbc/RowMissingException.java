package io.fencer.jdbc;

/**
 * A fenced row update found no row with the given id: nothing was written. Distinct from
 * {@link io.fencer.core.StaleTokenException}, where the row exists but carries a newer token.
 */
public final class RowMissingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String table;
    private final Object id;

    public RowMissingException(String table, String idColumn, Object id) {
        super("no row in " + table + " with " + idColumn + " = " + id);
        this.table = table;
        this.id = id;
    }

    public String table() {
        return table;
    }

    public Object id() {
        return id;
    }
}

package io.fencer.jdbc;

import java.util.regex.Pattern;

/** Validation of the SQL identifiers that the fence splices into statements (they cannot be bound). */
final class SqlIdentifiers {
    /** The longest identifier accepted, in characters (PostgreSQL's limit, the smallest of the dialects). */
    static final int CHARS_MAX = 63;
    private static final Pattern PLAIN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private SqlIdentifiers() {}

    /**
     * Returns {@code identifier} when it is a plain SQL identifier: a letter or underscore, then letters, digits
     * and underscores, at most {@link #CHARS_MAX} characters.
     *
     * @throws IllegalArgumentException naming {@code what} and the value otherwise: identifiers come from code,
     *     not from requests, so a bad one is a programmer error
     */
    static String check(String what, String identifier) {
        if (identifier == null || !PLAIN.matcher(identifier).matches()) {
            throw new IllegalArgumentException(what + " must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*), got '"
                    + identifier + "'");
        }
        if (identifier.length() > CHARS_MAX) {
            throw new IllegalArgumentException(what + " '" + identifier + "' is " + identifier.length()
                    + " characters, more than the " + CHARS_MAX + " allowed");
        }
        return identifier;
    }
}

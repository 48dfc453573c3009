package io.fencer.server.store;

/**
 * Told of each write or unit commit the store refused, where its metrics count it: what the web console's feed shows
 * ({@code io.fencer.server.http.RecentRefusals}, which the server wires to the store). It is called on the thread that
 * answers the write, so it must be quick and must not throw. It is told no value and no secret: the scope, the
 * reason, and the tokens as {@code lock#value}.
 */
@FunctionalInterface
public interface RefusalListener {
    /** The listener of a store without a console: told nothing. */
    RefusalListener NONE = (scope, reason, presented, accepted) -> { };

    /**
     * @param scope the refused write's scope, a valid scope name (a write refused for its invalid scope name is not
     *     told: it names no scope anyone may read)
     * @param reason the error catalogue's reason in lower case ({@code stale_token}, {@code scope_mismatch} ...)
     * @param presented the token the write presented, {@code lock#value}, or null when the refusal does not name it
     * @param accepted the scope's accepted token, {@code scope#value}, for a stale token only; null otherwise
     */
    void refused(String scope, String reason, String presented, String accepted);
}

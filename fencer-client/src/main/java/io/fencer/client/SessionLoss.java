package io.fencer.client;

/**
 * Why a session ended.
 *
 * @param sessionId the session
 * @param cause the kind of end
 * @param detail a sentence for logs
 */
public record SessionLoss(long sessionId, Cause cause, String detail) {
    /** The kinds of session end. */
    public enum Cause {
        /** The application closed it: not a loss, so only {@link io.fencer.client.Session#ended()} reports it. */
        CLOSED,
        /** The service said the session expired. */
        EXPIRED,
        /** The local lease ended without a newer acknowledged keepalive: the service has expired it, or will. */
        UNREACHABLE,
        /**
         * The service refused the session's secret (SESSION_UNAUTHENTICATED): nothing this client sends for the
         * session is accepted any more, so it is lost to this client, although the service may keep it until its ttl.
         */
        UNAUTHENTICATED
    }
}

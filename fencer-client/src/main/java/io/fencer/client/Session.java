package io.fencer.client;

import io.fencer.core.FencingToken;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A lease on the lock service, kept alive by keepalives in the background. Locks are held by sessions: when a
 * session is lost (it expired because keepalives did not arrive in time, or the server ended it), every lock it
 * held is released by the service and may be granted to someone else.
 *
 * <p>A session is usable only by its opener: the service returned a secret with the session's id, which this session
 * keeps (it is never logged nor shown by {@link #toString()}) and sends with every call made for it. The id alone,
 * which the service hands out in sequence, lets nobody act for the session.
 *
 * <p>A session cannot promise its holder that nobody else holds its locks: a paused process does not see its
 * own lease end. That is why every write must carry the grant's {@link FencingToken} to a
 * resource that checks it.
 */
public interface Session extends AutoCloseable {

    /** Returns the session id the service assigned. It is not a credential: the session's secret is. */
    long id();

    /** Returns the lease length. */
    Duration ttl();

    /** Returns the lock of this name, held through this session. */
    FencedLock lock(String name);

    /** Returns the leader election of this name, campaigned through this session. */
    LeaderElection election(String name);

    /**
     * Releases a lock this session holds, by its token.
     *
     * @throws io.fencer.core.NotHolderException when the token is not the one this session holds the lock under
     *     (superseded, already released, or the lock is another session's); nothing changed
     * @throws io.fencer.core.SessionExpiredException when the session has ended: its locks are released already
     */
    void release(FencingToken token);

    /** Returns true until the session is closed or known lost. */
    boolean isAlive();

    /**
     * Returns a stage that completes, with why, when the session is lost or closed. It completes when the service
     * says the session expired, or when no keepalive was acknowledged for a whole ttl (the service has then
     * expired it, or will at once).
     */
    CompletionStage<SessionLoss> lost();

    /** Closes the session: the service releases its locks at once. Idempotent. */
    @Override
    void close();
}

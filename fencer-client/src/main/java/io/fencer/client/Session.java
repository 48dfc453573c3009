package io.fencer.client;

import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A lease on the lock service, kept alive by keepalives in the background. Locks are held by sessions: when a
 * session is lost (it expired because keepalives did not arrive in time, or the server ended it), every lock it
 * held is released by the service and may be granted to someone else.
 *
 * <p>A session cannot promise its holder that nobody else holds its locks: a paused process does not see its
 * own lease end. That is why every write must carry the grant's {@link io.fencer.core.FencingToken} to a
 * resource that checks it.
 */
public interface Session extends AutoCloseable {

    /** Returns the session id the service assigned. */
    long id();

    /** Returns the lease length. */
    Duration ttl();

    /** Returns the lock of this name, held through this session. */
    FencedLock lock(String name);

    /** Returns the leader election of this name, campaigned through this session. */
    LeaderElection election(String name);

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

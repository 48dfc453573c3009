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
 *
 * <p><b>The local lease.</b> Work that no resource fences (running a command, a leader's messages) can only rely
 * on the lease, so the client counts it to fail closed. A keepalive goes out every ttl/3; the service renews the
 * lease when it receives one, which is after we sent it. So the <em>local</em> lease runs from the <em>send</em>
 * time of the last acknowledged keepalive, for the ttl less a clock-drift margin of 1% of the ttl plus 5 ms
 * (the service counts the ttl by its clock, we count it by ours, by the client's
 * {@link FencerClient.Builder#ticker ticker}, and the two may run at different rates):
 * <pre>
 *   send ──────────────► service receives: its lease now ends a ttl later, by its clock
 *    │   ◄────────────── acknowledgement
 *    ├─ 1/3 ttl: next keepalive sent
 *    ├─ 2/3 ttl, still unanswered: {@link #jeopardy()} completes
 *    └─ ttl − (1% ttl + 5 ms): the local lease ends; {@link #lost()} has completed by then
 * </pre>
 * Past the local lease end the service may have granted the locks to someone else, and nothing here can say it
 * has not. A process that is paused (GC, SIGSTOP) sees none of these moments in time: that is what tokens are
 * for.
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
     * Returns the semaphore of this name with {@code permits} permits (1 to 1,000), acquired through this session.
     *
     * @throws io.fencer.core.InvalidArgumentException naming the count when it is outside [1, 1000]
     */
    FencedSemaphore semaphore(String name, int permits);

    /**
     * Returns the locks of these names (1 to 64, none twice), acquired together, all or none, through this session.
     *
     * @throws io.fencer.core.InvalidArgumentException naming a lock named twice, or the count
     */
    FencedMultiLock locks(String... names);

    /**
     * Releases a lock this session holds, by its token, and returns once the service has released it (as
     * {@link Grant#release()} does; {@link Grant#close()} may return before).
     *
     * @throws io.fencer.core.NotHolderException when the token is not the one this session holds the lock under
     *     (superseded, already released, or the lock is another session's); nothing changed. A retry after an attempt
     *     whose answer was lost that finds the token no longer held returns instead: that attempt may have released
     *     it, and the grant has ended either way
     * @throws io.fencer.core.SessionExpiredException when the session has ended: its locks are released already
     */
    void release(FencingToken token);

    /**
     * Returns true until the session is closed or known lost. A session whose local lease has ended is lost (as
     * {@link SessionLoss.Cause#UNREACHABLE}) when this is asked, even if the keepalive thread has not seen it yet.
     */
    boolean isAlive();

    /**
     * Returns how long the local lease has left (see the class comment): from now until the ttl less the drift
     * margin has passed since the send time of the last acknowledged keepalive. {@link Duration#ZERO} once the
     * session is lost or closed; a call that finds the local lease ended loses the session then and there.
     */
    Duration leaseRemaining();

    /**
     * Returns a stage that completes, with the local lease left at that moment, when the session is in jeopardy:
     * no keepalive was acknowledged for two keepalive intervals (2/3 of the ttl), so the one sent after the last
     * acknowledgement has gone unanswered for a whole interval, while the local lease still runs (for about a third
     * of the ttl). Stop unfenced work then: the session may still recover, or be lost when the local lease ends.
     *
     * <p>Each call returns the stage of the current episode: completed while the session is in jeopardy; after an
     * acknowledgement ends the episode, later calls return a new stage that waits for the next one. It also
     * completes, with {@link Duration#ZERO}, when the session ends for any reason (lost without warning because the
     * service said it expired, or closed), and always before or with {@link #lost()} and {@link #ended()}, never
     * after: a holder that
     * must stop early need only watch this stage. Listeners run on the client's event threads.
     */
    CompletionStage<Duration> jeopardy();

    /**
     * Returns a stage that completes, with why, when the session is lost: ended by something the application did
     * not ask for. It completes when the service says the session expired ({@link SessionLoss.Cause#EXPIRED}) or
     * refused its secret ({@link SessionLoss.Cause#UNAUTHENTICATED}), or no later than the local lease end when
     * keepalives go unanswered ({@link SessionLoss.Cause#UNREACHABLE}: the service has then expired the session, or
     * will within the drift margin). Listeners run on the client's event threads.
     *
     * <p>Closing the session (or its client) is not a loss: this stage then never completes, so a handler such as
     * {@code session.lost().thenAccept(loss -> log.warn("session lost: {}", loss))} speaks only of real losses. To
     * learn of every end, a close included, use {@link #ended()}.
     */
    CompletionStage<SessionLoss> lost();

    /**
     * Returns a stage that completes, with why, when the session ends for any reason: lost as {@link #lost()}
     * describes, or closed by the application ({@link SessionLoss.Cause#CLOSED}). Use it to free what the session's
     * holder keeps; use {@link #lost()} to react to a loss.
     */
    CompletionStage<SessionLoss> ended();

    /** Closes the session: the service releases its locks at once. Idempotent. */
    @Override
    void close();
}

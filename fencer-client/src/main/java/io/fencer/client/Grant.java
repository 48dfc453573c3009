package io.fencer.client;

import io.fencer.core.FencingToken;
import java.util.concurrent.CompletionStage;

/** One grant of a lock: its fencing token, released on {@link #close()}. */
public interface Grant extends AutoCloseable {

    /** Returns the token to carry with every write made under this grant. */
    FencingToken token();

    /**
     * Returns the token's wire form exactly as the lock service sent it, to hand to resources (for example
     * {@link FencedStore}): {@code fencer1.<base64url(lock)>.<value>}, followed by {@code .<kid>.<mac>} when the
     * service signs its tokens. Resources that require signed tokens refuse {@code token().sequencer()}, which is
     * never signed; pass this one.
     */
    String sequencer();

    /**
     * Returns a stage that completes, with why, when this grant is known lost without its holder releasing it: an
     * operator revoked it ({@link GrantLoss.Cause#REVOKED}, learnt from the next keepalive answer of its session,
     * within a third of the session's ttl), its session was lost ({@link GrantLoss.Cause#SESSION_LOST}, with
     * {@link Session#lost()}), or it was answered before it was durable and the service restarted first
     * ({@link GrantLoss.Cause#NOT_DURABLE}, learnt from the next answer or keepalive answer of the restarted service;
     * the client then gives the lock's place up itself, and {@link #close()} sends nothing). Releasing the grant
     * ({@link #close()}) or closing its session is not a loss: the stage then never completes. Listeners run on the
     * client's event threads.
     *
     * <p>Stop work that no resource fences here. Fenced writes need no listener: a resource refuses the revoked
     * holder's token once the next holder has written to it, whether or not this stage has completed yet.
     */
    CompletionStage<GrantLoss> lost();

    /**
     * Releases the lock, if this grant is still the holder. Releasing a grant that was already superseded
     * (its session expired) changes nothing and is not an error here; see {@link FencerClient#release} for the
     * strict form.
     *
     * <p>With pipelining on (the default) this sends the release and returns without waiting for the service's
     * answer: the release reaches the service before any Acquire this client sends later, this client's reads
     * ({@link FencerClient#describe}, {@code list}, {@code validate}) first wait for its answer, and an Acquire that
     * finds the lock still held under this grant does not hand that grant out again; a release whose answer is lost
     * is sent again. Another client may still find the lock held for about a round trip: to hand a lock to another
     * process and then tell it so, use {@link #release()}, which returns once the service has released it. With
     * pipelining off, or while {@code 1024} releases are unanswered, this waits as that does.
     * Tokens carry the safety either way: a release only ends this grant, never a later one.
     *
     * <p>A server that runs alone may answer before the release is durable: every later call and read sees it
     * released, and if that server restarts before the release is durable, the client sends it again.
     */
    @Override
    void close();

    /**
     * Releases the lock as {@link #close()} does, but returns only once the service has released it: a call that
     * any client makes after this returns finds the lock released. Calling it or {@link #close()} again does nothing.
     *
     * @throws io.fencer.core.UnavailableException when the service could not be reached; a later {@code release} or
     *     {@code close} tries again
     */
    void release();
}

package io.fencer.client.internal;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DurableMark;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;

/**
 * What one session does with the grants the service answered before they were durable (a waiting Acquire of a plain
 * lock, on a peer that serves as a group of one): keeps them provisional ({@link PendingGrants}) and, when a durable
 * mark shows one may be lost, reports the loss to its holder and gives the lock's place up. Why give it up: the
 * restarted peer may have the session still waiting for the lock, or holding it under a later token once the old
 * holder's re-sent release applies, and nobody on the client knows of that grant; it would stay held until the
 * session ends. Thread-safe.
 */
final class ProvisionalGrants {
    private static final System.Logger LOG = System.getLogger(ProvisionalGrants.class.getName());

    private final DefaultSession session;
    private final PendingGrants pending = new PendingGrants();
    /**
     * The locks an acquire of this session is in flight for, with how many: no more entries than threads acquiring.
     * Giving a lost grant's place up leaves such a lock's place to that acquire (see {@link #giveUp}).
     */
    private final Map<String, Integer> acquiring = new ConcurrentHashMap<>();

    ProvisionalGrants(DefaultSession session) {
        this.session = session;
    }

    /** True while a grant answered early can be kept: only then may an acquire ask for one. */
    boolean hasRoom() {
        return pending.hasRoom();
    }

    /** Notes an acquire of {@code locks} in flight, until {@link #acquireEnded}. */
    void acquiring(Collection<String> locks) {
        for (String lock : locks) {
            acquiring.merge(lock, 1, Integer::sum);
        }
    }

    void acquireEnded(Collection<String> locks) {
        for (String lock : locks) {
            acquiring.computeIfPresent(lock, (name, count) -> count == 1 ? null : count - 1);
        }
    }

    /**
     * Keeps the grant of {@code token}, handed out from {@code answer}, provisional when the answer says it was not
     * durable yet; one a mark of another incarnation was seen before is lost already.
     */
    void handedOut(FencingToken token, AcquireResponse answer) {
        if (answer.getPendingSequence() <= 0) {
            return;
        }
        String incarnation = answer.getDurable().getIncarnation();
        if (!pending.add(token, incarnation, answer.getPendingSequence())) {
            lost(List.of(new PendingGrants.Lost(token, 0)));
        }
    }

    /** Takes a durable mark: confirms the grants it covers, and handles those it shows may be lost. */
    void observe(DurableMark mark) {
        lost(pending.observe(mark));
    }

    /** Forgets every grant: the session ended, and its end released its locks. */
    void clear() {
        pending.clear();
    }

    int size() {
        return pending.size();
    }

    /** Tells each grant's holder it is lost (once), then gives its place up on the client's call threads. */
    private void lost(List<PendingGrants.Lost> grants) {
        for (PendingGrants.Lost grant : grants) {
            if (grant.attemptsBefore() == 0) {
                session.lostBeforeDurable(grant.token());
            }
            try {
                session.client().calls().execute(() -> giveUp(grant));
            } catch (RejectedExecutionException clientClosed) {
                return; // closing the client closes its sessions, which releases their locks
            }
        }
    }

    /**
     * Releases the lost grant's token (NOT_HOLDER: it never took effect), then tries the lock once, which cancels a
     * wait of this session the restored state kept, or is answered with the grant that state made, released here.
     * A failure is tried again at the next mark, at most {@link PendingGrants#ATTEMPTS_MAX} times.
     */
    private void giveUp(PendingGrants.Lost grant) {
        if (session.knownLoss() != null) {
            return; // the session's end released its locks
        }
        FencingToken token = grant.token();
        try {
            try {
                session.releaseToken(token);
            } catch (NotHolderException neverApplied) {
                LOG.log(System.Logger.Level.DEBUG, "{0} was not held: {1}", token, neverApplied.getMessage());
            }
            // An acquire of this session in flight for the lock holds or waits in its place: the service answers it
            // the grant its state has, and it hands that grant out. A try now would cancel its wait, or release the
            // grant it is about to hand out; so its answer takes the place instead.
            if (!acquiring.containsKey(token.lock())) {
                tryOnce(token.lock());
            }
        } catch (SessionExpiredException | SessionUnauthenticatedException ended) {
            LOG.log(System.Logger.Level.DEBUG, "session {0} ended: its locks are released", session.id());
        } catch (RuntimeException e) {
            boolean again = pending.retry(grant);
            LOG.log(System.Logger.Level.WARNING, "could not give up the place of lost grant {0} (session {1}): {2};"
                    + " {3}", token, session.id(), e.getMessage(), again ? "trying again at the next keepalive"
                            : "giving up: the lock may stay with the session until it ends");
        }
    }

    /** Asks for {@code lock} without waiting (a request of its own, answered once durable) and releases a grant. */
    private void tryOnce(String lock) {
        AcquireRequest request = AcquireRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).setLock(lock).setWaitMillis(0)
                .setRequestId(session.client().requestIds().next()).build();
        AcquireResponse answer;
        try {
            answer = session.router().call("Acquire " + lock + " (giving up a lost grant's place)",
                    calls -> calls.call(LocksGrpc.getAcquireMethod(), request));
        } catch (SessionExpiredException e) {
            session.expiredByServer(e);
            throw e;
        } catch (SessionUnauthenticatedException e) {
            session.unauthenticatedByServer(e);
            throw e;
        }
        if (!answer.getAcquired()) {
            return;
        }
        FencingToken granted = Protos.token(answer.getToken());
        if (!session.claimForGiveBack(granted)) {
            return; // an acquire of this session handed it out meanwhile, as its own grant
        }
        try {
            session.releaseToken(granted);
            LOG.log(System.Logger.Level.INFO, "released {0}, granted in place of a lost grant (session {1})", granted,
                    session.id());
        } catch (NotHolderException endedMeanwhile) {
            LOG.log(System.Logger.Level.DEBUG, "{0} ended meanwhile: {1}", granted, endedMeanwhile.getMessage());
        }
    }
}

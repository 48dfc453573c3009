package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.UnavailableException;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongFunction;

/**
 * The one way a session calls a method that may wait for a grant (Acquire, AcquirePermit, AcquireAll): one request
 * id for every attempt; each attempt asks to wait for what remains of the wait, with a gRPC deadline a margin beyond
 * it so the server answers {@code acquired=false} itself; a transport failure mid-wait is retried on the leader
 * until the wait and then the client's call timeout are spent. The wait ends early when the session ends: a frozen
 * or cut-off peer keeps its connection open and answers nothing, and no grant of an ended session is handed out.
 */
final class WaitingAcquire {
    private WaitingAcquire() {}

    /**
     * How long a waiting attempt goes on once its session has ended: an answer already on its way still arrives, so
     * that a grant it brings is given back ({@link DefaultSession#checkHandOut}) rather than left to the session's
     * expiry on the service.
     */
    static final long ANSWER_IN_FLIGHT_NANOS = MILLISECONDS.toNanos(1_000);

    /**
     * How long the acquire asked again after an interrupt waits: long enough for the service to handle the cancel of
     * the interrupted call first (see {@link #giveBackLater}); a grant it gets within it is given back too.
     */
    static final long GIVE_BACK_WAIT_MILLIS = 1_000;

    private static final System.Logger LOG = System.getLogger(WaitingAcquire.class.getName());

    /** The least a waiting attempt sleeps between two questions to its session. */
    static final long ASK_MIN_NANOS = MILLISECONDS.toNanos(1);

    /**
     * Ends a waiting attempt {@link #ANSWER_IN_FLIGHT_NANOS} after it finds its session ended. It asks when the
     * session's local lease would run out, the one moment the session can end with nothing to tell the waiter
     * (a leader that froze or was cut off): a session the service ended or closed has its waits dropped there, and
     * their calls answered. One thread's.
     */
    private static final class SessionEnd implements Router.Abort {
        private final DefaultSession session;
        private final String operation;
        private boolean endSeen;
        private long endSeenNanos;

        SessionEnd(DefaultSession session, String operation) {
            this.session = session;
            this.operation = operation;
        }

        @Override
        public RuntimeException why() {
            if (session.isAlive()) {
                return null;
            }
            long now = System.nanoTime();
            if (!endSeen) {
                endSeen = true;
                endSeenNanos = now;
            }
            return now - endSeenNanos >= ANSWER_IN_FLIGHT_NANOS ? session.endedWhileWaiting(operation) : null;
        }

        @Override
        public long askAgainInNanos() {
            long nanos = endSeen ? endSeenNanos + ANSWER_IN_FLIGHT_NANOS - System.nanoTime()
                    : session.leaseRemaining().toNanos();
            return Math.max(ASK_MIN_NANOS, nanos);
        }
    }

    /** What is left of a wait of {@code waitMillis} that ends at {@code deadlineNanos}, rounded up. */
    static long leftMillis(long waitMillis, long deadlineNanos) {
        long leftNanos = Math.max(0, deadlineNanos - System.nanoTime());
        return Math.min(waitMillis, (leftNanos + 999_999) / 1_000_000);
    }

    /**
     * Calls {@code method} for {@code session} with requests made by {@code withWaitMillis} (the same request with
     * the attempt's wait in milliseconds), and returns the answer. The call counts as an acquire of {@code locks} in
     * flight (see {@link ProvisionalGrants#acquiring}) until it returns; a durable mark in its answer is taken.
     *
     * @throws SessionExpiredException when the service ended the session; the session is marked lost first; or
     *     when the session ended while the call waited, whose outcome is then unknown
     * @throws SessionUnauthenticatedException when the service refused the session's secret; marked likewise
     * @throws UnavailableException when the calling thread was interrupted before the call: nothing is sent
     */
    static <RequestT> AcquireResponse call(DefaultSession session, String operation, Collection<String> locks,
            long waitMillis, MethodDescriptor<RequestT, AcquireResponse> method,
            LongFunction<RequestT> withWaitMillis) {
        ProvisionalGrants provisional = session.provisionalGrants();
        provisional.acquiring(locks);
        try {
            AcquireResponse answer = call(session, operation, locks, waitMillis, method, withWaitMillis, provisional);
            if (answer.hasDurable()) {
                session.durableSeen(answer.getDurable());
            }
            return answer;
        } finally {
            provisional.acquireEnded(locks);
        }
    }

    private static <RequestT> AcquireResponse call(DefaultSession session, String operation, Collection<String> locks,
            long waitMillis, MethodDescriptor<RequestT, AcquireResponse> method, LongFunction<RequestT> withWaitMillis,
            ProvisionalGrants provisional) {
        if (Thread.currentThread().isInterrupted()) {
            // As Lock.lockInterruptibly: an interrupt pending on entry asks nothing of the service. Sent, the request
            // would race the interrupt: granted and answered before the caller reached its wait, it returned a grant;
            // otherwise it failed and the grant was given back, two outcomes for one call.
            throw new UnavailableException(operation + " was not sent: the calling thread was interrupted before the"
                    + " call (the interrupt is kept; nothing was asked of the service)");
        }
        Router router = session.router();
        long waitNanos = MILLISECONDS.toNanos(waitMillis);
        long waitDeadlineNanos = System.nanoTime() + waitNanos;
        long marginNanos = router.attemptTimeoutNanos();
        AtomicBoolean maybeSent = new AtomicBoolean();
        try {
            SessionEnd sessionEnd = new SessionEnd(session, operation);
            return router.call(operation, waitNanos + router.callTimeoutNanos(), calls -> {
                if (!session.isAlive()) {
                    throw session.endedWhileWaiting(operation);
                }
                long remainingMillis = leftMillis(waitMillis, waitDeadlineNanos);
                try {
                    return calls.withTimeoutNanos(MILLISECONDS.toNanos(remainingMillis) + marginNanos)
                            .abortedBy(sessionEnd).call(method, withWaitMillis.apply(remainingMillis));
                } catch (StatusRuntimeException failure) {
                    if (!Unreachable.neverSent(failure)) {
                        maybeSent.set(true);
                    }
                    throw failure;
                }
            });
        } catch (SessionExpiredException e) {
            session.expiredByServer(e);
            throw e;
        } catch (SessionUnauthenticatedException e) {
            session.unauthenticatedByServer(e);
            throw e;
        } catch (UnavailableException e) {
            // Interrupted, or out of time after an attempt that may have reached the service: either way the
            // service may have granted the request and dropped the answer of the call given up, and the session
            // would hold that grant, unknown to anyone, until it ends. A call that reached no server granted nothing.
            if (!Thread.currentThread().isInterrupted() && !(maybeSent.get() && session.isAlive())) {
                throw e;
            }
            provisional.acquiring(locks); // until the give-back's answer: it holds or waits in their place
            giveBackLater(session, operation, locks, method, withWaitMillis.apply(GIVE_BACK_WAIT_MILLIS));
            throw new UnavailableException(e.getMessage() + "; the client asks the service once more in the"
                    + " background and gives back what the session was granted", e);
        }
    }

    /**
     * After an interrupt, or a deadline that cut short an attempt that may have reached the service, the call was
     * given up, but its request may have been granted meanwhile: the service drops the answer of a call its client
     * cancelled, so the session would hold the grant, unknown to anyone, until it ends. So the same request is asked
     * again on a call thread (the caller that gave up must not wait): an acquire by a
     * session that holds the lock (slot, locks) is answered with that grant, one that waits keeps its place, and
     * whatever it is granted is released. It waits {@link #GIVE_BACK_WAIT_MILLIS}, not zero, because a waiting
     * request of the same session and lock that arrives before the service has handled the cancel shares its wait:
     * the cancel then leaves the place to it, and it is answered once the service has settled both.
     */
    private static <RequestT> void giveBackLater(DefaultSession session, String operation, Collection<String> locks,
            MethodDescriptor<RequestT, AcquireResponse> method, RequestT request) {
        try {
            session.client().calls().execute(() -> {
                try {
                    giveBack(session, operation, method, request);
                } finally {
                    session.provisionalGrants().acquireEnded(locks);
                }
            });
        } catch (RejectedExecutionException closing) {
            session.provisionalGrants().acquireEnded(locks);
            LOG.log(System.Logger.Level.DEBUG, "{0}: the client is closing, which ends the session and its grants",
                    operation);
        }
    }

    private static <RequestT> void giveBack(DefaultSession session, String operation,
            MethodDescriptor<RequestT, AcquireResponse> method, RequestT request) {
        Router router = session.router();
        AcquireResponse answer;
        try {
            if (!session.isAlive()) {
                return; // its grants ended with it
            }
            long waitNanos = MILLISECONDS.toNanos(GIVE_BACK_WAIT_MILLIS);
            answer = router.call(operation + " (asked again after an interrupt)", waitNanos + router.callTimeoutNanos(),
                    calls -> calls.withTimeoutNanos(waitNanos + router.attemptTimeoutNanos()).call(method, request));
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "{0} was interrupted and could not be asked again ({1}): a grant it"
                    + " may have got stays with session {2} until the session ends", operation, e.getMessage(),
                    session.id());
            return;
        }
        if (answer.hasDurable()) {
            session.durableSeen(answer.getDurable());
        }
        if (!answer.getAcquired()) {
            return;
        }
        List<io.fencer.api.v1.FencingToken> wire = answer.getTokensCount() > 0 ? answer.getTokensList()
                : List.of(answer.getToken());
        for (io.fencer.api.v1.FencingToken each : wire) {
            FencingToken token = Protos.token(each);
            if (!session.claimForGiveBack(token)) {
                continue; // another acquire of this session handed it out as its own grant
            }
            try {
                session.releaseToken(token);
                LOG.log(System.Logger.Level.INFO, "gave back {0}, granted to an interrupted {1}", token, operation);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not give back {0}, granted to an interrupted {1} ({2}): it"
                        + " stays with session {3} until the session ends", token, operation, e.getMessage(),
                        session.id());
            }
        }
    }
}

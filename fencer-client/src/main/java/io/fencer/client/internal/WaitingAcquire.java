package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.grpc.MethodDescriptor;
import java.util.function.LongFunction;

/**
 * The one way a session calls a method that may wait for a grant (Acquire, AcquirePermit, AcquireAll): one request
 * id for every attempt; each attempt asks to wait for what remains of the wait, with a gRPC deadline a margin beyond
 * it so the server answers {@code acquired=false} itself; a transport failure mid-wait is retried on the leader
 * until the wait and then the client's call timeout are spent.
 */
final class WaitingAcquire {
    private WaitingAcquire() {}

    /** What is left of a wait of {@code waitMillis} that ends at {@code deadlineNanos}, rounded up. */
    static long leftMillis(long waitMillis, long deadlineNanos) {
        long leftNanos = Math.max(0, deadlineNanos - System.nanoTime());
        return Math.min(waitMillis, (leftNanos + 999_999) / 1_000_000);
    }

    /**
     * Calls {@code method} for {@code session} with requests made by {@code withWaitMillis} (the same request with
     * the attempt's wait in milliseconds), and returns the answer.
     *
     * @throws SessionExpiredException when the service ended the session; the session is marked lost first
     * @throws SessionUnauthenticatedException when the service refused the session's secret; marked likewise
     */
    static <RequestT> AcquireResponse call(DefaultSession session, String operation, long waitMillis,
            MethodDescriptor<RequestT, AcquireResponse> method, LongFunction<RequestT> withWaitMillis) {
        Router router = session.router();
        long waitNanos = MILLISECONDS.toNanos(waitMillis);
        long waitDeadlineNanos = System.nanoTime() + waitNanos;
        long marginNanos = router.attemptTimeoutNanos();
        try {
            return router.call(operation, waitNanos + router.callTimeoutNanos(), calls -> {
                long remainingMillis = leftMillis(waitMillis, waitDeadlineNanos);
                return calls.withTimeoutNanos(MILLISECONDS.toNanos(remainingMillis) + marginNanos)
                        .call(method, withWaitMillis.apply(remainingMillis));
            });
        } catch (SessionExpiredException e) {
            session.expiredByServer(e);
            throw e;
        } catch (SessionUnauthenticatedException e) {
            session.unauthenticatedByServer(e);
            throw e;
        }
    }
}

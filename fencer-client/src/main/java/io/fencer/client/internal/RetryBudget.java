package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.core.UnavailableException;
import io.grpc.StatusRuntimeException;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One call's retry budget: its deadline on {@link System#nanoTime()} (gRPC deadlines run on real time), the
 * backoff between attempts, and the last two failures, so that the error at the end names what went wrong and not
 * only the attempt the deadline cut short.
 *
 * <p>A retry never starts with less than {@link #ATTEMPT_MIN_NANOS} left. The pause before it may end past the deadline
 * even when it was shorter than the time left (a thread descheduled on a loaded machine oversleeps); an attempt
 * started then would get no time, or too little for a round trip, and fail DEADLINE_EXCEEDED, hiding the error that
 * made the call retry.
 * Not thread-safe: one per call.
 */
final class RetryBudget {
    static final long BACKOFF_INITIAL_NANOS = MILLISECONDS.toNanos(20);
    /**
     * The longest pause between retries. An election takes up to about a second (a 400–800 ms timeout, then the
     * vote); a client then asleep in a longer pause adds it to the failover (with 500 ms, {@code fencer bench failover}
     * measured 0.2–0.8 s from a known new leader to the next grant). Pauses of 100–200 ms keep one client's
     * retries at a leaderless group to at most ten a second.
     */
    static final long BACKOFF_MAX_NANOS = MILLISECONDS.toNanos(200);
    /**
     * The least time a retry starts with: a loopback round trip takes well under a millisecond, but on a loaded
     * machine a connection's refusal or a server's answer can take a few, and an attempt cut shorter reports a
     * deadline instead of what the peer said. (CI met a last attempt started with under a millisecond left.)
     */
    static final long ATTEMPT_MIN_NANOS = MILLISECONDS.toNanos(10);

    /** How a retry waits: {@link #SYSTEM}, or in tests one that oversleeps as a descheduled thread does. */
    @FunctionalInterface
    interface Sleeper {
        void sleep(long nanos) throws InterruptedException;
    }

    static final Sleeper SYSTEM = NANOSECONDS::sleep;

    private final long startNanos = System.nanoTime();
    private long deadlineNanos;
    private final Sleeper sleeper;
    /** Whether the call may change state: only then may an unknown outcome have taken effect. */
    private final boolean changesState;
    /** Whether every failure so far found nothing at its address (refused, unknown host): see {@link Unreachable}. */
    private boolean unreachableOnly = true;
    /** Whether every failure so far reached no server: those, or a deadline passed while waiting for a connection. */
    private boolean neverSent = true;
    /** Why the latest failure that named a reason made no connection ("connection refused"), or null. */
    private String whyUnreachable;
    private long backoffNanos = BACKOFF_INITIAL_NANOS;
    private StatusRuntimeException last;
    private StatusRuntimeException beforeLast;

    RetryBudget(long budgetNanos, Sleeper sleeper) {
        this(budgetNanos, sleeper, true);
    }

    /** Makes the budget of a call that changes state, or of a read ({@code changesState} false). */
    RetryBudget(long budgetNanos, Sleeper sleeper, boolean changesState) {
        if (budgetNanos <= 0) {
            throw new IllegalArgumentException("budget must be positive: " + budgetNanos + " ns");
        }
        this.deadlineNanos = System.nanoTime() + budgetNanos;
        this.sleeper = sleeper;
        this.changesState = changesState;
    }

    /** Moves the deadline to {@code nanos} (on {@link System#nanoTime()}) when that is later; never earlier. */
    void extendTo(long nanos) {
        if (nanos - deadlineNanos > 0) {
            deadlineNanos = nanos;
        }
    }

    /** Returns the call's budget: its own, or longer once {@link #extendTo} moved the deadline. */
    long budgetNanos() {
        return deadlineNanos - startNanos;
    }

    /** Returns the time left for the next attempt: at least 1 ns, since the first attempt always runs. */
    long remainingNanos() {
        return Math.max(1, deadlineNanos - System.nanoTime());
    }

    /** Returns the next backoff pause, with jitter, and doubles the backoff up to {@link #BACKOFF_MAX_NANOS}. */
    long nextBackoffNanos() {
        long pauseNanos = jitter(backoffNanos);
        backoffNanos = Math.min(backoffNanos * 2, BACKOFF_MAX_NANOS);
        return pauseNanos;
    }

    /** Returns a pause between half and all of {@code nanos}, so that many clients do not retry in step. */
    static long jitter(long nanos) {
        return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
    }

    /** Records {@code failure} as the latest failed attempt's, for {@link #lastErrors()}. */
    void failed(StatusRuntimeException failure) {
        beforeLast = last;
        last = failure;
        Optional<String> why = Unreachable.why(failure);
        unreachableOnly &= why.isPresent();
        neverSent &= Unreachable.neverSent(failure);
        whyUnreachable = why.orElse(whyUnreachable);
    }

    /**
     * Returns true when every attempt so far found nothing at its address (refused, no route, unknown host) and
     * {@code boundNanos} have passed since the call began: nothing runs at the addresses tried, and waiting longer
     * helps only a server that is starting. A connection still being made when an attempt's deadline passed does not
     * count: something may be there, slow.
     */
    boolean unreachableFor(long boundNanos) {
        return last != null && unreachableOnly && elapsedNanos() >= boundNanos;
    }

    /**
     * Returns true when at least one attempt failed and none reached a server (refused, no route, unknown host, or
     * no connection made before the attempt's deadline): nothing of this call was sent, whichever bound ends it.
     */
    boolean reachedNoServer() {
        return last != null && neverSent;
    }

    /**
     * Returns why the call reached no server, for a call {@link #reachedNoServer}: the latest reason a connection
     * failed with ("connection refused"), else that no connection was ready in time.
     */
    String whyUnreachable() {
        return whyUnreachable != null ? whyUnreachable : "connection not ready";
    }

    /** Returns the time since the call began. */
    long elapsedNanos() {
        return System.nanoTime() - startNanos;
    }

    /**
     * Returns what an unknown outcome means for this call: nothing was sent when no attempt reached a server; else a
     * read changed nothing, and another call may have.
     */
    String outcome() {
        if (reachedNoServer()) {
            return "; nothing was sent";
        }
        return changesState ? "; the call may or may not have taken effect" : "; a read, it changed nothing";
    }

    /**
     * Returns the failure of a call whose thread was interrupted during an attempt, which it gave up (cancelled): the
     * interrupt is the whole story, and what the attempt did is as unknown as after any lost answer. The thread's
     * interrupt is left set.
     */
    UnavailableException interrupted(String operation) {
        return new UnavailableException(operation + " was interrupted" + outcome(), last);
    }

    /** Returns the latest failure recorded. */
    StatusRuntimeException lastFailure() {
        return last;
    }

    /**
     * Waits {@code pauseNanos} before a retry and returns true when the retry may start: false, without waiting,
     * when the pause would leave less than {@link #ATTEMPT_MIN_NANOS} before the deadline, and false after waiting
     * when less than that is left.
     *
     * @throws UnavailableException naming {@code operation} and the last errors when interrupted while waiting;
     *     the thread's interrupt is kept
     */
    boolean pauseBeforeRetry(String operation, long pauseNanos) {
        if (System.nanoTime() + pauseNanos + ATTEMPT_MIN_NANOS - deadlineNanos > 0) {
            return false;
        }
        if (pauseNanos > 0) {
            try {
                sleeper.sleep(pauseNanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new UnavailableException(operation + " was interrupted while retrying; last error: "
                        + lastErrors() + outcome(), last);
            }
        }
        return deadlineNanos - System.nanoTime() >= ATTEMPT_MIN_NANOS;
    }

    /**
     * Returns the latest failure, described, and the one before it when it differs: an attempt cut short by the
     * deadline fails DEADLINE_EXCEEDED, and the reason the call kept retrying is the error before it.
     */
    String lastErrors() {
        String latest = Router.describe(last);
        if (beforeLast == null) {
            return latest;
        }
        String previous = Router.describe(beforeLast);
        return previous.equals(latest) ? latest : latest + "; the error before it: " + previous;
    }
}

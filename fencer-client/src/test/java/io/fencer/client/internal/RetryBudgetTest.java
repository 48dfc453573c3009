package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.UnavailableException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.ConnectException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class RetryBudgetTest {
    private final List<Long> slept = new ArrayList<>();

    @Test
    void pauseBeforeRetry_timeLeftAfterThePause_sleepsAndAllowsTheRetry() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(60_000), slept::add);

        assertThat(budget.pauseBeforeRetry("Describe orders", MILLISECONDS.toNanos(20))).isTrue();
        assertThat(slept).containsExactly(MILLISECONDS.toNanos(20));
    }

    @Test
    void pauseBeforeRetry_pauseEndingPastTheDeadline_refusesWithoutSleeping() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(10_000), slept::add);

        assertThat(budget.pauseBeforeRetry("Describe orders", MILLISECONDS.toNanos(20_000))).isFalse();
        assertThat(slept).isEmpty();
    }

    @Test
    void pauseBeforeRetry_sleepOverrunsTheDeadline_refusesTheRetry() {
        long budgetNanos = MILLISECONDS.toNanos(50);
        // a thread descheduled while it pauses wakes late: here always past the deadline
        RetryBudget budget = new RetryBudget(budgetNanos, nanos -> NANOSECONDS.sleep(nanos + budgetNanos));

        assertThat(budget.pauseBeforeRetry("Describe orders", MILLISECONDS.toNanos(1))).isFalse();
        assertThat(budget.remainingNanos()).isEqualTo(1);
    }

    @Test
    void pauseBeforeRetry_pauseLeavingLessThanAnAttemptsLeast_refusesWithoutSleeping() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(10_000), slept::add);

        long pauseNanos = MILLISECONDS.toNanos(10_000) - RetryBudget.ATTEMPT_MIN_NANOS / 2;
        assertThat(budget.pauseBeforeRetry("Describe orders", pauseNanos)).isFalse();
        assertThat(slept).isEmpty();
    }

    /** Regression: a retry started with under a millisecond left failed DEADLINE_EXCEEDED before its peer answered. */
    @Test
    void pauseBeforeRetry_sleepEndsWithLessThanAnAttemptsLeastLeft_refusesTheRetry() {
        AtomicReference<RetryBudget> self = new AtomicReference<>();
        // wakes half an attempt's least before the deadline, or later: time left, but too little for a round trip
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(200), nanos -> NANOSECONDS.sleep(
                self.get().remainingNanos() - RetryBudget.ATTEMPT_MIN_NANOS / 2));
        self.set(budget);

        assertThat(budget.pauseBeforeRetry("Describe orders", MILLISECONDS.toNanos(1))).isFalse();
        assertThat(budget.remainingNanos()).isLessThan(RetryBudget.ATTEMPT_MIN_NANOS);
    }

    @Test
    void pauseBeforeRetry_interrupted_failsUnavailableNamingTheLastErrorAndKeepsTheInterrupt() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(60_000), nanos -> {
            throw new InterruptedException();
        });
        budget.failed(Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException());
        try {
            assertThatThrownBy(() -> budget.pauseBeforeRetry("Describe orders", MILLISECONDS.toNanos(20)))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessage("Describe orders was interrupted while retrying; last error: UNAVAILABLE: "
                            + "connection refused; the call may or may not have taken effect")
                    .hasCause(budget.lastFailure());
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    /**
     * Regression: a call whose thread was interrupted mid-attempt failed with the bare "CANCELLED: the calling thread
     * was interrupted", never saying that a call that changes state may have taken effect.
     */
    @Test
    void interrupted_duringAnAttemptThatChangesState_saysItMayHaveTakenEffect() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(60_000), slept::add, true);
        budget.failed(Status.CANCELLED.withDescription("the calling thread was interrupted").asRuntimeException());

        assertThat(budget.interrupted("Write orders/1")).isInstanceOf(UnavailableException.class)
                .hasMessage("Write orders/1 was interrupted; the call may or may not have taken effect")
                .hasCause(budget.lastFailure());
    }

    @Test
    void interrupted_duringARead_saysItChangedNothing() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(60_000), slept::add, false);
        budget.failed(Status.CANCELLED.withDescription("the calling thread was interrupted").asRuntimeException());

        assertThat(budget.interrupted("Describe orders")).hasMessage("Describe orders was interrupted; a read, it"
                + " changed nothing");
    }

    @Test
    void nextBackoffNanos_doublesWithJitterUpToTheMaximum() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        long expected = RetryBudget.BACKOFF_INITIAL_NANOS;
        for (int retry = 0; retry < 10; retry++) {
            assertThat(budget.nextBackoffNanos()).as("retry %d", retry).isBetween(expected / 2, expected);
            expected = Math.min(expected * 2, RetryBudget.BACKOFF_MAX_NANOS);
        }
        assertThat(expected).isEqualTo(RetryBudget.BACKOFF_MAX_NANOS);
    }

    @Test
    void lastErrors_attemptCutShortByTheDeadline_namesTheErrorBeforeIt() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        budget.failed(Status.UNAVAILABLE.withDescription("no leader yet").asRuntimeException());
        budget.failed(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after 0 ms").asRuntimeException());

        assertThat(budget.lastErrors()).isEqualTo("DEADLINE_EXCEEDED: deadline exceeded after 0 ms; "
                + "the error before it: UNAVAILABLE: no leader yet");
        assertThat(budget.lastFailure().getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    }

    @Test
    void lastErrors_sameErrorTwice_namesItOnce() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        budget.failed(Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException());
        budget.failed(Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException());

        assertThat(budget.lastErrors()).isEqualTo("UNAVAILABLE: connection refused");
    }

    @Test
    void outcome_everyAttemptRefused_saysNothingWasSentUntilOneReachesAServer() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        assertThat(budget.reachedNoServer()).as("before any attempt failed").isFalse();
        budget.failed(refused());
        budget.failed(refused());

        assertThat(budget.reachedNoServer()).isTrue();
        assertThat(budget.outcome()).isEqualTo("; nothing was sent");

        budget.failed(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after 0 ms").asRuntimeException());
        assertThat(budget.reachedNoServer()).isFalse();
        assertThat(budget.outcome()).isEqualTo("; the call may or may not have taken effect");
    }

    @Test
    void outcome_lastAttemptCutShortBeforeAnyConnection_stillSaysNothingWasSentAndWhyTheOthersFailed() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        budget.failed(refused());
        budget.failed(Unreachable.noConnectionWithin(0));

        assertThat(budget.reachedNoServer()).isTrue();
        assertThat(budget.outcome()).isEqualTo("; nothing was sent");
        assertThat(budget.whyUnreachable()).isEqualTo("connection refused");
        assertThat(budget.unreachableFor(0)).as("a connection still being made may find a slow server").isFalse();
    }

    @Test
    void whyUnreachable_noAttemptEverConnected_saysTheConnectionWasNotReady() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add);
        budget.failed(Unreachable.noConnectionWithin(MILLISECONDS.toNanos(300)));

        assertThat(budget.reachedNoServer()).isTrue();
        assertThat(budget.whyUnreachable()).isEqualTo("connection not ready");
    }

    @Test
    void outcome_readThatReachedAServer_saysItChangedNothing() {
        RetryBudget budget = new RetryBudget(MILLISECONDS.toNanos(1_000), slept::add, false);
        budget.failed(Status.UNAVAILABLE.withDescription("connection reset").asRuntimeException());

        assertThat(budget.outcome()).isEqualTo("; a read, it changed nothing");
    }

    private static StatusRuntimeException refused() {
        return Status.UNAVAILABLE.withDescription("io exception")
                .withCause(new ConnectException("Connection refused")).asRuntimeException();
    }

    @Test
    void constructor_budgetNotPositive_failsNamingIt() {
        assertThatThrownBy(() -> new RetryBudget(0, slept::add))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("budget must be positive: 0 ns");
    }
}

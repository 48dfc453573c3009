package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.core.ManualTicker;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.Ticker;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * A pipelined call's wait at its deadline. The waiter's clock is driven by hand, and the transport's part (take the
 * call from those in flight, then tell its waiter) is played by the test at the exact reading where the waiter
 * decides that its deadline has passed: the one moment a real answer can slip between the waiter's two checks.
 */
class PipelineWaiterTest {
    private static final long CALL_ID = 7;
    private static final long TIMEOUT_NANOS = Duration.ofMillis(500).toNanos();
    private static final String GRANT = "granted orders#41";

    /** The calls in flight, keyed by call id, as a pipeline stream keeps them. */
    private final Map<Long, Pipeline.Waiter<String>> inFlight = new ConcurrentHashMap<>();
    private final AtomicBoolean cancelSent = new AtomicBoolean();

    /** As the stream's abandon: the call is forgotten and a cancel sent, unless the transport took it first. */
    private boolean abandon() {
        if (inFlight.remove(CALL_ID) == null) {
            return false;
        }
        cancelSent.set(true);
        return true;
    }

    /** Returns a ticker at the deadline from its second reading on, which first runs {@code atDeadline}. */
    private static Ticker deadlinePassingAt(Runnable atDeadline) {
        AtomicInteger readings = new AtomicInteger();
        return () -> {
            if (readings.incrementAndGet() == 1) {
                return ManualTicker.START_NANOS; // the reading the deadline is counted from
            }
            if (readings.get() == 2) {
                atDeadline.run();
            }
            return ManualTicker.START_NANOS + TIMEOUT_NANOS;
        };
    }

    private Pipeline.Waiter<String> waiter(Runnable atDeadline) {
        Pipeline.Waiter<String> waiter = new Pipeline.Waiter<>(Thread.currentThread(), deadlinePassingAt(atDeadline));
        inFlight.put(CALL_ID, waiter);
        return waiter;
    }

    @Test
    void await_answerLandsAsTheDeadlinePasses_returnsTheAnswer() {
        Pipeline.Waiter<String> waiter = waiter(() -> inFlight.remove(CALL_ID).complete(GRANT));

        String answer = waiter.await(TIMEOUT_NANOS, null, this::abandon);

        assertThat(answer).as("the grant the service sent, not a timeout that hides it").isEqualTo(GRANT);
        assertThat(cancelSent).as("nothing to cancel: the call was answered").isFalse();
    }

    @Test
    void await_answerTakenButNotYetToldAsTheDeadlinePasses_waitsForIt() throws InterruptedException {
        AtomicReference<Thread> transport = new AtomicReference<>();
        Pipeline.Waiter<String> waiter = waiter(() -> {
            // The transport's thread took the call from those in flight and is about to tell its waiter.
            Pipeline.Waiter<String> taken = inFlight.remove(CALL_ID);
            transport.set(new Thread(() -> taken.complete(GRANT)));
        });

        String answer = waiter.await(TIMEOUT_NANOS, null, () -> {
            boolean forgotten = abandon();
            transport.get().start(); // the answer is told only after the waiter tried to take the call back
            return forgotten;
        });
        transport.get().join();

        assertThat(answer).isEqualTo(GRANT);
        assertThat(cancelSent).isFalse();
    }

    @Test
    void await_streamEndsAsTheDeadlinePasses_throwsTheStreamsFailure() {
        StatusRuntimeException streamEnded = Status.UNAVAILABLE.withDescription("the peer went away")
                .asRuntimeException();
        Pipeline.Waiter<String> waiter = waiter(() -> inFlight.remove(CALL_ID).fail(streamEnded));

        StatusRuntimeException failure = catchThrowableOfType(
                () -> waiter.await(TIMEOUT_NANOS, null, this::abandon), StatusRuntimeException.class);

        assertThat(failure).isSameAs(streamEnded);
    }

    @Test
    void await_noAnswerByTheDeadline_cancelsTheCallAndFailsDeadlineExceeded() {
        Pipeline.Waiter<String> waiter = waiter(() -> { });

        StatusRuntimeException failure = catchThrowableOfType(
                () -> waiter.await(TIMEOUT_NANOS, null, this::abandon), StatusRuntimeException.class);

        assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(failure.getStatus().getDescription())
                .isEqualTo("deadline exceeded after 500 ms (enforced by the client)");
        assertThat(cancelSent).isTrue();
        assertThat(inFlight).isEmpty();
    }

    /**
     * An abort (the session ended while the acquire waited) that names its failure in the same instant as the
     * transport takes the call's answer: {@code why} plays the transport, then says why the wait ends.
     */
    private Router.Abort sessionEndedAsTheAnswerLands(Runnable asTheSessionEnds) {
        return new Router.Abort() {
            @Override
            public RuntimeException why() {
                asTheSessionEnds.run();
                return new SessionExpiredException(3, "Acquire of lock 'orders' gave up its wait:"
                        + " session 3 is lost (UNREACHABLE)");
            }

            @Override
            public long askAgainInNanos() {
                return Duration.ofMillis(1).toNanos();
            }
        };
    }

    /** The waiter's clock, frozen: only the abort ends these waits. */
    private Pipeline.Waiter<String> waiterWithoutDeadline() {
        Pipeline.Waiter<String> waiter = new Pipeline.Waiter<>(Thread.currentThread(), new ManualTicker());
        inFlight.put(CALL_ID, waiter);
        return waiter;
    }

    @Test
    void await_answerLandsAsTheSessionEndAborts_returnsTheAnswer() {
        Pipeline.Waiter<String> waiter = waiterWithoutDeadline();
        Router.Abort abort = sessionEndedAsTheAnswerLands(() -> inFlight.remove(CALL_ID).complete(GRANT));

        String answer = waiter.await(TIMEOUT_NANOS, abort, this::abandon);

        assertThat(answer).as("the grant, which the acquire gives back as the session ended (checkHandOut), not a"
                + " session's end that leaves it held on the service").isEqualTo(GRANT);
        assertThat(cancelSent).as("nothing to cancel: the call was answered").isFalse();
    }

    @Test
    void await_sessionEndAbortsWithNoAnswer_cancelsTheCallAndThrowsTheAbort() {
        Pipeline.Waiter<String> waiter = waiterWithoutDeadline();
        Router.Abort abort = sessionEndedAsTheAnswerLands(() -> { });

        SessionExpiredException failure = catchThrowableOfType(
                () -> waiter.await(TIMEOUT_NANOS, abort, this::abandon), SessionExpiredException.class);

        assertThat(failure).hasMessageContaining("gave up its wait");
        assertThat(cancelSent).isTrue();
        assertThat(inFlight).isEmpty();
    }
}

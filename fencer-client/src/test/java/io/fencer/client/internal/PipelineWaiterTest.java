package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.core.ManualTicker;
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
}

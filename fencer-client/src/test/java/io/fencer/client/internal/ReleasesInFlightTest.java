package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The count of releases sent without waiting: its bound, and the wait of a read for those sent before it. */
class ReleasesInFlightTest {
    private final ReleasesInFlight inFlight = new ReleasesInFlight();

    @Test
    void begin_withTheMostUnanswered_returnsZeroUntilOneIsAnswered() {
        long first = inFlight.begin();
        for (int i = 1; i < ReleasesInFlight.IN_FLIGHT_MAX; i++) {
            assertThat(inFlight.begin()).isPositive();
        }

        assertThat(inFlight.begin()).as("over the bound").isZero();
        inFlight.answered(first);
        assertThat(inFlight.begin()).isPositive();
        assertThat(inFlight.unansweredCount()).isEqualTo(ReleasesInFlight.IN_FLIGHT_MAX);
    }

    @Test
    void awaitAnsweredBefore_waitsForTheEarlierOnesOnly() throws Exception {
        long earlier = inFlight.begin();
        CompletableFuture<Boolean> read = CompletableFuture.supplyAsync(() -> {
            try {
                return inFlight.awaitAnsweredBefore(TimeUnit.SECONDS.toNanos(10));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(200);
        long later = inFlight.begin(); // begun after the read: the read does not wait for it

        assertThat(read).as("waiting for the earlier release").isNotDone();
        inFlight.answered(earlier);
        assertThat(read.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(inFlight.unansweredCount()).isEqualTo(1);
        inFlight.answered(later);
    }

    @Test
    void awaitAnsweredBefore_noAnswerWithinTheTimeout_returnsFalse() throws Exception {
        inFlight.begin();

        assertThat(inFlight.awaitAnsweredBefore(TimeUnit.MILLISECONDS.toNanos(50))).isFalse();
    }

    @Test
    void answered_twice_isRefused() {
        long ticket = inFlight.begin();
        inFlight.answered(ticket);

        assertThatThrownBy(() -> inFlight.answered(ticket)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(Long.toString(ticket));
    }
}

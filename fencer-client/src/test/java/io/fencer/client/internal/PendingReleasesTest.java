package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.DurableMark;
import io.fencer.core.FencingToken;
import org.junit.jupiter.api.Test;

/** What a session keeps of the releases answered before they were durable, and what a durable mark does to them. */
class PendingReleasesTest {
    private final PendingReleases pending = new PendingReleases();

    @Test
    void observe_aMarkOfTheSameIncarnation_confirmsUpToItsSequenceAndKeepsTheRest() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);
        pending.add(new FencingToken("b", 2), "peer-0", 7);

        assertThat(pending.observe(mark("peer-0", 6))).as("nothing to re-send").isEmpty();

        assertThat(pending.size()).as("the release at 7 waits").isEqualTo(1);
        assertThat(pending.observe(mark("peer-0", 7))).isEmpty();
        assertThat(pending.size()).isZero();
    }

    @Test
    void observe_aMarkOfAnotherIncarnation_returnsEveryReleaseOfTheOldOneToResendOnce() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);
        pending.add(new FencingToken("b", 2), "peer-0", 7);

        assertThat(pending.observe(mark("peer-1", 100))).containsExactly(new FencingToken("a", 1),
                new FencingToken("b", 2));
        assertThat(pending.observe(mark("peer-1", 100))).as("taken once").isEmpty();
    }

    @Test
    void observe_aMarkWithoutIncarnation_decidesNothing() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);

        assertThat(pending.observe(DurableMark.getDefaultInstance())).isEmpty();
        assertThat(pending.size()).isEqualTo(1);
    }

    @Test
    void retry_aReleaseWhoseResendFailed_isResentAtTheNextMarkOfAnyIncarnation() {
        pending.retry(new FencingToken("a", 1));

        assertThat(pending.observe(mark("peer-1", Long.MAX_VALUE - 1))).containsExactly(new FencingToken("a", 1));
    }

    @Test
    void hasRoom_afterTheMostKept_isFalseUntilAMarkConfirmsThem() {
        for (int i = 1; i <= PendingReleases.PENDING_MAX; i++) {
            pending.add(new FencingToken("a", i), "peer-0", i);
        }

        assertThat(pending.hasRoom()).isFalse();
        pending.observe(mark("peer-0", PendingReleases.PENDING_MAX));
        assertThat(pending.hasRoom()).isTrue();
    }

    @Test
    void add_aSequenceOfZero_isRefused() {
        assertThatThrownBy(() -> pending.add(new FencingToken("a", 1), "peer-0", 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
    }

    private static DurableMark mark(String incarnation, long sequence) {
        return DurableMark.newBuilder().setIncarnation(incarnation).setSequence(sequence).build();
    }
}

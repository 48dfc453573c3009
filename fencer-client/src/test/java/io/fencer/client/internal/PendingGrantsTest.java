package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.DurableMark;
import io.fencer.core.FencingToken;
import org.junit.jupiter.api.Test;

/** What a session keeps of the grants answered before they were durable, and what a durable mark does to them. */
class PendingGrantsTest {
    private final PendingGrants pending = new PendingGrants();

    @Test
    void observe_aMarkOfTheSameIncarnation_confirmsUpToItsSequenceAndKeepsTheRest() {
        assertThat(pending.add(new FencingToken("a", 1), "peer-0", 5)).isTrue();
        assertThat(pending.add(new FencingToken("b", 2), "peer-0", 7)).isTrue();

        assertThat(pending.observe(mark("peer-0", 6))).as("nothing lost").isEmpty();

        assertThat(pending.size()).as("the grant at 7 waits").isEqualTo(1);
        assertThat(pending.observe(mark("peer-0", 7))).isEmpty();
        assertThat(pending.size()).isZero();
    }

    @Test
    void observe_aMarkOfAnotherIncarnation_returnsEveryGrantOfTheOldOneAsLostOnce() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);
        pending.add(new FencingToken("b", 2), "peer-0", 7);

        assertThat(pending.observe(mark("peer-1", 100))).containsExactly(
                new PendingGrants.Lost(new FencingToken("a", 1), 0),
                new PendingGrants.Lost(new FencingToken("b", 2), 0));
        assertThat(pending.observe(mark("peer-1", 100))).as("taken once").isEmpty();
        assertThat(pending.size()).isZero();
    }

    @Test
    void observe_aMarkWithoutIncarnation_decidesNothing() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);

        assertThat(pending.observe(DurableMark.getDefaultInstance())).isEmpty();
        assertThat(pending.size()).isEqualTo(1);
        assertThat(pending.add(new FencingToken("b", 1), "peer-0", 6)).as("nor does it change the incarnation seen")
                .isTrue();
    }

    @Test
    void add_afterAMarkOfAnotherIncarnation_keepsNothingAndSaysItIsLost() {
        pending.observe(mark("peer-1", 3));

        assertThat(pending.add(new FencingToken("a", 1), "peer-0", 5)).isFalse();
        assertThat(pending.size()).isZero();
        assertThat(pending.add(new FencingToken("a", 2), "peer-1", 5)).as("one of the incarnation seen").isTrue();
    }

    @Test
    void add_theSameGrantAnsweredAgain_keepsOneEntryAtTheLaterSequence() {
        pending.add(new FencingToken("a", 1), "peer-0", 5);
        pending.add(new FencingToken("a", 1), "peer-0", 8);

        assertThat(pending.size()).isEqualTo(1);
        assertThat(pending.observe(mark("peer-0", 5))).isEmpty();
        assertThat(pending.size()).as("confirmed at 8 only").isEqualTo(1);
    }

    @Test
    void hasRoom_afterTheMostKept_isFalseUntilAMarkConfirmsThem() {
        for (int i = 1; i <= PendingGrants.PENDING_MAX; i++) {
            pending.add(new FencingToken("a", i), "peer-0", i);
        }

        assertThat(pending.hasRoom()).isFalse();
        pending.observe(mark("peer-0", PendingGrants.PENDING_MAX));
        assertThat(pending.hasRoom()).isTrue();
    }

    @Test
    void retry_aGrantWhosePlaceWasNotGivenUp_returnsAtTheNextMarkOfAnyIncarnationUntilTheMostAttempts() {
        PendingGrants.Lost lost = new PendingGrants.Lost(new FencingToken("a", 1), 0);
        for (int attempt = 1; attempt < PendingGrants.ATTEMPTS_MAX; attempt++) {
            assertThat(pending.retry(lost)).isTrue();
            lost = pending.observe(mark("peer-1", Long.MAX_VALUE - 1)).get(0);
            assertThat(lost.attemptsBefore()).isEqualTo(attempt);
        }

        assertThat(pending.retry(lost)).as("the last attempt was made").isFalse();
        assertThat(pending.size()).isZero();
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

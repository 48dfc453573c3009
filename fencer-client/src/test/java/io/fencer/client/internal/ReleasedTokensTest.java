package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import org.junit.jupiter.api.Test;

class ReleasedTokensTest {
    private final ReleasedTokens released = new ReleasedTokens();

    @Test
    void covers_tokensAtOrBelowTheHighestReleasedOfTheLock_trueAndFalseAbove() {
        released.releasing(token("orders", 7));
        released.releasing(token("orders", 5)); // an earlier grant's release, answered late: the highest stays

        assertThat(released.covers(token("orders", 7))).isTrue();
        assertThat(released.covers(token("orders", 3))).isTrue();
        assertThat(released.covers(token("orders", 8))).as("a new grant").isFalse();
        assertThat(released.covers(token("billing", 1))).as("another lock").isFalse();
    }

    @Test
    void releasing_beyondTheBound_forgetsTheLeastRecentlyReleasedLock() {
        released.releasing(token("first", 1));
        released.releasing(token("second", 1));
        for (int i = 0; i < ReleasedTokens.LOCKS_MAX - 2; i++) {
            released.releasing(token("lock-" + i, 1));
        }
        released.releasing(token("first", 2)); // released again: now the most recent

        released.releasing(token("one-more", 1));

        assertThat(released.size()).isEqualTo(ReleasedTokens.LOCKS_MAX);
        assertThat(released.covers(token("second", 1))).as("the least recently released, forgotten").isFalse();
        assertThat(released.covers(token("first", 2))).as("kept: released again lately").isTrue();
        assertThat(released.covers(token("one-more", 1))).isTrue();
    }

    private static FencingToken token(String lock, long value) {
        return new FencingToken(lock, value);
    }
}

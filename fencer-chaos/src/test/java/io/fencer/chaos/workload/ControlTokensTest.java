package io.fencer.chaos.workload;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * The control's tokens. Regression: the control wrote with a constant token 1, which a hosted store takes as a
 * scope's first write only while 1 is the lock's current grant; when the first holder's write was lost, a replicated
 * store chaos run's control had every one of its 325 writes refused, found no lost update, and failed its test.
 */
class ControlTokensTest {
    /** The scopes' accepted tokens, as the store would answer; absent when the scope does not exist. */
    private final Map<String, Long> store = new HashMap<>();
    private int reads;
    private final ControlTokens tokens = new ControlTokens(scope -> {
        reads++;
        Long accepted = store.get(scope);
        return accepted == null ? OptionalLong.empty() : OptionalLong.of(accepted);
    });

    @Test
    void sequencer_scopeNotCreatedYetAndTheLockPastItsFirstGrant_isTheWritersOwnCurrentGrant() {
        FencingToken grant = new FencingToken("chaos", 9);

        assertThat(tokens.sequencer("chaos", grant)).isEqualTo(grant.sequencer());
    }

    @Test
    void sequencer_scopeExists_isItsAcceptedTokenForEveryWriterAskedOnce() {
        store.put("chaos", 9L);

        String first = tokens.sequencer("chaos", new FencingToken("chaos", 12));
        String later = tokens.sequencer("chaos", new FencingToken("chaos", 15));

        assertThat(first).isEqualTo(new FencingToken("chaos", 9).sequencer());
        assertThat(later).isEqualTo(first);
        assertThat(reads).isEqualTo(1);
    }

    @Test
    void sequencer_afterARefusal_readsTheAcceptedTokenAgain() {
        store.put("chaos", 9L);
        tokens.sequencer("chaos", new FencingToken("chaos", 12));
        store.put("chaos", 10L); // another worker's first write raced this one's and raised it

        tokens.refused("chaos");

        assertThat(tokens.sequencer("chaos", new FencingToken("chaos", 13)))
                .isEqualTo(new FencingToken("chaos", 10).sequencer());
    }
}

package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The lock mode in tokens, sequencers, signatures and the in-process fence. */
class LockModeTest {
    private final FencingToken shared = new FencingToken("orders", 7, LockMode.SHARED);
    private final FencingToken exclusive = new FencingToken("orders", 7);

    @Test
    void format_exclusiveToken_isTheFormatOfTheReleaseBeforeModes() {
        assertThat(exclusive.mode()).isEqualTo(LockMode.EXCLUSIVE);
        assertThat(exclusive.sequencer()).isEqualTo("fencer1.b3JkZXJz.7");
        assertThat(Sequencer.parse("fencer1.b3JkZXJz.7").mode()).isEqualTo(LockMode.EXCLUSIVE);
    }

    @Test
    void format_sharedToken_appendsTheModeAndRoundTrips() {
        assertThat(shared.sequencer()).isEqualTo("fencer1.b3JkZXJz.7.shared");
        assertThat(Sequencer.parse(shared.sequencer())).isEqualTo(shared);
        assertThat(shared).isNotEqualTo(exclusive);
        assertThat(shared.toString()).isEqualTo("orders#7(shared)");
    }

    @Test
    void parse_explicitExclusiveMode_isExclusive() {
        assertThat(Sequencer.parse("fencer1.b3JkZXJz.7.exclusive")).isEqualTo(exclusive);
    }

    @Test
    void parse_unknownMode_isInvalidArgumentNamingTheMode() {
        assertThatThrownBy(() -> Sequencer.parse("fencer1.b3JkZXJz.7.upgradable"))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("sequencer");
                    assertThat(e.value()).isEqualTo("fencer1.b3JkZXJz.7.upgradable");
                })
                .hasMessageContaining("unknown mode 'upgradable'");
    }

    @Test
    void parse_signedSharedToken_verifiesAndKeepsTheMode() {
        TokenKeys keys = TokenKeys.generate("k1");
        String signed = shared.sequencer(keys);
        assertThat(signed.split("\\.", -1)).hasSize(6);
        assertThat(Sequencer.parse(signed, keys)).isEqualTo(shared);
    }

    @Test
    void parse_signedSharedTokenWithTheModeStripped_failsTheSignature() {
        TokenKeys keys = TokenKeys.generate("k1");
        String signed = shared.sequencer(keys);
        String claimedExclusive = signed.replace(".shared.", ".");
        assertThatThrownBy(() -> Sequencer.parse(claimedExclusive, keys))
                .isInstanceOf(BadTokenSignatureException.class);
        String claimedExclusiveExplicitly = signed.replace(".shared.", ".exclusive.");
        assertThatThrownBy(() -> Sequencer.parse(claimedExclusiveExplicitly, keys))
                .isInstanceOf(BadTokenSignatureException.class);
    }

    @Test
    void fenceCall_sharedToken_isModeMismatchAndAcceptsNothing() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        assertThatThrownBy(() -> fence.run(shared, () -> { }))
                .isInstanceOfSatisfying(ModeMismatchException.class, e -> {
                    assertThat(e.reason()).isEqualTo(ErrorReason.MODE_MISMATCH);
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.presented()).isEqualTo(7);
                })
                .hasMessageContaining("orders#7").hasMessageContaining("shared");
        assertThat(fence.accepted()).isEqualTo(FencingToken.NONE);
    }

    @Test
    void fenceCheck_sharedToken_isAFencedReadComparedAsAnyToken() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        fence.check(shared);
        fence.run(new FencingToken("orders", 8), () -> { });
        assertThatThrownBy(() -> fence.check(shared)).isInstanceOf(StaleTokenException.class);
        fence.check(new FencingToken("orders", 9, LockMode.SHARED));
    }

    @Test
    void ofText_unknown_isInvalidArgumentNamingIt() {
        assertThatThrownBy(() -> LockMode.ofText("read"))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("read"));
    }
}

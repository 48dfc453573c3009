package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FenceTest {
    private final List<String> data = new ArrayList<>();

    @Test
    void write_withOlderTokenAfterNewer_isRefusedWithAccepted() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        fence.run(new FencingToken("orders", 32), () -> data.add("B"));
        assertThatThrownBy(() -> fence.run(new FencingToken("orders", 31), () -> data.add("A")))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.accepted()).isEqualTo(32);
                    assertThat(e.presented()).isEqualTo(31);
                    assertThat(e.scope()).isEqualTo("orders");
                });
        assertThat(data).containsExactly("B");
        assertThat(fence.accepted()).isEqualTo(32);
    }

    @Test
    void atLeast_admitsRepeatedWritesOfCurrentHolder_strictRefusesThem() {
        Fence atLeast = Fence.create("orders", FencePolicy.AT_LEAST);
        Fence strict = Fence.create("orders", FencePolicy.STRICT);
        FencingToken token = new FencingToken("orders", 7);
        atLeast.run(token, () -> data.add("1"));
        atLeast.run(token, () -> data.add("2"));
        strict.run(token, () -> data.add("3"));
        assertThatThrownBy(() -> strict.run(token, () -> data.add("4"))).isInstanceOf(StaleTokenException.class);
        assertThat(data).containsExactly("1", "2", "3");
    }

    @Test
    void write_withTokenOfAnotherLock_isScopeMismatchNotCompared() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        assertThatThrownBy(() -> fence.run(new FencingToken("payments", 99), () -> data.add("x")))
                .isInstanceOf(ScopeMismatchException.class).hasMessageContaining("payments");
        assertThat(fence.accepted()).isZero();
        assertThat(data).isEmpty();
    }

    @Test
    void mutationThatThrows_leavesAcceptedUnchanged() {
        Fence fence = Fence.create("orders", FencePolicy.STRICT, 5);
        assertThatThrownBy(() -> fence.run(new FencingToken("orders", 6), () -> {
            throw new IllegalStateException("disk full");
        })).hasMessage("disk full");
        assertThat(fence.accepted()).isEqualTo(5);
        fence.run(new FencingToken("orders", 6), () -> data.add("ok"));
        assertThat(fence.accepted()).isEqualTo(6);
    }

    @Test
    void create_resumingFromDurableAccepted_refusesOlder() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST, 40);
        assertThatThrownBy(() -> fence.check(new FencingToken("orders", 39))).isInstanceOf(StaleTokenException.class);
        fence.check(new FencingToken("orders", 40));
    }
}

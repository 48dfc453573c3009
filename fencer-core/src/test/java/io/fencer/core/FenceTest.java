package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
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

    @Test
    void call_fromInsideItsOwnMutation_isRefusedAndAcceptedNeverDecreases() {
        // Regression: with a reentrant lock the inner call advanced the accepted token to 6 and the outer one then
        // lowered it to 5 (or failed an assertion with -ea).
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST, 4);
        assertThatThrownBy(() -> fence.run(new FencingToken("orders", 5), () -> {
            data.add("outer");
            fence.run(new FencingToken("orders", 6), () -> data.add("inner"));
        })).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("write with token 6 through fence orders from inside that fence's own mutation")
                .hasMessageContaining(Thread.currentThread().getName());
        assertThat(data).containsExactly("outer");
        assertThat(fence.accepted()).isEqualTo(4);
        fence.run(new FencingToken("orders", 5), () -> data.add("after"));
        assertThat(fence.accepted()).isEqualTo(5);
    }

    @Test
    void check_fromInsideItsOwnMutation_checksAgainstTheTokenAcceptedBefore() {
        Fence fence = Fence.create("orders", FencePolicy.STRICT, 2);
        fence.run(new FencingToken("orders", 3), () -> {
            fence.check(new FencingToken("orders", 3)); // a read fenced by the same token: 3 > 2 is admitted
            assertThatThrownBy(() -> fence.check(new FencingToken("orders", 2)))
                    .isInstanceOf(StaleTokenException.class);
            data.add("checked");
        });
        assertThat(data).containsExactly("checked");
        assertThat(fence.accepted()).isEqualTo(3);
    }

    @Test
    void accepted_fromInsideItsOwnMutation_returnsTheTokenAcceptedBefore() {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST, 8);
        long seen = fence.call(new FencingToken("orders", 9), fence::accepted);
        assertThat(seen).isEqualTo(8);
        assertThat(fence.accepted()).isEqualTo(9);
        assertThat(fence).hasToString("Fence[orders, AT_LEAST, accepted=9]");
    }

    @Test
    void call_whileAnotherThreadHoldsTheFence_waitsInsteadOfRefusingReentry() throws Exception {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        fence.run(new FencingToken("orders", 1), () -> data.add("first")); // this thread was the holder before
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = new Thread(() -> fence.run(new FencingToken("orders", 1), () -> {
            inside.countDown();
            awaitUninterruptibly(release);
            data.add("held");
        }));
        holder.start();
        inside.await();
        Thread self = Thread.currentThread();
        Thread releaser = new Thread(() -> {
            while (self.getState() != Thread.State.WAITING) { // parked on the fence's lock, not refused
                Thread.onSpinWait();
            }
            release.countDown();
        });
        releaser.start();
        fence.run(new FencingToken("orders", 2), () -> data.add("second"));
        holder.join();
        releaser.join();
        assertThat(data).containsExactly("first", "held", "second");
        assertThat(fence.accepted()).isEqualTo(2);
    }

    @Test
    void call_onAThreadWhoseGetIdIsOverriddenToZero_isRefusedAndTheFenceStaysUsable() throws Exception {
        Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread odd = new Thread(() -> {
            try {
                fence.run(new FencingToken("orders", 1), () -> data.add("odd"));
            } catch (RuntimeException e) {
                failure.set(e);
            }
        }, "odd-thread") {
            @Override
            public long getId() {
                return 0; // the mutex's "free" state: taking it with this id would leave it free
            }
        };
        odd.start();
        odd.join();
        assertThat(failure.get()).isInstanceOf(IllegalStateException.class)
                .hasMessage("thread odd-thread reports id 0 from an overridden Thread.getId(); a Fence tells its "
                        + "holder by a positive thread id");
        fence.run(new FencingToken("orders", 2), () -> data.add("normal"));
        assertThat(data).containsExactly("normal");
        assertThat(fence.accepted()).isEqualTo(2);
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * Hammers one fence from many threads with interleaved tokens: the log of applied writes must never show a token
 * lower than one applied before it (the check and the write are one atomic step), and every refusal must name an
 * accepted token higher than the one presented.
 */
class FenceConcurrencyTest {
    private static final int THREADS = 8;
    private static final int WRITES_PER_THREAD = 20_000;

    @Test
    void concurrentWriters_withInterleavedTokens_neverApplyBelowAccepted() throws Exception {
        for (FencePolicy policy : FencePolicy.values()) {
            Fence fence = Fence.create("counter", policy);
            List<Long> applied = new ArrayList<>(); // written only under the fence's lock
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                Thread thread = new Thread(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < WRITES_PER_THREAD; i++) {
                            long value = 1 + ThreadLocalRandom.current().nextLong(5_000);
                            try {
                                fence.run(new FencingToken("counter", value), () -> applied.add(value));
                            } catch (StaleTokenException e) {
                                if (policy.admits(e.presented(), e.accepted()) || e.presented() != value) {
                                    failures.add(new AssertionError("refusal does not justify itself: " + e));
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                threads.add(thread);
                thread.start();
            }
            start.countDown();
            for (Thread thread : threads) {
                thread.join();
            }
            assertThat(failures).isEmpty();
            assertThat(applied).isNotEmpty();
            for (int i = 1; i < applied.size(); i++) {
                long previous = applied.get(i - 1);
                long current = applied.get(i);
                assertThat(policy.admits(current, previous))
                        .as("%s: write %d applied with token %d after %d", policy, i, current, previous).isTrue();
            }
            assertThat(fence.accepted()).isEqualTo(applied.get(applied.size() - 1));
        }
    }

    @Test
    void control_uncheckedWrites_doApplyBelowAccepted() throws Exception {
        // The same workload without the fence must show out-of-order applies, or the test above proves nothing.
        List<Long> applied = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            Thread thread = new Thread(() -> {
                for (int i = 0; i < 2_000; i++) {
                    applied.add(1 + ThreadLocalRandom.current().nextLong(5_000));
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        boolean decreased = false;
        for (int i = 1; i < applied.size() && !decreased; i++) {
            decreased = applied.get(i) < applied.get(i - 1);
        }
        assertThat(decreased).as("unfenced writes apply lower tokens after higher ones").isTrue();
    }
}

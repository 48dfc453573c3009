package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.sequencer;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.StaleTokenException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 64 threads write to one scope with interleaved tokens. The engine's own guard records every applied write in
 * apply order with the accepted token it found; no write may land below it. The control runs the broken
 * check-then-act through the same recorder and must be caught.
 */
class StoreEngineConcurrencyTest {
    private static final int THREADS = 64;
    private static final int WRITES_PER_THREAD = 12;
    private static final int CONTROL_ROUNDS_MAX = 20;

    @TempDir
    Path dir;
    private StoreEngine store;

    /** One applied write as the guard saw it. */
    private record Applied(long token, long acceptedBefore) {}

    /** What one round observed. */
    private record Round(List<Applied> applied, Set<Long> acknowledged, Set<Long> refused) {
        List<Applied> violations() {
            return applied.stream().filter(a -> a.token() < a.acceptedBefore()).toList();
        }
    }

    /** A write path under test: the engine's, or the broken control. */
    private interface Writer {
        void write(String scope, long token, byte[] value);
    }

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir, StoreOptions.defaults());
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    void write_64ThreadsInterleavedTokensOneScope_neverAppliesBelowAccepted() throws Exception {
        Round round = run("orders", (scope, token, value) ->
                store.write(scope, sequencer(scope, token), List.of(Op.put(bytes("k"), value)), null));

        assertThat(round.violations()).isEmpty();
        List<Long> appliedTokens = round.applied().stream().map(Applied::token).toList();
        assertThat(Set.copyOf(appliedTokens)).isEqualTo(round.acknowledged());
        assertThat(round.refused()).doesNotContainAnyElementsOf(round.acknowledged());
        assertThat(round.acknowledged().size() + round.refused().size()).isEqualTo(THREADS * WRITES_PER_THREAD);
        long expectedAccepted = 0;
        for (Applied applied : round.applied()) {
            assertThat(applied.acceptedBefore()).as("the fence moved only through applied writes")
                    .isEqualTo(expectedAccepted);
            expectedAccepted = Math.max(expectedAccepted, applied.token());
        }
        long highest = round.acknowledged().stream().mapToLong(Long::longValue).max().orElseThrow();
        assertThat(store.accepted("orders")).isEqualTo(highest);
        ReadResult read = store.get("orders", bytes("k"), null);
        assertThat(read.writtenBy()).isEqualTo(highest);
        assertThat(read.value()).isEqualTo(bytes(Long.toString(highest)));
        assertThat(store.scope("orders").revision()).isEqualTo(round.acknowledged().size());
    }

    @Test
    void writeCheckThenAct_64Threads_appliesBelowAccepted_controlForTheCheckAbove() throws Exception {
        List<Applied> violations = List.of();
        for (int attempt = 0; attempt < CONTROL_ROUNDS_MAX && violations.isEmpty(); attempt++) {
            String scope = "control-" + attempt;
            violations = run(scope, (s, token, value) -> CheckThenActControl.write(store, s, sequencer(s, token),
                    List.of(Op.put(bytes("k"), value)))).violations();
        }
        assertThat(violations).as("the unchecked write path must be caught landing a token below the accepted one")
                .isNotEmpty();
    }

    private Round run(String scope, Writer writer) throws Exception {
        List<Applied> applied = new ArrayList<>(); // appended inside the scope's guard only
        store.applyListener((s, token, acceptedBefore) -> {
            if (s.equals(scope)) {
                applied.add(new Applied(token, acceptedBefore));
            }
        });
        AtomicLong tokens = new AtomicLong();
        Set<Long> acknowledged = ConcurrentHashMap.newKeySet();
        Set<Long> refused = ConcurrentHashMap.newKeySet();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int thread = 0; thread < THREADS; thread++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < WRITES_PER_THREAD; i++) {
                        long token = tokens.incrementAndGet(); // drawn before the guard: arrivals interleave
                        try {
                            writer.write(scope, token, bytes(Long.toString(token)));
                            acknowledged.add(token);
                        } catch (StaleTokenException e) {
                            assertThat(e.accepted()).isGreaterThan(token);
                            refused.add(token);
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : futures) {
                future.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        store.applyListener(StoreEngine.ApplyListener.NONE);
        synchronized (applied) {
            return new Round(List.copyOf(applied), Set.copyOf(acknowledged), Set.copyOf(refused));
        }
    }
}

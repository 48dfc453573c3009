package io.fencer.server.store;

import io.fencer.core.StaleTokenException;
import io.fencer.store.WriteResult;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The store's Prometheus metrics: {@code fencer_store_writes_total} by outcome (accepted, stale, error) and the
 * latency of admitted-or-refused writes and unit commits, {@code fencer_store_write_seconds}, fsync included.
 */
final class StoreMetrics {
    private final Counter accepted;
    private final Counter stale;
    private final Counter errors;
    private final Timer writeTimer;

    StoreMetrics(MeterRegistry registry) {
        accepted = outcome(registry, "accepted");
        stale = outcome(registry, "stale");
        errors = outcome(registry, "error");
        writeTimer = Timer.builder("fencer.store.write").description("Writes and unit commits, fsync included")
                .publishPercentileHistogram()
                .register(registry);
    }

    private static Counter outcome(MeterRegistry registry, String outcome) {
        return Counter.builder("fencer.store.writes").description("Writes and unit commits by outcome")
                .tag("outcome", outcome).register(registry);
    }

    /** Runs a write or commit, counting its outcome and timing it. */
    WriteResult timeWrite(Supplier<WriteResult> write) {
        long startNanos = System.nanoTime();
        try {
            WriteResult result = write.get();
            recordWrite(startNanos, null);
            return result;
        } catch (RuntimeException e) {
            recordWrite(startNanos, e);
            throw e;
        }
    }

    /** Counts the outcome of a write or commit begun at {@code startNanos} (System.nanoTime) and times it. */
    void recordWrite(long startNanos, Throwable failure) {
        if (failure == null) {
            accepted.increment();
        } else if (failure instanceof StaleTokenException) {
            stale.increment();
        } else {
            errors.increment();
        }
        writeTimer.record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }
}

package io.fencer.load;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The load generator behind {@code fencer bench store}: {@code writers} threads put random keys with random values
 * into {@code scopes} scopes of a running store, each scope under the token of a real grant of the lock of the
 * scope's name, acquired once through the lock service and held for the whole run.
 *
 * <p>Every write presents its scope's current token, so the store must admit every one: a stale refusal means the
 * store has accepted a token newer than the lock service's latest grant (for example a store kept while the lock
 * service's data was wiped), and the bench reports it.
 *
 * <p>{@link #run} takes the {@link Settings} and returns the {@link Result}; printing it is the caller's business.
 */
public final class StoreBench {
    /** The most writer threads one bench runs. */
    public static final int WRITERS_MAX = 4_096;
    /** The most scopes (each with a held lock) one bench uses. */
    public static final int SCOPES_MAX = 10_000;
    /** The largest value; the store's own default limit is 1 MiB. */
    public static final int VALUE_BYTES_MAX = 1024 * 1024;
    /** Distinct keys per scope that writers pick from at random. */
    static final int KEYS_PER_SCOPE = 10_000;
    /** The lease of the session that holds the scopes' locks; kept alive in the background. */
    static final Duration SESSION_TTL = Duration.ofSeconds(30);
    /** How long acquiring one scope's lock may wait (a crashed earlier run's session must expire first). */
    static final Duration ACQUIRE_WAIT = Duration.ofSeconds(60);
    private static final Duration FINISH_WAIT_MAX = Duration.ofSeconds(60);
    private static final Duration ERROR_PAUSE = Duration.ofMillis(20);

    /**
     * What to run.
     *
     * @param writers writer threads; writer i writes to scope {@code i % scopes}
     * @param scopes distinct scopes, {@code bench-store-<i>}, each under its own lock of the same name
     * @param valueBytes the size of every value written
     * @param duration how long to measure
     * @param warmup how long to run before measuring
     */
    public record Settings(int writers, int scopes, int valueBytes, Duration duration, Duration warmup) {
        public Settings {
            SettingsChecks.window(duration, warmup);
            SettingsChecks.range("writers", writers, 1, WRITERS_MAX);
            SettingsChecks.range("scopes", scopes, 1, SCOPES_MAX);
            SettingsChecks.range("value bytes", valueBytes, 0, VALUE_BYTES_MAX);
        }
    }

    /**
     * What a bench measured. Writes count acknowledgements received inside the measured window only.
     *
     * @param writes writes acknowledged (fsync'd) that started and ended inside the window
     * @param staleRefusals writes refused as stale over the whole run (must be 0)
     * @param firstStale the first stale refusal's message, or null
     * @param errors other failed writes over the whole run
     * @param firstError the first other error's message, or null
     * @param writeMillisP50 median write latency (NaN without writes)
     */
    public record Result(Settings settings, long writes, long staleRefusals, String firstStale, long errors,
            String firstError, double writeMillisP50, double writeMillisP99, double writeMillisP999,
            double writeMillisMax) {
        /** Returns the acknowledged writes per second of the measured window. */
        public double writesPerSecond() {
            return writes / (settings.duration().toNanos() / 1e9);
        }
    }

    private final FencerClient lockService;
    private final FencedStore store;
    private final Settings settings;
    private final Recorder writeNanos = new Recorder(3);
    private final LongAdder staleRefusals = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final AtomicReference<String> firstStale = new AtomicReference<>();
    private final AtomicReference<String> firstError = new AtomicReference<>();
    private final CountDownLatch go = new CountDownLatch(1);
    /** Set before {@link #go} opens, read by the writers after: the latch publishes them. */
    private long measureStartNanos;
    private long measureEndNanos;

    private StoreBench(FencerClient lockService, FencedStore store, Settings settings) {
        this.lockService = Objects.requireNonNull(lockService, "lockService");
        this.store = Objects.requireNonNull(store, "store");
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    /** Returns the name of bench scope {@code index}, which is also the name of its lock. */
    static String scopeName(int index) {
        return "bench-store-" + index;
    }

    /**
     * Acquires every scope's lock through {@code lockService}, runs the writers against {@code store}, releases
     * the locks and returns what it measured.
     *
     * @throws io.fencer.core.FencerException when the session cannot be opened or a lock cannot be acquired
     * @throws io.fencer.client.LockTimeoutException when a scope's lock stays held by someone else
     */
    public static Result run(FencerClient lockService, FencedStore store, Settings settings)
            throws InterruptedException {
        return new StoreBench(lockService, store, settings).run();
    }

    private Result run() throws InterruptedException {
        try (Session session = lockService.openSession(SESSION_TTL)) {
            List<Grant> grants = new ArrayList<>();
            try {
                for (int i = 0; i < settings.scopes(); i++) {
                    grants.add(session.lock(scopeName(i)).acquire(ACQUIRE_WAIT));
                }
                List<Runnable> writers = new ArrayList<>();
                for (int i = 0; i < settings.writers(); i++) {
                    int scope = i % settings.scopes();
                    String sequencer = grants.get(scope).sequencer();
                    writers.add(() -> writer(scopeName(scope), sequencer));
                }
                Workers.run("bench-writer", writers, go, this::openWindow);
            } finally {
                go.countDown();
                grants.forEach(StoreBench::releaseQuietly);
            }
        }
        return result();
    }

    /** Opens the measured window after the warm-up; returns by when every writer must have finished. */
    private long openWindow() {
        measureStartNanos = System.nanoTime() + settings.warmup().toNanos();
        measureEndNanos = measureStartNanos + settings.duration().toNanos();
        return measureEndNanos + FINISH_WAIT_MAX.toNanos();
    }

    private Result result() {
        Histogram histogram = writeNanos.getIntervalHistogram();
        boolean empty = histogram.getTotalCount() == 0;
        return new Result(settings, histogram.getTotalCount(), staleRefusals.sum(), firstStale.get(), errors.sum(),
                firstError.get(),
                empty ? Double.NaN : histogram.getValueAtPercentile(50) / 1e6,
                empty ? Double.NaN : histogram.getValueAtPercentile(99) / 1e6,
                empty ? Double.NaN : histogram.getValueAtPercentile(99.9) / 1e6,
                empty ? Double.NaN : histogram.getMaxValue() / 1e6);
    }

    /** One writer's loop: put a random key with a random value under the scope's token, until the window ends. */
    private void writer(String scope, String sequencer) {
        try {
            go.await();
        } catch (InterruptedException e) {
            return;
        }
        byte[] value = new byte[settings.valueBytes()];
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!Thread.currentThread().isInterrupted() && System.nanoTime() - measureEndNanos < 0) {
            random.nextBytes(value);
            byte[] key = ("key-" + random.nextInt(KEYS_PER_SCOPE)).getBytes(StandardCharsets.UTF_8);
            long startNanos = System.nanoTime();
            try {
                store.put(scope, key, value, sequencer);
            } catch (StaleWriteException e) {
                staleRefusals.increment();
                firstStale.compareAndSet(null, e.getMessage());
                LockSupport.parkNanos(ERROR_PAUSE.toNanos());
                continue;
            } catch (RuntimeException e) {
                errors.increment();
                firstError.compareAndSet(null, e.getClass().getSimpleName() + ": " + e.getMessage());
                LockSupport.parkNanos(ERROR_PAUSE.toNanos());
                continue;
            }
            long endNanos = System.nanoTime();
            if (startNanos - measureStartNanos >= 0 && endNanos - measureEndNanos <= 0) {
                writeNanos.recordValue(endNanos - startNanos);
            }
        }
    }

    private static void releaseQuietly(Grant grant) {
        try {
            grant.close();
        } catch (RuntimeException e) {
            // the lock is released anyway when the session closes or expires
        }
    }
}

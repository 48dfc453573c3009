package io.fencer.load;

import io.fencer.client.FencerClient;
import io.fencer.core.SessionExpiredException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The load generator behind {@code fencer bench lock}: {@code clients} threads, each with its own session, loop
 * acquire → release on lock {@code bench-<i % locks>} against a running group, and check the fencing order.
 * {@link #run} takes the {@link Settings} and returns the {@link Result}; printing it is the caller's business.
 *
 * <p>The fencing check: while holding its lock, each client appends the grant's token value to the lock's log.
 * The lock serializes holders and each append happens before that holder's release, so every log must be strictly
 * increasing; a duplicate or a step back means two clients held the lock at once, or a token was issued twice.
 */
public final class LockBench {
    /** The most client threads (each with a session) one bench runs. */
    public static final int CLIENTS_MAX = 4_096;
    /** The most distinct locks one bench uses. */
    public static final int LOCKS_MAX = 100_000;
    /** How long one acquire may wait in line before it counts as an error. */
    static final Duration ACQUIRE_WAIT = Duration.ofSeconds(30);
    /** How long a client may take to finish its last cycle after the measurement ends. */
    private static final Duration FINISH_WAIT_MAX = ACQUIRE_WAIT.plusSeconds(30);
    /** How long a client pauses after an error, so a down server is not hammered in a tight loop. */
    private static final Duration ERROR_PAUSE = Duration.ofMillis(20);

    /**
     * What to run.
     *
     * @param clients client threads, each with its own session
     * @param locks distinct locks; client i uses lock {@code bench-<i % locks>}
     * @param duration how long to measure
     * @param warmup how long to run before measuring
     * @param ttl each session's lease
     */
    public record Settings(int clients, int locks, Duration duration, Duration warmup, Duration ttl) {
        public Settings {
            SettingsChecks.window(duration, warmup);
            Objects.requireNonNull(ttl, "ttl");
            SettingsChecks.range("clients", clients, 1, CLIENTS_MAX);
            SettingsChecks.range("locks", locks, 1, LOCKS_MAX);
        }
    }

    /**
     * What a bench measured. Cycles and grants count what completed inside the measured window only.
     *
     * @param cycles acquire + release cycles that started and ended inside the window
     * @param grants grants received inside the window
     * @param errors failed acquires or releases over the whole run
     * @param firstError the first error's message, or null
     * @param cycleMillisP50 median cycle latency (NaN without cycles)
     * @param tokensChecked token values appended to the per-lock logs over the whole run, warmup included
     * @param firstViolation the first token that was not above its predecessor on its lock, or null
     */
    public record Result(Settings settings, long cycles, long grants, long errors, String firstError,
            double cycleMillisP50, double cycleMillisP99, double cycleMillisP999, double cycleMillisMax,
            long tokensChecked, String firstViolation) {
        /** Returns the cycles per second of the measured window. */
        public double cyclesPerSecond() {
            return cycles / seconds(settings.duration());
        }

        /** Returns the grants per second of the measured window. */
        public double grantsPerSecond() {
            return grants / seconds(settings.duration());
        }

        /** Returns true when every lock's tokens strictly increased, warmup included. */
        public boolean tokensIncreasing() {
            return firstViolation == null;
        }

        private static double seconds(Duration duration) {
            return duration.toNanos() / 1e9;
        }
    }

    private final LockCalls calls;
    private final Settings settings;
    private final Recorder cycleNanos = new Recorder(3);
    private final LongAdder grants = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final AtomicReference<String> firstError = new AtomicReference<>();
    private final TokenLog[] logs;
    private final CountDownLatch go = new CountDownLatch(1);
    /** Set before {@link #go} opens, read by the clients after: the latch publishes them. */
    private long measureStartNanos;
    private long measureEndNanos;

    private LockBench(LockCalls calls, Settings settings) {
        this.calls = Objects.requireNonNull(calls, "calls");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.logs = new TokenLog[settings.locks()];
        for (int i = 0; i < logs.length; i++) {
            logs[i] = new TokenLog(lockName(i));
        }
    }

    /** Returns the name of bench lock {@code index}. */
    static String lockName(int index) {
        return "bench-" + index;
    }

    /**
     * Runs a bench through {@code fencer} and returns what it measured. Sessions are opened before the clock starts
     * and closed at the end.
     *
     * @throws io.fencer.core.FencerException when the sessions cannot be opened
     */
    public static Result run(FencerClient fencer, Settings settings) throws InterruptedException {
        return run(LockCalls.of(fencer), settings);
    }

    /**
     * Runs a bench through {@code calls} (the Java client's, or {@link HttpLockCalls} on the HTTP port) and returns
     * what it measured.
     */
    public static Result run(LockCalls calls, Settings settings) throws InterruptedException {
        return new LockBench(calls, settings).run();
    }

    private Result run() throws InterruptedException {
        List<LockCalls.BenchSession> sessions = new ArrayList<>();
        try {
            for (int i = 0; i < settings.clients(); i++) {
                sessions.add(calls.openSession(settings.ttl()));
            }
            List<Runnable> clients = new ArrayList<>();
            for (int i = 0; i < settings.clients(); i++) {
                int index = i;
                clients.add(() -> client(index, sessions.get(index)));
            }
            Workers.run("bench-client", clients, go, this::openWindow);
        } finally {
            go.countDown();
            sessions.forEach(LockCalls.BenchSession::close);
        }
        return result();
    }

    /** Opens the measured window after the warm-up; returns by when every client must have finished. */
    private long openWindow() {
        measureStartNanos = System.nanoTime() + settings.warmup().toNanos();
        measureEndNanos = measureStartNanos + settings.duration().toNanos();
        return measureEndNanos + FINISH_WAIT_MAX.toNanos();
    }

    private Result result() {
        Histogram histogram = cycleNanos.getIntervalHistogram();
        long tokensChecked = 0;
        String firstViolation = null;
        for (TokenLog log : logs) {
            tokensChecked += log.count();
            if (firstViolation == null) {
                firstViolation = log.firstViolation();
            }
        }
        boolean empty = histogram.getTotalCount() == 0;
        return new Result(settings, histogram.getTotalCount(), grants.sum(), errors.sum(), firstError.get(),
                empty ? Double.NaN : histogram.getValueAtPercentile(50) / 1e6,
                empty ? Double.NaN : histogram.getValueAtPercentile(99) / 1e6,
                empty ? Double.NaN : histogram.getValueAtPercentile(99.9) / 1e6,
                empty ? Double.NaN : histogram.getMaxValue() / 1e6,
                tokensChecked, firstViolation);
    }

    /** One client's loop: acquire, log the token, release, until the measured window ends. */
    private void client(int index, LockCalls.BenchSession firstSession) {
        TokenLog log = logs[index % settings.locks()];
        LockCalls.BenchSession session = firstSession;
        try {
            go.await();
        } catch (InterruptedException e) {
            return;
        }
        while (!Thread.currentThread().isInterrupted() && System.nanoTime() - measureEndNanos < 0) {
            long startNanos = System.nanoTime();
            try {
                session.cycle(log.lock(), ACQUIRE_WAIT, token -> {
                    long grantedNanos = System.nanoTime();
                    log.append(token);
                    if (grantedNanos - measureStartNanos >= 0 && grantedNanos - measureEndNanos <= 0) {
                        grants.increment();
                    }
                });
            } catch (SessionExpiredException e) {
                error(e);
                session = reopen(session);
                continue;
            } catch (RuntimeException e) {
                error(e);
                LockSupport.parkNanos(ERROR_PAUSE.toNanos());
                continue;
            }
            long endNanos = System.nanoTime();
            if (startNanos - measureStartNanos >= 0 && endNanos - measureEndNanos <= 0) {
                cycleNanos.recordValue(endNanos - startNanos);
            }
        }
        if (session != firstSession) {
            session.close();
        }
    }

    /** Replaces a lost session; on failure keeps the old one, whose next acquire fails and retries this. */
    private LockCalls.BenchSession reopen(LockCalls.BenchSession lost) {
        try {
            LockCalls.BenchSession session = calls.openSession(settings.ttl());
            lost.close();
            return session;
        } catch (RuntimeException e) {
            error(e);
            LockSupport.parkNanos(ERROR_PAUSE.toNanos());
            return lost;
        }
    }

    private void error(RuntimeException e) {
        errors.increment();
        firstError.compareAndSet(null, e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    /**
     * The per-lock list of token values, reduced to what checking it needs: its length and last element. A list is
     * strictly increasing exactly when each appended value exceeds the one before, so this checks the same property
     * in bounded memory however long the bench runs.
     */
    static final class TokenLog {
        private final String lock;
        private long count;
        private long last;
        private String firstViolation;

        TokenLog(String lock) {
            this.lock = lock;
        }

        String lock() {
            return lock;
        }

        /** Appends {@code token}; remembers the first one that is not above its predecessor. */
        synchronized void append(long token) {
            if (count > 0 && token <= last && firstViolation == null) {
                firstViolation = "lock " + lock + ": token " + token + " came after " + last
                        + " (append #" + (count + 1) + ")";
            }
            last = token;
            count++;
        }

        synchronized long count() {
            return count;
        }

        synchronized String firstViolation() {
            return firstViolation;
        }
    }
}

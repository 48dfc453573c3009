package io.fencer.load;

import io.fencer.client.FencerClient;
import io.fencer.core.SessionExpiredException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
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
 *
 * <p>Modes: {@link Mode#EXCLUSIVE} is the mutex above. {@link Mode#SHARED} acquires every lock in shared mode
 * (readers overlap, so their appends are not ordered and no order is checked). {@link Mode#SEMAPHORE} acquires a
 * permit of semaphore {@code bench-<i % locks>} of {@code permits} permits; each slot serializes its holders, so
 * the log of every slot lock must be strictly increasing.
 */
public final class LockBench {
    /** The most client threads (each with a session) one bench runs. */
    public static final int CLIENTS_MAX = 4_096;
    /** The most distinct locks one bench uses. */
    public static final int LOCKS_MAX = 100_000;
    /** The most permits of a semaphore, as the service bounds them. */
    public static final int PERMITS_MAX = 1_000;
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
     * @param mode what each cycle acquires
     * @param permits in semaphore mode, each semaphore's permit count (1 otherwise)
     */
    public record Settings(int clients, int locks, Duration duration, Duration warmup, Duration ttl, Mode mode,
            int permits) {
        public Settings {
            SettingsChecks.window(duration, warmup);
            Objects.requireNonNull(ttl, "ttl");
            Objects.requireNonNull(mode, "mode");
            SettingsChecks.range("clients", clients, 1, CLIENTS_MAX);
            SettingsChecks.range("locks", locks, 1, LOCKS_MAX);
            SettingsChecks.range("permits", permits, 1, PERMITS_MAX);
        }

        /** A mutex bench. */
        public Settings(int clients, int locks, Duration duration, Duration warmup, Duration ttl) {
            this(clients, locks, duration, warmup, ttl, Mode.EXCLUSIVE, 1);
        }
    }

    /** What each cycle acquires. */
    public enum Mode {
        /** The lock, exclusively. */
        EXCLUSIVE,
        /** The lock in shared mode (a reader). */
        SHARED,
        /** A permit of a semaphore of {@link Settings#permits()} permits. */
        SEMAPHORE
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
    /** Semaphore mode: the log of every slot lock, made on its first grant. */
    private final ConcurrentHashMap<String, TokenLog> slotLogs = new ConcurrentHashMap<>();
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
        List<TokenLog> checked = new ArrayList<>(List.of(logs));
        checked.addAll(slotLogs.values());
        for (TokenLog log : checked) {
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
                session.cycle(log.lock(), ACQUIRE_WAIT, settings.mode(), settings.permits(), (granted, token) -> {
                    long grantedNanos = System.nanoTime();
                    TokenLog checked = logOf(log, granted);
                    if (checked != null) {
                        checked.append(token);
                    }
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

    /**
     * Returns the log a grant of {@code grantedLock} goes to: its lock's, or in semaphore mode its slot's; null in
     * shared mode, where readers overlap, so the order of their appends means nothing and is not checked.
     */
    private TokenLog logOf(TokenLog lockLog, String grantedLock) {
        return switch (settings.mode()) {
            case EXCLUSIVE -> lockLog;
            case SHARED -> null;
            case SEMAPHORE -> slotLogs.computeIfAbsent(grantedLock, TokenLog::new);
        };
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

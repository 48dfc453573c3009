package io.fencer.compare;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The etcd side of {@code bench/store-vs-etcd.sh}: the workload of {@code fencer bench store}, done as etcd users
 * fence their writes. {@code writers} threads put random keys with random values into {@code scopes} scopes; each
 * scope is under an etcd lock of its own (jetcd's {@code Lock} with one lease kept alive), acquired once and held
 * for the whole run, whose key's create revision is the scope's fencing token, as etcd's documentation advises.
 *
 * <p>Every write is one transaction that checks the token and writes in one atomic step, replicated and fsync'd by
 * etcd's Raft log as Fencer's replicated store is by its own:
 * {@code If(value(fence key) < token + 1) Then(put(data key, value), put(fence key, token)) Else(get(fence key))}.
 * The comparison is the store's default policy, AT_LEAST (a holder may write many times under its token), so the
 * fence key must not exceed the token; etcd has no "less or equal", hence {@code < token + 1}, and compares values
 * as bytes, hence tokens written as fixed-width decimals ({@link TokenValues}). A refused transaction is counted as
 * a stale refusal: with every writer holding its scope's current lock there must be none.
 *
 * <p>With one scope, as {@code fencer bench store --scopes 1}, one lock is held and every writer writes under its
 * one token; each scope's keys are {@code key-0} … {@code key-9999}, picked at random for each write.
 */
public final class EtcdFencedWrites {
    /** The most writer threads one run starts, as {@code fencer bench store}. */
    public static final int WRITERS_MAX = 4_096;
    /** The most scopes (each with a held lock) one run uses, as {@code fencer bench store}. */
    public static final int SCOPES_MAX = 10_000;
    /** The largest value: etcd's default request limit is 1.5 MiB. */
    public static final int VALUE_BYTES_MAX = 1024 * 1024;
    /** Distinct keys per scope that writers pick from at random, as in {@code fencer bench store}. */
    static final int KEYS_PER_SCOPE = 10_000;
    /** The lease that holds the scopes' locks, in seconds; kept alive in the background. */
    static final long LEASE_TTL_SECONDS = 30;
    /** How long one call made while setting up (lease, lock, read) may take. */
    static final Duration SETUP_CALL_MAX = Duration.ofSeconds(60);
    /** How long one write may take before it counts as an error. */
    static final Duration WRITE_MAX = Duration.ofSeconds(30);
    private static final Duration FINISH_WAIT_MAX = Duration.ofSeconds(60);
    private static final Duration ERROR_PAUSE = Duration.ofMillis(20);

    /**
     * What to run; the limits are {@code fencer bench store}'s.
     *
     * @param writers writer threads; writer i writes to scope {@code i % scopes}
     * @param scopes distinct scopes, {@code bench-store-<i>}, each under its own etcd lock
     * @param valueBytes the size of every value written
     * @param duration how long to measure
     * @param warmup how long to run before measuring
     */
    public record Settings(int writers, int scopes, int valueBytes, Duration duration, Duration warmup) {
        public Settings {
            Objects.requireNonNull(duration, "duration");
            Objects.requireNonNull(warmup, "warmup");
            if (duration.isZero() || duration.isNegative() || warmup.isNegative()) {
                throw new IllegalArgumentException("duration must be positive and warmup not negative: "
                        + duration + ", " + warmup);
            }
            range("writers", writers, 1, WRITERS_MAX);
            range("scopes", scopes, 1, SCOPES_MAX);
            range("value bytes", valueBytes, 0, VALUE_BYTES_MAX);
        }

        private static void range(String name, int value, int min, int max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(name + " " + value + " is outside [" + min + ", " + max + "]");
            }
        }
    }

    /**
     * What a run measured, with the fields of {@code fencer bench store}'s result.
     *
     * @param writes transactions committed that started and ended inside the window
     * @param staleRefusals transactions whose token check failed, over the whole run (must be 0)
     * @param firstStale the first stale refusal's message, or null
     * @param errors other failed transactions over the whole run
     * @param firstError the first other error's message, or null
     * @param writeMillisP50 median write latency (NaN without writes)
     */
    public record Result(Settings settings, long writes, long staleRefusals, String firstStale, long errors,
            String firstError, double writeMillisP50, double writeMillisP99, double writeMillisP999,
            double writeMillisMax) {
        /** Returns the committed writes per second of the measured window. */
        public double writesPerSecond() {
            return writes / (settings.duration().toNanos() / 1e9);
        }
    }

    /** One scope as its writers see it: the keys it owns and the token of its held lock. */
    record Scope(String name, ByteSequence fenceKey, long token) {
        /** Returns the key of a data item of this scope. */
        ByteSequence dataKey(int item) {
            return bytes("data/" + name + "/key-" + item);
        }
    }

    private final Client client;
    private final KV kv;
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

    private EtcdFencedWrites(Client client, Settings settings) {
        this.client = Objects.requireNonNull(client, "client");
        this.kv = client.getKVClient();
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    /** Runs the command line ({@link Options}); exits 0, 1 (stale refusals or nothing written) or 2 (usage). */
    public static void main(String[] args) throws Exception {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("etcd-fenced-writes: " + e.getMessage());
            err.println(Options.USAGE);
            return 2;
        }
        if (options.help()) {
            out.println(Options.USAGE);
            return 0;
        }
        Result result;
        try (Client client = Client.builder().endpoints(options.endpoints().toArray(String[]::new)).build()) {
            result = run(client, options.settings());
        }
        out.println(options.json() ? Summary.json(result) : Summary.text(result));
        out.flush();
        if (result.staleRefusals() > 0) {
            err.println("etcd-fenced-writes: " + result.staleRefusals() + " transactions were refused as stale,"
                    + " though every writer held its scope's lock; first: " + result.firstStale());
            return 1;
        }
        if (result.writes() == 0) {
            err.println("etcd-fenced-writes: no write committed in " + options.settings().duration()
                    + (result.firstError() == null ? "" : "; first error: " + result.firstError()));
            return 1;
        }
        return 0;
    }

    /**
     * Takes every scope's lock under one lease, runs the writers through {@code client}, releases the locks and
     * returns what it measured.
     */
    public static Result run(Client client, Settings settings) throws Exception {
        return new EtcdFencedWrites(client, settings).run();
    }

    private Result run() throws Exception {
        long lease = call(client.getLeaseClient().grant(LEASE_TTL_SECONDS)).getID();
        CloseableClient keepAlive = client.getLeaseClient().keepAlive(lease, new IgnoreKeepAlives());
        List<ByteSequence> lockKeys = new ArrayList<>();
        try {
            List<Scope> scopes = new ArrayList<>();
            for (int i = 0; i < settings.scopes(); i++) {
                ByteSequence lockKey = call(client.getLockClient().lock(bytes("lock/" + scopeName(i)), lease))
                        .getKey();
                lockKeys.add(lockKey);
                scopes.add(scope(i, lockKey));
            }
            List<Thread> writers = new ArrayList<>();
            for (int i = 0; i < settings.writers(); i++) {
                Scope scope = scopes.get(i % settings.scopes());
                Thread thread = new Thread(() -> writer(scope), "etcd-writer-" + i);
                thread.setDaemon(true);
                writers.add(thread);
            }
            runWriters(writers);
        } finally {
            go.countDown();
            for (ByteSequence lockKey : lockKeys) {
                unlockQuietly(lockKey);
            }
            keepAlive.close();
            call(client.getLeaseClient().revoke(lease));
        }
        return result();
    }

    /** Returns scope {@code index} under the lock whose key is {@code lockKey}, its fence key made if absent. */
    private Scope scope(int index, ByteSequence lockKey) throws Exception {
        GetResponse lock = call(kv.get(lockKey));
        if (lock.getKvs().size() != 1) {
            throw new IllegalStateException("the lock key of " + scopeName(index) + " is gone: " + lockKey);
        }
        long token = lock.getKvs().get(0).getCreateRevision();
        ByteSequence fenceKey = bytes("fence/" + scopeName(index));
        // etcd fails every value comparison on a missing key, so the fence starts at 0, "nothing accepted yet",
        // as a Fencer scope does; made once, before the window, outside the measured writes.
        call(kv.txn().If(new Cmp(fenceKey, Cmp.Op.EQUAL, CmpTarget.version(0)))
                .Then(Op.put(fenceKey, TokenValues.encode(0), PutOption.DEFAULT)).commit());
        return new Scope(scopeName(index), fenceKey, token);
    }

    /** Starts the writers, opens the window after the warm-up and waits for them within a bound. */
    private void runWriters(List<Thread> writers) throws InterruptedException {
        try {
            writers.forEach(Thread::start);
            measureStartNanos = System.nanoTime() + settings.warmup().toNanos();
            measureEndNanos = measureStartNanos + settings.duration().toNanos();
            long finishByNanos = measureEndNanos + FINISH_WAIT_MAX.toNanos();
            go.countDown(); // publishes the window the writers read after go.await()
            for (Thread writer : writers) {
                TimeUnit.NANOSECONDS.timedJoin(writer, Math.max(1, finishByNanos - System.nanoTime()));
            }
        } finally {
            writers.stream().filter(Thread::isAlive).forEach(Thread::interrupt);
        }
    }

    /** One writer's loop: one fenced transaction after another under the scope's token, until the window ends. */
    private void writer(Scope scope) {
        try {
            go.await();
        } catch (InterruptedException e) {
            return;
        }
        byte[] value = new byte[settings.valueBytes()];
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!Thread.currentThread().isInterrupted() && System.nanoTime() - measureEndNanos < 0) {
            random.nextBytes(value);
            ByteSequence key = scope.dataKey(random.nextInt(KEYS_PER_SCOPE));
            long startNanos = System.nanoTime();
            TxnResponse response;
            try {
                response = fencedWrite(kv, scope, key, ByteSequence.from(value)).commit()
                        .get(WRITE_MAX.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                return;
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                failed(e);
                continue;
            }
            long endNanos = System.nanoTime();
            if (!response.isSucceeded()) {
                refused(scope, response);
                continue;
            }
            if (startNanos - measureStartNanos >= 0 && endNanos - measureEndNanos <= 0) {
                writeNanos.recordValue(endNanos - startNanos);
            }
        }
    }

    /**
     * Returns the fenced write of {@code value} to {@code key} under the scope's token, not yet committed: admitted
     * when the scope's fence key does not exceed the token (AT_LEAST), which it then holds; else it reads the fence.
     */
    static Txn fencedWrite(KV kv, Scope scope, ByteSequence key, ByteSequence value) {
        ByteSequence token = TokenValues.encode(scope.token());
        return kv.txn()
                .If(new Cmp(scope.fenceKey(), Cmp.Op.LESS, CmpTarget.value(TokenValues.encode(scope.token() + 1))))
                .Then(Op.put(key, value, PutOption.DEFAULT), Op.put(scope.fenceKey(), token, PutOption.DEFAULT))
                .Else(Op.get(scope.fenceKey(), GetOption.DEFAULT));
    }

    private void refused(Scope scope, TxnResponse response) {
        staleRefusals.increment();
        boolean none = response.getGetResponses().isEmpty() || response.getGetResponses().get(0).getKvs().isEmpty();
        String accepted = none ? "none"
                : response.getGetResponses().get(0).getKvs().get(0).getValue().toString(StandardCharsets.UTF_8);
        firstStale.compareAndSet(null, "scope " + scope.name() + ": token " + scope.token() + " refused, accepted "
                + accepted);
        LockSupport.parkNanos(ERROR_PAUSE.toNanos());
    }

    private void failed(Exception e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        errors.increment();
        firstError.compareAndSet(null, cause.getClass().getSimpleName() + ": " + cause.getMessage());
        LockSupport.parkNanos(ERROR_PAUSE.toNanos());
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

    private void unlockQuietly(ByteSequence lockKey) {
        try {
            call(client.getLockClient().unlock(lockKey));
        } catch (Exception e) {
            // revoking the lease below deletes the lock key anyway
        }
    }

    /** Returns the name of scope {@code index}, as {@code fencer bench store} names its scopes. */
    static String scopeName(int index) {
        return "bench-store-" + index;
    }

    static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    private static <T> T call(java.util.concurrent.CompletableFuture<T> future) throws Exception {
        try {
            return future.get(SETUP_CALL_MAX.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    /**
     * The lease's keep-alive answers need nothing done. Were the lease lost, the writes would go on as Fencer's
     * would under a lost grant: the fence key decides, and no newer token is ever presented in a run.
     */
    private static final class IgnoreKeepAlives implements StreamObserver<LeaseKeepAliveResponse> {
        @Override
        public void onNext(LeaseKeepAliveResponse response) {
        }

        @Override
        public void onError(Throwable error) {
        }

        @Override
        public void onCompleted() {
        }
    }
}

package io.fencer.chaos.workload;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.client.ScopeInfo;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreUnit;
import io.fencer.client.StoreValue;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.LimitExceededException;
import io.fencer.core.SkewedTicker;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A chaos worker: one process that loops over the workload under the shared lock, recording every operation in
 * its history, until its standard input ends. It tells the harness on standard output when it has read under a
 * grant ({@code read <token>}), the moment a pause hurts most: a client that pauses there writes based on a state
 * it read before the pause. Asked to, it holds after its next read until the harness says go, so that a pause lands
 * there every time ({@link WorkerControl} has the lines).
 *
 * <p>With fencing, a cycle is: acquire; begin a unit with the grant's token (the store raises its accepted token
 * now, so a paused holder's later write is refused — a token orders writes, not reads, so a read-modify-write
 * needs the token checked before the read); read under the token; think; write value + 1 into the unit; commit;
 * release. Without fencing (the control), the read is plain and the write presents one constant token, so the
 * store cannot tell a stale holder from the current one: what a lease alone gives.
 *
 * <p>While it holds a grant the worker records its <em>belief</em>: the end of its session's local lease
 * ({@link Session#leaseRemaining()} from now, on the host's monotonic clock), as a {@code lease} event whenever it
 * moves on. It looks at the grant, before the read, before the write and before the release, and a watcher thread
 * looks every {@link #BELIEF_POLL_MILLIS} ms in between, so the latest end the session promised is in the
 * history; when {@link Session#lost()} completes it records {@code lease_lost}. The {@code lease-belief} check
 * holds these against the other workers' grants.
 *
 * <p>The semaphore workload acquires a permit of the semaphore {@link WorkerOptions#lock()} instead and runs the
 * counter cycle on its slot: the store scope is the slot's lock name ({@code token.lock()}), and every event of the
 * grant names the slot as its target, so the checker can split the history per slot.
 */
public final class Worker {
    /** The counter's key, and the set's. */
    public static final String COUNTER_KEY = "counter";
    public static final String SET_KEY = "set";
    /** The key a fenced cycle on a replicated store writes its worker's name to before it reads (see claim). */
    static final String CLAIM_KEY = "claim";
    private static final Duration ACQUIRE_WAIT = Duration.ofSeconds(5);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration UNIT_TIMEOUT = Duration.ofSeconds(10);
    private static final long RETRY_PAUSE_MILLIS = 100;
    /** The longest a held read waits for the harness's go: it comes as soon as the harness froze the process. */
    private static final Duration HOLD_WAIT_MAX = Duration.ofSeconds(30);
    /** How often the watcher looks at the local lease while the worker holds a grant. */
    static final long BELIEF_POLL_MILLIS = 20;
    /** A believed end is recorded when it moved on by at least this much (a keepalive's acknowledgement). */
    private static final long BELIEF_STEP_MICROS = 1_000;
    /** What {@link #believedEndMicros} returns for a local lease that has ended. */
    static final long NO_BELIEF = -1;

    private final WorkerOptions options;
    private final HistoryLog history;
    private final PrintStream control;
    private final SplittableRandom random;
    private final AtomicBoolean stopping = new AtomicBoolean();
    /** Opens when the worker is asked to stop: a think in progress ends then, so the run winds down at once. */
    private final CountDownLatch stopAsked = new CountDownLatch(1);
    /** Set by the harness's {@code hold}: the next read waits for its {@code go} (see {@link WorkerControl}). */
    private final AtomicBoolean holdAsked = new AtomicBoolean();
    /** A permit for each {@code go} the harness sent, and one when it asks the worker to stop. */
    private final Semaphore go = new Semaphore(0);
    private int elementsAdded;
    /** The control's tokens (fencing off); null until its first write. */
    private ControlTokens controlTokens;
    /** The grant the worker holds and its session, or null: what the watcher looks at. */
    private volatile Held held;
    /**
     * The client's clock: the host's, or under a chaos run's clock faults one that runs slow (see
     * {@link SkewedTicker}). The history stays on the host's clock, as every process's does.
     */
    private final Ticker clock = SkewedTicker.fromSystemProperty();
    /** The latest believed end recorded for the current grant, in microseconds since the origin. */
    private long believedEndMicros;

    /** A grant being held, with the session it is held through. */
    private record Held(Session session, long token, String slot) {
    }

    private Worker(WorkerOptions options, HistoryLog history, PrintStream control) {
        this.options = options;
        this.history = history;
        this.control = control;
        this.random = new SplittableRandom(options.seed());
    }

    /** Runs a worker until standard input ends or says {@code stop}; returns the process's exit code. */
    public static int run(WorkerOptions options) throws IOException {
        try (HistoryLog history = HistoryLog.open(options.historyFile(), options.id(), options.originNanos())) {
            Worker worker = new Worker(options, history, System.out);
            Thread stdin = new Thread(worker::awaitStop, "stdin");
            stdin.setDaemon(true);
            stdin.start();
            Thread watcher = new Thread(worker::watchBelief, "lease-belief");
            watcher.setDaemon(true);
            watcher.start();
            worker.loop();
        }
        return 0;
    }

    private void awaitStop() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null && !line.strip().equals(WorkerControl.STOP)) {
                switch (line.strip()) {
                    case WorkerControl.HOLD -> holdAsked.set(true);
                    case WorkerControl.GO -> go.release();
                    default -> { } // nothing else means anything
                }
            }
        } catch (IOException e) {
            // the harness is gone: stop as well
        }
        stopping.set(true);
        stopAsked.countDown();
        go.release(); // a read held for a go that will not come goes on
    }

    /** Waits for the harness's {@code go} after a held read, at most {@link #HOLD_WAIT_MAX}. */
    private void awaitGo() {
        try {
            if (!go.tryAcquire(HOLD_WAIT_MAX.toMillis(), TimeUnit.MILLISECONDS)) {
                System.err.println(options.id() + ": no go within " + HOLD_WAIT_MAX.toSeconds() + " s after a held"
                        + " read; going on");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        try (FencerClient fencer = Fencer.newBuilder().endpoints(options.lockEndpoints().toArray(String[]::new))
                .callTimeout(CALL_TIMEOUT).ticker(clock).build();
             FencedStore store = Fencer.newStoreBuilder().endpoint(options.storeEndpoint()).lockService(fencer)
                .callTimeout(CALL_TIMEOUT).build()) {
            Session session = null;
            boolean announced = false;
            while (!stopping.get()) {
                if (session == null || !session.isAlive()) {
                    if (session != null) {
                        history.info(Op.SESSION_LOST, options.id());
                        session.close();
                    }
                    session = openSession(fencer);
                    if (session == null) {
                        continue;
                    }
                    if (!announced) {
                        control.println(WorkerControl.ready(session.id()));
                        control.flush();
                        announced = true;
                    }
                }
                cycle(session, store);
            }
            if (session != null) {
                session.close();
            }
        }
    }

    /** Looks at the held grant's local lease every {@link #BELIEF_POLL_MILLIS} ms until the worker stops. */
    private void watchBelief() {
        while (!stopping.get()) {
            Held current = held;
            if (current != null) {
                believe(current);
            }
            pause(BELIEF_POLL_MILLIS);
        }
    }

    /**
     * Records the held grant's believed end when it moved on. The time is read before the local lease, so the end
     * recorded is never later than the one the session computed.
     */
    private synchronized void believe(Held current) {
        if (current != held) {
            return; // released meanwhile: the belief ended with the release
        }
        long nowMicros = history.nowMicros();
        long endMicros = believedEndMicros(nowMicros, onHostClock(current.session().leaseRemaining()));
        if (endMicros != NO_BELIEF && endMicros >= believedEndMicros + BELIEF_STEP_MICROS) {
            believedEndMicros = endMicros;
            history.append(HistoryEvent.of(history.nowMicros(), options.id(), Type.INFO, Op.LEASE)
                    .withToken(current.token()).withValue(Long.toString(endMicros)).withTarget(current.slot()));
        }
    }

    /**
     * Returns the believed end of a local lease with {@code remaining} left at {@code nowMicros}, or
     * {@link #NO_BELIEF} when it has ended: "now + 0" is no belief, and recording it would make an ended lease
     * look as if it moved on with every look (a regression the lease-belief check once reported as violations).
     */
    static long believedEndMicros(long nowMicros, Duration remaining) {
        return remaining.isZero() || remaining.isNegative() ? NO_BELIEF : nowMicros + remaining.toNanos() / 1_000;
    }

    /**
     * Returns {@code remaining} on the client's clock as time on the host's: a clock that runs slow makes a lease
     * last longer than it says, and the belief is when the worker stops believing, on the host's clock.
     */
    private Duration onHostClock(Duration remaining) {
        double rate = clock instanceof SkewedTicker skewed ? skewed.rate() : 1.0;
        return rate == 1.0 ? remaining : Duration.ofNanos((long) (remaining.toNanos() / rate));
    }

    private synchronized void hold(Session session, long token, String slot) {
        believedEndMicros = 0;
        held = new Held(session, token, slot);
        believe(held);
    }

    private synchronized void stopHolding() {
        Held current = held;
        if (current != null) {
            believe(current); // the last look, before the release is invoked
        }
        held = null;
    }

    private void believeNow() {
        Held current = held;
        if (current != null) {
            believe(current);
        }
    }

    private Session openSession(FencerClient fencer) {
        try {
            Session session = fencer.openSession(options.ttl());
            session.ended().thenRun(() -> {
                Held current = held;
                boolean ofHeld = current != null && current.session() == session;
                history.append(HistoryEvent.of(history.nowMicros(), options.id(), Type.INFO, Op.LEASE_LOST)
                        .withToken(ofHeld ? current.token() : 0).withTarget(ofHeld ? current.slot() : ""));
            });
            return session;
        } catch (RuntimeException e) {
            pause(RETRY_PAUSE_MILLIS); // the lock service is down or electing: try again
            return null;
        }
    }

    /** One cycle: acquire, read, think, write, release. */
    private void cycle(Session session, FencedStore store) {
        Grant grant = acquire(session);
        if (grant == null) {
            return;
        }
        long token = grant.token().value();
        String scope = scopeOf(grant);
        String slot = slotOf(grant);
        hold(session, token, slot);
        StoreUnit unit = null;
        try {
            believeNow();
            note(Type.INVOKE, Op.READ, token, "", slot);
            String read;
            try {
                if (options.fencing() && options.replicatedStore()) {
                    claim(store, grant);
                } else if (options.fencing()) {
                    unit = store.beginUnit(scope, grant, UNIT_TIMEOUT);
                }
                read = read(store, grant);
            } catch (RuntimeException e) {
                noteFailure(outcomeOfRead(e), Op.READ, token, "", slot, e);
                pause(RETRY_PAUSE_MILLIS); // the store may be down: do not spin through grants meanwhile
                return;
            }
            note(Type.OK, Op.READ, token, read, slot);
            boolean holding = holdAsked.getAndSet(false) && !stopping.get();
            if (holding) {
                go.drainPermits(); // a go for an earlier hold that timed out must not end this one
            }
            control.println(WorkerControl.read(token, holding));
            control.flush();
            if (holding) {
                awaitGo(); // the harness freezes the process first: the write below comes after the pause
            }
            think(random.nextLong(options.thinkMax().toMillis() + 1));
            believeNow();
            write(store, unit, grant, read);
        } finally {
            if (unit != null) {
                unit.close();
            }
            stopHolding();
            release(grant);
        }
    }

    private Grant acquire(Session session) {
        history.record(Type.INVOKE, Op.ACQUIRE, 0, "");
        try {
            Grant grant = options.workload() == Workload.SEMAPHORE
                    ? session.semaphore(options.lock(), options.permits()).acquire(ACQUIRE_WAIT)
                    : session.lock(options.lock()).acquire(ACQUIRE_WAIT);
            note(Type.OK, Op.ACQUIRE, grant.token().value(), "", slotOf(grant));
            return grant;
        } catch (LockTimeoutException e) {
            history.failure(Type.FAIL, Op.ACQUIRE, 0, "", describe(e), reasonOf(e));
        } catch (UnavailableException e) {
            history.failure(Type.UNKNOWN, Op.ACQUIRE, 0, "", describe(e), reasonOf(e));
            pause(RETRY_PAUSE_MILLIS);
        } catch (RuntimeException e) {
            // a lost session (the next cycle opens a new one) or another refusal: no grant was made
            history.failure(Type.FAIL, Op.ACQUIRE, 0, "", describe(e), reasonOf(e));
            pause(RETRY_PAUSE_MILLIS);
        }
        return null;
    }

    /**
     * Returns the store scope the worker writes under {@code grant}: the lock's name, or for the semaphore workload
     * the slot's lock name (the token's lock), so the store fences each slot as it fences a lock.
     */
    private String scopeOf(Grant grant) {
        return options.workload() == Workload.SEMAPHORE ? grant.token().lock() : options.lock();
    }

    /** Returns the slot recorded as the target of the grant's events: the slot's lock name, or empty. */
    private String slotOf(Grant grant) {
        return options.workload() == Workload.SEMAPHORE ? grant.token().lock() : "";
    }

    private void note(Type type, Op op, long token, String value, String slot) {
        history.append(HistoryEvent.of(history.nowMicros(), options.id(), type, op).withToken(token).withValue(value)
                .withTarget(slot));
    }

    private void noteFailure(Type type, Op op, long token, String value, String slot, RuntimeException error) {
        history.append(HistoryEvent.of(history.nowMicros(), options.id(), type, op).withToken(token).withValue(value)
                .withTarget(slot).withError(describe(error)).withReason(reasonOf(error)));
    }

    /**
     * Claims the grant's scope on a replicated store, which serves no units: a write under the grant's token raises
     * the scope's accepted token to it, so a write of an older holder that arrives after the read (a paused one) is
     * refused, as a unit begun before the read refuses it. The claim's own key is not the workload's.
     */
    private void claim(FencedStore store, Grant grant) {
        store.put(scopeOf(grant), CLAIM_KEY, options.id(), grant);
    }

    private String read(FencedStore store, Grant grant) {
        String key = options.workload() == Workload.SET ? SET_KEY : COUNTER_KEY;
        String scope = scopeOf(grant);
        StoreValue value = options.fencing() ? store.get(scope, key, grant) : store.get(scope, key);
        if (!value.present()) {
            return options.workload() == Workload.SET ? "" : "0";
        }
        return value.valueUtf8();
    }

    private void write(FencedStore store, StoreUnit unit, Grant grant, String read) {
        long token = grant.token().value();
        Op op = options.workload() == Workload.SET ? Op.ADD : Op.WRITE;
        String key = options.workload() == Workload.SET ? SET_KEY : COUNTER_KEY;
        String scope = scopeOf(grant);
        String slot = slotOf(grant);
        String value;
        String stored;
        if (op == Op.WRITE) {
            value = Long.toString(Long.parseLong(read) + 1);
            stored = value;
        } else {
            value = options.id() + "-" + (++elementsAdded);
            stored = read.isEmpty() ? value : read + "," + value;
        }
        note(Type.INVOKE, op, token, value, slot);
        try {
            WriteReceipt receipt;
            if (unit != null) {
                unit.put(key, stored);
                receipt = unit.commit();
            } else {
                // fenced without a unit: a replicated store's cycle, whose claim raised the fence before the read
                receipt = store.put(scope, key, stored, options.fencing() ? grant.sequencer()
                        : controlTokens(store).sequencer(scope, grant.token()));
            }
            history.append(HistoryEvent.of(history.nowMicros(), options.id(), Type.OK, op).withToken(token)
                    .withValue(value).withRevision(receipt.revision()).withTarget(slot));
            control.println(WorkerControl.wrote(token));
            control.flush();
        } catch (RuntimeException e) {
            if (controlTokens != null && e instanceof StaleWriteException) {
                controlTokens.refused(scope);
            }
            noteFailure(outcomeOfWrite(e), op, token, value, slot, e);
        }
    }

    /** The control's tokens (fencing off), made on first use. */
    private ControlTokens controlTokens(FencedStore store) {
        if (controlTokens == null) {
            controlTokens = new ControlTokens(scope -> {
                ScopeInfo fence = store.fence(scope);
                return fence.exists() ? OptionalLong.of(fence.accepted()) : OptionalLong.empty();
            });
        }
        return controlTokens;
    }

    private void release(Grant grant) {
        long token = grant.token().value();
        String slot = slotOf(grant);
        note(Type.INVOKE, Op.RELEASE, token, "", slot);
        try {
            grant.close();
            note(Type.OK, Op.RELEASE, token, "", slot);
        } catch (RuntimeException e) {
            noteFailure(Type.UNKNOWN, Op.RELEASE, token, "", slot, e);
        }
    }

    /**
     * Whether a failed write may have been applied. Refusals are definite: stale (unless a retry followed a lost
     * answer), a unit that expired, a unit write that never reached the commit. A commit whose unit the store no
     * longer knows may have been applied before a store restart, so it is unknown, like every transport error.
     */
    static Type outcomeOfWrite(RuntimeException e) {
        if (e instanceof StaleWriteException stale) {
            return stale.retried() ? Type.UNKNOWN : Type.FAIL;
        }
        if (e instanceof LimitExceededException) {
            return Type.FAIL;
        }
        return Type.UNKNOWN;
    }

    private static Type outcomeOfRead(RuntimeException e) {
        return e instanceof FencerException && !(e instanceof UnavailableException) ? Type.FAIL : Type.UNKNOWN;
    }

    /**
     * Returns the error catalogue's reason for {@code e} ({@code STALE_TOKEN}), what the checker judges a refusal by,
     * since a message may be reworded; empty when {@code e} is none of the catalogue's errors.
     */
    static String reasonOf(Throwable e) {
        return e instanceof FencerException catalogued ? catalogued.reason().name() : "";
    }

    static String describe(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.length() > 300 ? message.substring(0, 300) + "..." : message;
    }

    /**
     * Thinks {@code millis} between the read and the write, or less when the worker is asked to stop meanwhile: the
     * cycle then ends as it would have (the write, the release), without holding up the end of the run by a think
     * of up to {@code --think-max} per worker the lock passes through.
     */
    private void think(long millis) {
        try {
            stopAsked.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sleeps {@code millis} (nothing when not positive); an interrupt ends the sleep and stays set. */
    public static void pause(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

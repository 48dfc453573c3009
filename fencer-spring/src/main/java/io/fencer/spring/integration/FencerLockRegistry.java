package io.fencer.spring.integration;

import io.fencer.client.FencedLock;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.LockNames;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.spring.FencerMetrics;
import io.fencer.spring.FencerMetrics.Component;
import io.fencer.spring.FencerMetrics.Outcome;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@code LockRegistry} backed by Fencer, which behaves like the registries users know (JDBC,
 * Redis, ZooKeeper) and adds the grant's fencing token.
 *
 * <pre>{@code
 * Lock lock = registry.obtain("orders");
 * if (lock.tryLock(5, TimeUnit.SECONDS)) {
 *     try {
 *         store.put("orders", "order-17", "paid", registry.sequencer("orders"));   // refused once superseded
 *     } finally {
 *         lock.unlock();
 *     }
 * }
 * }</pre>
 *
 * <p>{@link #obtain} returns one {@link Lock} per key (the key's {@code toString()} is the Fencer lock name). Within
 * this registry the lock is a {@link ReentrantLock}: reentrant per thread, held by one thread at a time, unlocked by
 * its owner only ({@link IllegalStateException} for any other thread). The first hold of a thread takes the Fencer
 * lock through the registry's session (opened with the registry's ttl, kept alive in the background, reopened after
 * a loss), the last unlock releases it. {@code tryLock(time, unit)} waits in the service's FIFO queue for what is
 * left of its time.
 *
 * <p>A lock whose session is lost while held (expired, unreachable past the local lease) may be granted to
 * someone else. Its holder then gets {@link ConcurrentModificationException} from {@code unlock}, as from Spring
 * Integration's own registries, and {@link IllegalStateException} from {@link #renewLock}; writes carrying its
 * token are refused by the resources that check tokens. Interrupts are seen between waits of at most
 * {@value #WAIT_SLICE_MILLIS} ms. {@link Lock#newCondition()} is not supported. Thread-safe.
 */
public final class FencerLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry, AutoCloseable {
    /** The longest single wait in the service's queue before an interruptible acquire looks at its interrupt. */
    static final long WAIT_SLICE_MILLIS = 1_000;
    /** The longest single wait the protocol allows. */
    private static final Duration WAIT_MAX = Duration.ofHours(1);
    private static final long RELEASE_RETRY_MILLIS = 100;
    private static final System.Logger LOG = System.getLogger(FencerLockRegistry.class.getName());

    private final FencerClient client;
    private final Duration sessionTtl;
    private final FencerMetrics metrics;
    private final Ticker ticker;
    private final Map<String, RegistryLock> locks = new ConcurrentHashMap<>();
    private final Object sessionGuard = new Object();
    private Session session; // guarded by sessionGuard
    private boolean closed; // guarded by sessionGuard

    /** Creates a registry whose locks are held through sessions of lease {@code sessionTtl}. */
    public FencerLockRegistry(FencerClient client, Duration sessionTtl) {
        this(client, sessionTtl, FencerMetrics.NONE);
    }

    /** As {@link #FencerLockRegistry(FencerClient, Duration)}, recording acquires and lease losses in metrics. */
    public FencerLockRegistry(FencerClient client, Duration sessionTtl, FencerMetrics metrics) {
        this(client, sessionTtl, metrics, Ticker.system());
    }

    /** As the other constructors, measuring the age of unused locks with {@code ticker}. */
    public FencerLockRegistry(FencerClient client, Duration sessionTtl, FencerMetrics metrics, Ticker ticker) {
        this.client = Objects.requireNonNull(client, "client");
        this.sessionTtl = Objects.requireNonNull(sessionTtl, "sessionTtl");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /** Returns the lock of {@code lockKey}: the same object for the same key until expired as unused. */
    @Override
    public Lock obtain(Object lockKey) {
        String name = LockNames.check(Objects.requireNonNull(lockKey, "lockKey").toString());
        RegistryLock lock = locks.computeIfAbsent(name, RegistryLock::new);
        lock.touch();
        return lock;
    }

    /**
     * Returns the token of the grant the current thread holds on {@code lockKey}'s lock.
     *
     * @throws IllegalStateException when the current thread does not hold it
     */
    public FencingToken token(Object lockKey) {
        return heldByCurrentThread(lockKey).hold().grant.token();
    }

    /** As {@link #token(Object)}, in the wire form the service sent (signed when the service signs tokens). */
    public String sequencer(Object lockKey) {
        return heldByCurrentThread(lockKey).hold().grant.sequencer();
    }

    /**
     * Confirms with the service that the current thread's grant on {@code lockKey} is still the lock's current one.
     * The lease itself is renewed by the session's keepalives, all the time the registry holds locks.
     *
     * @throws IllegalStateException when the current thread does not hold the lock, or when its grant was lost
     */
    @Override
    public void renewLock(Object lockKey) {
        RegistryLock lock = heldByCurrentThread(lockKey);
        Hold hold = lock.hold();
        Grant grant = hold.grant;
        if (!hold.session.isAlive()) {
            hold.recordLoss();
            throw new IllegalStateException("could not renew lock '" + lock.name + "': its session was lost, "
                    + describe(hold.session));
        }
        TokenStatus status;
        try {
            status = client.validate(grant.token());
        } catch (PermissionDeniedException noRead) {
            lock.touch(); // an identity granted lock without read: the live session is all there is to ask
            return;
        }
        if (status.status() != TokenStatus.Status.CURRENT) {
            throw new IllegalStateException("could not renew lock '" + lock.name + "': its grant " + grant.token()
                    + " is " + status.status() + " (the service's last token " + status.lastToken() + ")");
        }
        lock.touch();
    }

    /**
     * Forgets the locks that no thread holds and nobody has obtained or used for {@code age} ms; a later
     * {@link #obtain} makes a new one.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = ticker.nanoTime();
        long ageNanos = TimeUnit.MILLISECONDS.toNanos(age);
        locks.values().removeIf(lock -> now - lock.lastUsedNanos >= ageNanos && lock.unusedNow());
    }

    /** Returns how many locks the registry keeps, held or not. */
    public int size() {
        return locks.size();
    }

    /** Closes the registry's session: the service releases every lock it holds. */
    @Override
    public void close() {
        synchronized (sessionGuard) {
            closed = true;
            if (session != null) {
                session.close();
            }
        }
    }

    private RegistryLock heldByCurrentThread(Object lockKey) {
        RegistryLock lock = locks.get(Objects.requireNonNull(lockKey, "lockKey").toString());
        if (lock == null || !lock.local.isHeldByCurrentThread()) {
            throw new IllegalStateException("the current thread does not hold lock '" + lockKey + "'");
        }
        return lock;
    }

    /** Returns the registry's session, opening a new one when there is none or it was lost. */
    private Session session() {
        synchronized (sessionGuard) {
            if (closed) {
                throw new IllegalStateException("the FencerLockRegistry is closed");
            }
            if (session == null || !session.isAlive()) {
                Session opened = client.openSession(sessionTtl);
                opened.lost().thenAccept(this::sessionLost);
                session = opened;
            }
            return session;
        }
    }

    private void sessionLost(SessionLoss loss) {
        if (loss.cause() == SessionLoss.Cause.CLOSED) {
            return;
        }
        for (RegistryLock lock : locks.values()) {
            Hold hold = lock.hold;
            if (hold != null && hold.session.id() == loss.sessionId()) {
                hold.recordLoss();
            }
        }
    }

    private static String describe(Session session) {
        SessionLoss loss = session.ended().toCompletableFuture().getNow(null);
        return loss == null ? "session " + session.id() : loss.cause() + ": " + loss.detail();
    }

    /** A Fencer grant held by one of the registry's locks, and the session it was granted through. */
    private final class Hold {
        final Grant grant;
        final Session session;
        private final AtomicBoolean lossRecorded = new AtomicBoolean();

        Hold(Grant grant, Session session) {
            this.grant = grant;
            this.session = session;
        }

        /** Counts the hold's loss once, whoever sees it first: the session's listener or the holder. */
        void recordLoss() {
            if (lossRecorded.compareAndSet(false, true)) {
                metrics.leaseLost(Component.LOCK_REGISTRY);
            }
        }
    }

    /** One key's lock: a local reentrant lock, and the Fencer grant while some thread holds it. */
    private final class RegistryLock implements Lock {
        final String name;
        final ReentrantLock local = new ReentrantLock();
        volatile long lastUsedNanos = ticker.nanoTime();
        /** Written by the holding thread only, while it holds local; volatile for the session-loss listener. */
        volatile Hold hold;

        RegistryLock(String name) {
            this.name = name;
        }

        void touch() {
            lastUsedNanos = ticker.nanoTime();
        }

        Hold hold() {
            Hold held = hold;
            if (held == null) {
                throw new IllegalStateException("lock '" + name + "' holds no grant");
            }
            return held;
        }

        boolean unusedNow() {
            if (!local.tryLock()) {
                return false;
            }
            try {
                return local.getHoldCount() == 1 && hold == null;
            } finally {
                local.unlock();
            }
        }

        @Override
        public void lock() {
            local.lock();
            try {
                takeFirstHold(-1, false);
            } catch (InterruptedException impossible) {
                throw new AssertionError("an uninterruptible acquire was interrupted", impossible);
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            local.lockInterruptibly();
            takeFirstHold(-1, true);
        }

        @Override
        public boolean tryLock() {
            if (!local.tryLock()) {
                return false;
            }
            try {
                return takeFirstHold(0, false);
            } catch (InterruptedException impossible) {
                throw new AssertionError("a non-waiting acquire was interrupted", impossible);
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            long deadlineNanos = System.nanoTime() + unit.toNanos(time);
            if (!local.tryLock(time, unit)) {
                return false;
            }
            return takeFirstHold(Math.max(0, deadlineNanos - System.nanoTime()), true);
        }

        /**
         * With {@link #local} just taken: takes the Fencer lock when this is the thread's first hold, within
         * {@code waitNanos} (-1: no limit). Returns false, with {@link #local} released, when the wait ran out; on
         * any exception {@link #local} is released too.
         */
        private boolean takeFirstHold(long waitNanos, boolean interruptible) throws InterruptedException {
            touch();
            if (local.getHoldCount() > 1) {
                return true;
            }
            boolean taken = false;
            try {
                taken = acquire(waitNanos, interruptible);
                metrics.acquire(Component.LOCK_REGISTRY, taken ? Outcome.ACQUIRED
                        : waitNanos == 0 ? Outcome.BUSY : Outcome.TIMED_OUT);
                return taken;
            } catch (RuntimeException | InterruptedException e) {
                metrics.acquire(Component.LOCK_REGISTRY, Outcome.FAILED);
                throw e;
            } finally {
                if (!taken) {
                    local.unlock();
                }
            }
        }

        /**
         * Takes the Fencer lock, in waits of at most a slice when interruptible; false when the wait ran out. An
         * interrupt cancels the blocking call in flight (gRPC's blocking calls are interruptible): interruptible
         * acquires then throw, the others ask again and restore the interrupt when done.
         */
        private boolean acquire(long waitNanos, boolean interruptible) throws InterruptedException {
            long deadlineNanos = System.nanoTime() + Math.max(0, waitNanos);
            // Not interruptible: an interrupt pending on entry would cancel every call; it is restored when done.
            boolean interruptedMeanwhile = !interruptible && Thread.interrupted();
            try {
                while (true) {
                    if (interruptible && Thread.interrupted()) {
                        throw new InterruptedException("interrupted while waiting for lock '" + name + "'");
                    }
                    FencedLock fenced = null;
                    try {
                        Session through = session();
                        fenced = through.lock(name);
                        Optional<Grant> granted = attempt(fenced, waitNanos, deadlineNanos, interruptible);
                        if (granted.isPresent()) {
                            hold = new Hold(granted.get(), through);
                            return true;
                        }
                    } catch (SessionExpiredException sessionLost) {
                        continue; // the next round opens a new session
                    } catch (UnavailableException e) {
                        if (!Thread.interrupted()) {
                            throw e;
                        }
                        if (interruptible) {
                            releaseUnseenGrant(fenced);
                            throw new InterruptedException("interrupted while waiting for lock '" + name + "'");
                        }
                        // Not interruptible: ask again; a grant that won the race comes back to its holder.
                        interruptedMeanwhile = true;
                        continue;
                    }
                    if (waitNanos >= 0 && deadlineNanos - System.nanoTime() <= 0) {
                        return false;
                    }
                }
            } finally {
                if (interruptedMeanwhile) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /** One acquire of at most what is left (a slice when interruptible); empty when it waited in vain. */
        private Optional<Grant> attempt(FencedLock fenced, long waitNanos, long deadlineNanos, boolean interruptible) {
            long leftNanos = waitNanos < 0 ? WAIT_MAX.toNanos() : Math.max(0, deadlineNanos - System.nanoTime());
            Duration wait = Duration.ofNanos(interruptible
                    ? Math.min(leftNanos, TimeUnit.MILLISECONDS.toNanos(WAIT_SLICE_MILLIS)) : leftNanos);
            try {
                return wait.isZero() ? fenced.tryAcquire() : Optional.of(fenced.acquire(wait));
            } catch (LockTimeoutException waitedInVain) {
                return Optional.empty();
            }
        }

        /**
         * After an interrupt cancelled an acquire: a grant may have won the race with the cancellation and its
         * answer been lost, leaving the lock held by the registry's session unknown to anyone. Asking again hands
         * such a grant back to its holder, which releases it.
         */
        private void releaseUnseenGrant(FencedLock fenced) {
            if (fenced == null) {
                return; // interrupted before an acquire was sent
            }
            try {
                fenced.tryAcquire().ifPresent(Grant::close);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not check lock ''{0}'' for a grant won while its "
                        + "acquire was interrupted: {1}", name, e.getMessage());
            }
        }

        /**
         * Unlocks: the thread's last hold releases the Fencer lock.
         *
         * @throws IllegalStateException when the current thread does not hold the lock
         * @throws ConcurrentModificationException when the lock's session was lost while it was held: the lock may
         *     have been granted to someone else meanwhile (the local lock is released all the same)
         */
        @Override
        public void unlock() {
            if (!local.isHeldByCurrentThread()) {
                throw new IllegalStateException("the current thread does not own lock '" + name + "'");
            }
            if (local.getHoldCount() > 1) {
                local.unlock();
                return;
            }
            Hold held = hold;
            hold = null;
            touch();
            try {
                if (!held.session.isAlive()) {
                    held.recordLoss();
                    throw new ConcurrentModificationException("lock '" + name + "' (" + held.grant.token() + ") was "
                            + "lost while held, " + describe(held.session) + ": it may have been granted to someone"
                            + " else, and what it protected may have been changed meanwhile");
                }
                release(held.grant, held.session);
            } finally {
                local.unlock();
            }
        }

        /**
         * Releases the grant, retrying while the service is unreachable: the registry's session stays alive for
         * its other locks, so an unreleased grant would stay held. Bounded by the session's lease: a session that
         * cannot reach the service is lost when its local lease ends, and the service releases its locks then.
         * Waits for the service ({@link Grant#release()}, not {@code close()}): a LockRegistry's unlock, as
         * Spring's JDBC and Redis registries do it, has released the lock for every node once it returns.
         */
        private void release(Grant held, Session through) {
            while (true) {
                try {
                    held.release();
                    return;
                } catch (UnavailableException unreachable) {
                    if (!through.isAlive()) {
                        return;
                    }
                    try {
                        Thread.sleep(RELEASE_RETRY_MILLIS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw unreachable;
                    }
                }
            }
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("FencerLockRegistry locks have no conditions");
        }

        @Override
        public String toString() {
            Hold held = hold;
            return "FencerLock[" + name + (held == null ? ", unlocked" : ", " + held.grant.token()) + "]";
        }
    }
}

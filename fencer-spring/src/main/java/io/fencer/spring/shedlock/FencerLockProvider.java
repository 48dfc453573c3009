package io.fencer.spring.shedlock;

import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockStatus;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.PermissionDeniedException;
import io.fencer.spring.FencerMetrics;
import io.fencer.spring.FencerMetrics.Component;
import io.fencer.spring.FencerMetrics.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * A ShedLock {@link LockProvider} backed by Fencer: each run of a {@code @SchedulerLock} job holds a Fencer lock of
 * the job's name, and gets its fencing token ({@link FencedJobs#currentToken()}) to pass with its writes.
 *
 * <p>How ShedLock's settings map onto Fencer:
 * <ul>
 *   <li>{@code lockAtMostFor} is the lease: each run opens a session with that ttl (at least 1 s; above 1 h it is
 *       1 h, the longest session) and holds the lock through it. Keepalives renew the lease while the node lives,
 *       so a job running longer than {@code lockAtMostFor} keeps its lock, and a dead or paused node loses it when
 *       the lease ends. (ShedLock's storage providers release the lock at {@code lockAtMostFor} even while the job
 *       runs; here only a lost lease ends a run's lock, and the job learns it, see {@link FencedJob}.)
 *   <li>{@code lockAtLeastFor} is honoured: a run that ends sooner keeps the lock, its session still kept alive,
 *       until {@code lockAtLeastFor} from the lock's start has passed, then releases it. A node that dies meanwhile
 *       releases it when its lease ends. Closing the provider (with its application context) releases at once.
 *   <li>Extension ({@code LockExtender.extendActiveLock}) asks the service whether the run's token is still the
 *       lock's current one and, if so, moves {@code lockAtLeastFor} to count from now; the lease keeps the ttl it was
 *       opened with (it is renewed anyway). A run whose lease is lost cannot extend: ShedLock then throws
 *       {@code LockCanNotBeExtendedException}.
 * </ul>
 *
 * <p>A node never runs a job twice at once, nor again while the job's {@code lockAtLeastFor} holds: a name held by
 * this provider is busy here without asking the service. A name held elsewhere costs one status read, not a
 * session. Thread-safe.
 */
public final class FencerLockProvider implements LockProvider, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(FencerLockProvider.class.getName());
    /** The shortest lease: the service's shortest session ttl. */
    static final Duration LEASE_MIN = Duration.ofSeconds(1);
    /** The longest lease: the service's longest session ttl. */
    static final Duration LEASE_MAX = Duration.ofHours(1);

    private final FencerClient client;
    private final FencerMetrics metrics;
    /** Names this provider holds or is taking, each with its run (null while it is being taken). */
    private final Map<String, Optional<Run>> held = new ConcurrentHashMap<>();
    private final ScheduledThreadPoolExecutor releases;

    /** Creates a provider on {@code client}, recording nothing. */
    public FencerLockProvider(FencerClient client) {
        this(client, FencerMetrics.NONE);
    }

    /** Creates a provider on {@code client}, recording its acquires and lease losses in {@code metrics}. */
    public FencerLockProvider(FencerClient client, FencerMetrics metrics) {
        this.client = Objects.requireNonNull(client, "client");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.releases = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fencer-shedlock-release");
            thread.setDaemon(true);
            return thread;
        });
        this.releases.setRemoveOnCancelPolicy(true);
    }

    /**
     * Takes the job's lock if it is free, without waiting.
     *
     * @throws IllegalArgumentException when {@code lockAtMostFor} is shorter than the shortest lease, 1 s
     * @throws io.fencer.core.FencerException when the service refuses or cannot be reached; nothing is held
     */
    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        String name = configuration.getName();
        Duration lease = lease(configuration);
        if (held.putIfAbsent(name, Optional.empty()) != null) {
            metrics.acquire(Component.SHEDLOCK, Outcome.BUSY);
            return Optional.empty();
        }
        Run run;
        try {
            run = take(name, lease, configuration.getLockAtLeastUntil());
        } catch (RuntimeException e) {
            held.remove(name);
            metrics.acquire(Component.SHEDLOCK, Outcome.FAILED);
            throw e;
        }
        if (run == null) {
            held.remove(name);
            metrics.acquire(Component.SHEDLOCK, Outcome.BUSY);
            return Optional.empty();
        }
        held.put(name, Optional.of(run));
        metrics.acquire(Component.SHEDLOCK, Outcome.ACQUIRED);
        FencedJobs.started(run);
        return Optional.of(new RunLock(run));
    }

    private static Duration lease(LockConfiguration configuration) {
        Duration lockAtMostFor = configuration.getLockAtMostFor();
        if (lockAtMostFor.compareTo(LEASE_MIN) < 0) {
            throw new IllegalArgumentException("lockAtMostFor of job '" + configuration.getName() + "' is "
                    + lockAtMostFor.toMillis() + " ms, below leaseMin " + LEASE_MIN.toMillis()
                    + " ms: it is the Fencer lease, and the shortest session lasts " + LEASE_MIN.toMillis() + " ms");
        }
        return lockAtMostFor.compareTo(LEASE_MAX) > 0 ? LEASE_MAX : lockAtMostFor;
    }

    /** Returns the run holding {@code name} through a fresh session, or null when someone else holds it. */
    private Run take(String name, Duration lease, Instant lockAtLeastUntil) {
        if (heldElsewhere(name)) {
            return null;
        }
        Session session = client.openSession(lease);
        Optional<Grant> grant;
        try {
            grant = session.lock(name).tryAcquire();
        } catch (RuntimeException e) {
            session.close();
            throw e;
        }
        if (grant.isEmpty()) {
            session.close();
            return null;
        }
        Run run = new Run(name, session, grant.get(), lockAtLeastUntil);
        session.lost().thenAccept(loss -> {
            if (loss.cause() != SessionLoss.Cause.CLOSED) {
                metrics.leaseLost(Component.SHEDLOCK);
                LOG.log(System.Logger.Level.WARNING, "job ''{0}'' lost its lock {1}: {2}", name,
                        run.grant.token(), loss.detail());
            }
        });
        return run;
    }

    /**
     * Asks for the lock's status first: a read, where a busy attempt through a session of its own would cost
     * opening and closing it. An identity whose ACL grants {@code lock} without {@code read} skips the question.
     */
    private boolean heldElsewhere(String name) {
        try {
            LockStatus status = client.describe(name);
            return status.holder() != null || status.delayed();
        } catch (PermissionDeniedException noRead) {
            return false;
        }
    }

    private void unlock(Run run) {
        FencedJobs.ended(run);
        Duration holdFor = Duration.between(ClockProvider.now(), run.lockAtLeastUntil);
        if (holdFor.isNegative() || holdFor.isZero()) {
            release(run);
            return;
        }
        try {
            releases.schedule(() -> release(run), holdFor.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            release(run);
        }
    }

    /** Closes the run's session, which releases its lock; an unreachable service expires it after its lease. */
    private void release(Run run) {
        try {
            run.session.close();
        } finally {
            held.remove(run.name, Optional.of(run));
        }
    }

    private Optional<SimpleLock> extend(Run run, Duration lockAtLeastFor) {
        if (!run.session.isAlive()) {
            return Optional.empty();
        }
        if (!stillCurrent(run) || !run.session.isAlive()) {
            return Optional.empty();
        }
        run.lockAtLeastUntil = ClockProvider.now().plus(lockAtLeastFor);
        return Optional.of(new RunLock(run));
    }

    /** Asks the service whether the run's grant is still current; without {@code read}, its live session says so. */
    private boolean stillCurrent(Run run) {
        try {
            return client.validate(run.grant.token()).status() == TokenStatus.Status.CURRENT;
        } catch (PermissionDeniedException noRead) {
            return run.session.isAlive();
        }
    }

    /** Releases every lock this provider still holds for {@code lockAtLeastFor}, at once. */
    @Override
    public void close() {
        releases.shutdownNow();
        for (Optional<Run> run : List.copyOf(held.values())) {
            run.ifPresent(this::release);
        }
    }

    /** One run of a job under its lock: the session that holds it, the grant, and the hold's end. */
    private static final class Run implements FencedJob {
        final String name;
        final Session session;
        final Grant grant;
        volatile Instant lockAtLeastUntil;

        Run(String name, Session session, Grant grant, Instant lockAtLeastUntil) {
            this.name = name;
            this.session = session;
            this.grant = grant;
            this.lockAtLeastUntil = lockAtLeastUntil;
        }

        @Override
        public String lockName() {
            return name;
        }

        @Override
        public FencingToken token() {
            return grant.token();
        }

        @Override
        public String sequencer() {
            return grant.sequencer();
        }

        @Override
        public boolean leaseLost() {
            return !session.isAlive();
        }

        @Override
        public Duration leaseRemaining() {
            return session.leaseRemaining();
        }

        @Override
        public CompletionStage<SessionLoss> lost() {
            return session.ended(); // "or the lock released": the run's session closes when the lock is
        }

        @Override
        public String toString() {
            return "FencedJob[" + grant.token() + ", " + session + "]";
        }
    }

    /**
     * ShedLock's handle of a run: unlocked once, or replaced by the handle an extension returns (ShedLock's
     * contract for {@link SimpleLock}).
     */
    private final class RunLock implements SimpleLock {
        private final Run run;
        private final AtomicBoolean valid = new AtomicBoolean(true);

        RunLock(Run run) {
            this.run = run;
        }

        @Override
        public void unlock() {
            if (!valid.compareAndSet(true, false)) {
                throw invalid();
            }
            FencerLockProvider.this.unlock(run);
        }

        @Override
        public Optional<SimpleLock> extend(Duration lockAtMostFor, Duration lockAtLeastFor) {
            if (!valid.get()) {
                throw invalid();
            }
            Optional<SimpleLock> extended = FencerLockProvider.this.extend(run, lockAtLeastFor);
            extended.ifPresent(replacement -> valid.set(false));
            return extended;
        }

        private IllegalStateException invalid() {
            return new IllegalStateException("lock of job '" + run.name + "' was already unlocked or extended");
        }

        @Override
        public String toString() {
            return "SimpleLock[" + run + "]";
        }
    }
}

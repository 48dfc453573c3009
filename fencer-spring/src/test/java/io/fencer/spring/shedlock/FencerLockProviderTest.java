package io.fencer.spring.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.core.FencingToken;
import io.fencer.testing.FencerTestServer;
import io.fencer.spring.PausableTicker;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockExtender;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FencerLockProvider} under ShedLock's own executor against a real server: two providers are two nodes.
 * The ShedLock settings as the provider maps them: busy, lockAtLeastFor, a job outliving lockAtMostFor, extension.
 */
class FencerLockProviderTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path directory;
    private static FencerTestServer server;

    private final PausableTicker tickerA = new PausableTicker();
    private FencerClient clientA;
    private FencerClient clientB;
    private FencerLockProvider nodeA;
    private FencerLockProvider nodeB;
    private String job;

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(directory.resolve("data"));
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @BeforeEach
    void connect(TestInfo test) {
        clientA = Fencer.newBuilder().endpoints(server.endpoint()).ticker(tickerA).build();
        clientB = Fencer.connect(server.endpoint());
        nodeA = new FencerLockProvider(clientA);
        nodeB = new FencerLockProvider(clientB);
        job = "job-" + test.getTestMethod().orElseThrow().getName().hashCode();
    }

    @AfterEach
    void close() {
        nodeA.close();
        nodeB.close();
        clientA.close();
        clientB.close();
    }

    private LockConfiguration configuration(Duration lockAtMostFor, Duration lockAtLeastFor) {
        return new LockConfiguration(ClockProvider.now(), job, lockAtMostFor, lockAtLeastFor);
    }

    @Test
    void lock_heldByAnotherNode_isBusyUntilReleased() {
        LockConfiguration configuration = configuration(Duration.ofSeconds(10), Duration.ZERO);
        SimpleLock first = nodeA.lock(configuration).orElseThrow();
        FencingToken firstToken = clientB.describe(job).holder();

        assertThat(nodeB.lock(configuration)).as("held by node A").isEmpty();
        first.unlock();
        SimpleLock second = nodeB.lock(configuration).orElseThrow();

        FencingToken secondToken = clientA.describe(job).holder();
        assertThat(secondToken.value()).isGreaterThan(firstToken.value());
        second.unlock();
        assertThat(clientA.describe(job).holder()).as("released at once without lockAtLeastFor").isNull();
    }

    @Test
    void lock_heldByThisNode_isBusyHereToo() {
        LockConfiguration configuration = configuration(Duration.ofSeconds(10), Duration.ZERO);
        SimpleLock held = nodeA.lock(configuration).orElseThrow();

        assertThat(nodeA.lock(configuration)).as("the service would hand the holder its grant back").isEmpty();
        held.unlock();
        assertThat(nodeA.lock(configuration)).isPresent().get().satisfies(SimpleLock::unlock);
    }

    @Test
    void unlock_beforeLockAtLeastFor_keepsTheLockUntilItHasPassed() {
        LockConfiguration configuration = configuration(Duration.ofSeconds(10), Duration.ofSeconds(3));
        nodeA.lock(configuration).orElseThrow().unlock();

        FencingToken holder = clientB.describe(job).holder();
        assumeTrue(ClockProvider.now().isBefore(configuration.getLockAtLeastUntil()),
                "the machine stalled past lockAtLeastUntil before the lock was looked at");
        assertThat(holder).as("still held after unlock, before lockAtLeastUntil").isNotNull();
        AtomicReference<SimpleLock> taken = new AtomicReference<>();
        await().atMost(GENEROUS).until(() -> {
            nodeB.lock(configuration(Duration.ofSeconds(10), Duration.ZERO)).ifPresent(taken::set);
            return taken.get() != null;
        });
        assertThat(ClockProvider.now()).as("released no sooner than lockAtLeastUntil")
                .isAfterOrEqualTo(configuration.getLockAtLeastUntil());
        taken.get().unlock();
    }

    @Test
    void job_runningPastLockAtMostFor_keepsItsLockAndItsToken() throws Throwable {
        Duration lockAtMostFor = Duration.ofSeconds(3);
        DefaultLockingTaskExecutor executor = new DefaultLockingTaskExecutor(nodeA);
        AtomicReference<FencingToken> seen = new AtomicReference<>();

        executor.executeWithLock((Runnable) () -> {
            FencedJob running = FencedJobs.current().orElseThrow();
            seen.set(FencedJobs.currentToken());
            long startNanos = System.nanoTime();
            // Two and a half leases long: a provider that let lockAtMostFor end the lock would have lost it twice.
            await().atMost(GENEROUS).until(() -> System.nanoTime() - startNanos > 5 * lockAtMostFor.toNanos() / 2);
            assertThat(running.leaseLost()).isFalse();
            assertThat(clientB.describe(job).holder()).isEqualTo(running.token());
            assertThat(nodeB.lock(configuration(lockAtMostFor, Duration.ZERO))).isEmpty();
        }, configuration(lockAtMostFor, Duration.ZERO));

        assertThat(seen.get().lock()).isEqualTo(job);
        assertThat(FencedJobs.current()).as("cleared when the job ended").isEmpty();
        assertThat(clientB.describe(job).holder()).isNull();
    }

    @Test
    void extendActiveLock_whileHeld_keepsTheLockForTheNewLockAtLeastFor() throws Throwable {
        DefaultLockingTaskExecutor executor = new DefaultLockingTaskExecutor(nodeA);
        AtomicReference<Instant> extendedUntil = new AtomicReference<>();

        executor.executeWithLock((Runnable) () -> {
            Instant before = ClockProvider.now();
            LockExtender.extendActiveLock(Duration.ofSeconds(10), Duration.ofSeconds(3));
            extendedUntil.set(before.plusSeconds(3));
        }, configuration(Duration.ofSeconds(10), Duration.ZERO));

        FencingToken holder = clientB.describe(job).holder();
        assumeTrue(ClockProvider.now().isBefore(extendedUntil.get()),
                "the machine stalled past the extended lockAtLeastFor before the lock was looked at");
        assertThat(holder).as("held on for the extended lockAtLeastFor").isNotNull();
        await().atMost(GENEROUS).until(() -> clientB.describe(job).holder() == null);
        assertThat(ClockProvider.now()).as("released no sooner than the extension's lockAtLeastUntil")
                .isAfterOrEqualTo(extendedUntil.get());
    }

    @Test
    void extendActiveLock_afterTheLeaseWasLost_cannotExtend() throws Throwable {
        DefaultLockingTaskExecutor executor = new DefaultLockingTaskExecutor(nodeA);
        AtomicReference<Throwable> extension = new AtomicReference<>();
        AtomicReference<Boolean> lostBeforeExtending = new AtomicReference<>();

        executor.executeWithLock((Runnable) () -> {
            FencedJob running = FencedJobs.current().orElseThrow();
            tickerA.pause(); // node A stops: no keepalive goes out, and the service expires its session
            await().atMost(GENEROUS).until(() -> !running.token().equals(clientB.describe(job).holder()));
            tickerA.resume();
            lostBeforeExtending.set(running.leaseLost());
            try {
                LockExtender.extendActiveLock(Duration.ofSeconds(10), Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                extension.set(e);
            }
        }, configuration(Duration.ofSeconds(1), Duration.ZERO));

        assertThat(lostBeforeExtending.get()).as("the fault was real: the lease had ended").isTrue();
        assertThat(extension.get()).isInstanceOf(LockExtender.LockCanNotBeExtendedException.class);
    }

    @Test
    void lock_withLockAtMostForBelowTheShortestLease_isRefusedNamingTheLimit() {
        assertThatThrownBy(() -> nodeA.lock(configuration(Duration.ofMillis(500), Duration.ZERO)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("500 ms")
                .hasMessageContaining("leaseMin 1000 ms");
        assertThat(clientB.describe(job).holder()).isNull();
        assertThat(nodeA.lock(configuration(Duration.ofSeconds(1), Duration.ZERO))).as("nothing was left held")
                .isPresent().get().satisfies(SimpleLock::unlock);
    }

    @Test
    void currentToken_outsideAJob_throwsNamingTheThread() {
        assertThatThrownBy(FencedJobs::currentToken).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(Thread.currentThread().getName());
        assertThat(FencedJobs.current()).isEqualTo(Optional.empty());
    }

    @Test
    void unlock_twice_isRefused() {
        SimpleLock held = nodeA.lock(configuration(Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
        held.unlock();

        assertThatThrownBy(held::unlock).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already unlocked");
    }
}

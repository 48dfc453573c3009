package io.fencer.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.core.FencingToken;
import io.fencer.spring.FencerAutoConfiguration;
import io.fencer.spring.FencerMetrics;
import io.fencer.testing.FencerTestServer;
import io.fencer.spring.PausableTicker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * {@link FencerLockRegistry} against the behaviour Spring Integration's own registries promise, on a real server:
 * two registries on two clients are two nodes.
 */
class FencerLockRegistryTest {
    // Long enough for keepalives on a loaded machine; the expiry test waits one ttl for it.
    private static final Duration TTL = Duration.ofSeconds(5);
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path directory;
    private static FencerTestServer server;

    private final PausableTicker tickerA = new PausableTicker();
    private final AtomicInteger leaseLossesA = new AtomicInteger();
    private FencerClient clientA;
    private FencerClient clientB;
    private FencerLockRegistry nodeA;
    private FencerLockRegistry nodeB;
    private String key;

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
        nodeA = new FencerLockRegistry(clientA, TTL, new FencerMetrics() {
            @Override
            public void leaseLost(Component component) {
                leaseLossesA.incrementAndGet();
            }
        });
        nodeB = new FencerLockRegistry(clientB, TTL);
        key = "orders-" + Integer.toHexString(test.getTestMethod().orElseThrow().getName().hashCode());
    }

    @AfterEach
    void close() {
        nodeA.close();
        nodeB.close();
        clientA.close();
        clientB.close();
    }

    private FencingToken holder() {
        return clientB.describe(key).holder();
    }

    @Test
    void obtain_sameKey_returnsTheSameLock() {
        assertThat(nodeA.obtain(key)).isSameAs(nodeA.obtain(key));
        assertThat(nodeA.obtain(key)).isNotSameAs(nodeA.obtain(key + "-other"));
    }

    @Test
    void lock_thenUnlock_holdsTheFencerLockWithItsTokenThenReleasesIt() {
        Lock lock = nodeA.obtain(key);
        lock.lock();
        FencingToken token = nodeA.token(key);

        assertThat(holder()).isEqualTo(token);
        assertThat(nodeA.sequencer(key)).startsWith("fencer1.");
        lock.unlock();
        assertThat(holder()).isNull();
        assertThatThrownBy(() -> nodeA.token(key)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void lock_twiceOnOneThread_isReentrantAndReleasedByTheLastUnlock() {
        Lock lock = nodeA.obtain(key);
        lock.lock();
        FencingToken first = nodeA.token(key);
        lock.lock();

        assertThat(nodeA.token(key)).as("one grant for both holds").isEqualTo(first);
        lock.unlock();
        assertThat(holder()).as("still held after the inner unlock").isEqualTo(first);
        lock.unlock();
        assertThat(holder()).isNull();
    }

    @Test
    void tryLock_heldByAnotherNode_timesOutAndSucceedsOnceReleased() throws InterruptedException {
        Lock held = nodeA.obtain(key);
        held.lock();
        FencingToken tokenA = nodeA.token(key);
        Lock other = nodeB.obtain(key);

        assertThat(other.tryLock()).isFalse();
        assertThat(other.tryLock(200, TimeUnit.MILLISECONDS)).isFalse();
        held.unlock();
        assertThat(other.tryLock(GENEROUS.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        assertThat(nodeB.token(key).value()).isGreaterThan(tokenA.value());
        other.unlock();
    }

    @Test
    void tryLock_waitingWhileAnotherNodeHolds_isGrantedWhenItUnlocks() throws Exception {
        Lock held = nodeA.obtain(key);
        held.lock();
        CompletableFuture<FencingToken> waiter = CompletableFuture.supplyAsync(() -> {
            Lock lock = nodeB.obtain(key);
            try {
                if (!lock.tryLock(GENEROUS.toMillis(), TimeUnit.MILLISECONDS)) {
                    return null;
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            FencingToken token = nodeB.token(key);
            lock.unlock();
            return token;
        });
        await().atMost(GENEROUS).until(() -> !clientA.describe(key).waiterSessionIds().isEmpty());

        held.unlock();

        assertThat(waiter.get(60, TimeUnit.SECONDS)).isNotNull();
    }

    @Test
    void tryLock_heldByAnotherThreadOfThisNode_isFalse() throws Exception {
        Lock lock = nodeA.obtain(key);
        lock.lock();

        Boolean taken = CompletableFuture.supplyAsync(lock::tryLock).get(60, TimeUnit.SECONDS);

        assertThat(taken).isFalse();
        lock.unlock();
    }

    @Test
    void unlock_byAThreadThatIsNotTheOwner_isRefusedAndTheLockStaysHeld() throws Exception {
        Lock lock = nodeA.obtain(key);
        lock.lock();
        FencingToken token = nodeA.token(key);

        Throwable refused = CompletableFuture.supplyAsync(() -> catchThrowable(lock::unlock)).get(60, TimeUnit.SECONDS);

        assertThat(refused).isInstanceOf(IllegalStateException.class).hasMessageContaining("does not own");
        assertThat(holder()).isEqualTo(token);
        lock.unlock();
    }

    @Test
    void renewLock_whileHeld_confirmsTheGrant_andWithoutItIsRefused() {
        Lock lock = nodeA.obtain(key);
        assertThatThrownBy(() -> nodeA.renewLock(key)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("does not hold");
        lock.lock();

        nodeA.renewLock(key);

        assertThat(holder()).isEqualTo(nodeA.token(key));
        lock.unlock();
    }

    @Test
    void expireUnusedOlderThan_forgetsUnheldOldLocksOnly() {
        AtomicLong nanos = new AtomicLong();
        FencerLockRegistry registry = new FencerLockRegistry(clientB, TTL, FencerMetrics.NONE, nanos::get);
        Lock idle = registry.obtain(key + "-idle");
        Lock held = registry.obtain(key);
        held.lock();
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(10));
        Lock recent = registry.obtain(key + "-recent");

        registry.expireUnusedOlderThan(5_000);

        assertThat(registry.size()).as("the held and the recent lock stay").isEqualTo(2);
        assertThat(registry.obtain(key + "-idle")).as("a new lock for the forgotten key").isNotSameAs(idle);
        assertThat(registry.obtain(key)).isSameAs(held);
        assertThat(registry.obtain(key + "-recent")).isSameAs(recent);
        held.unlock();
        registry.close();
    }

    @Test
    void sessionExpiry_whileHeld_losesTheLock() throws InterruptedException {
        Lock lock = nodeA.obtain(key);
        lock.lock();
        FencingToken tokenA = nodeA.token(key);

        tickerA.pause(); // node A stops: no keepalive goes out, and the service expires its session
        Lock other = nodeB.obtain(key);
        assertThat(other.tryLock(GENEROUS.toMillis(), TimeUnit.MILLISECONDS)).as("granted elsewhere").isTrue();
        tickerA.resume();

        assertThat(nodeB.token(key).value()).isGreaterThan(tokenA.value());
        assertThatThrownBy(() -> nodeA.renewLock(key)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("could not renew");
        assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class)
                .hasMessageContaining(tokenA.toString());
        await().atMost(GENEROUS).untilAsserted(() -> assertThat(leaseLossesA).hasValue(1));
        other.unlock();
        assertThat(lock.tryLock(GENEROUS.toMillis(), TimeUnit.MILLISECONDS)).as("a new session takes it again")
                .isTrue();
        assertThat(nodeA.token(key).value()).isGreaterThan(tokenA.value());
        lock.unlock();
    }

    @Test
    void lockInterruptibly_interruptedWhileWaiting_throwsAndHoldsNothing() throws Exception {
        Lock held = nodeA.obtain(key);
        held.lock();
        CompletableFuture<Throwable> waiting = new CompletableFuture<>();
        Thread waiter = new Thread(() -> waiting.complete(catchThrowable(nodeB.obtain(key)::lockInterruptibly)));
        waiter.start();
        await().atMost(GENEROUS).until(() -> !clientA.describe(key).waiterSessionIds().isEmpty());

        waiter.interrupt();

        assertThat(waiting.get(60, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        held.unlock();
        // The client asks the interrupted acquire again in the background (its grant may be on its way), keeping the
        // waiter's place for at most a second: a lock freed within it is granted to that session and given back.
        // Regression (a full suite, 2026-12-07): asserted at once, this read that brief grant.
        await().atMost(GENEROUS).untilAsserted(() -> assertThat(holder()).as("the interrupted waiter holds nothing")
                .isNull());
        Lock next = nodeA.obtain(key);
        assertThat(next.tryLock(GENEROUS.toMillis(), TimeUnit.MILLISECONDS)).as("the lock is free for others").isTrue();
        next.unlock();
    }

    @Test
    void lock_onAnInterruptedThread_takesTheLockAndKeepsTheInterrupt() {
        // Regression: the interrupt cancelled lock()'s blocking acquire, which then failed as UNAVAILABLE.
        Lock lock = nodeA.obtain(key);
        Thread.currentThread().interrupt();

        lock.lock();

        assertThat(Thread.interrupted()).as("the interrupt is kept for the caller").isTrue();
        assertThat(holder()).isEqualTo(nodeA.token(key));
        lock.unlock();
        assertThat(holder()).isNull();
    }

    @Test
    void executeLocked_runsTheTaskUnderTheLock() throws Exception {
        FencingToken[] seen = new FencingToken[1];

        nodeA.executeLocked(key, () -> {
            seen[0] = nodeA.token(key);
            assertThat(holder()).isEqualTo(seen[0]);
        });

        assertThat(seen[0].lock()).isEqualTo(key);
        assertThat(holder()).isNull();
    }

    @Test
    void lockRegistry_autoConfigured_usesTheSessionTtlProperty() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(FencerAutoConfiguration.class))
                .withPropertyValues("fencer.endpoints=" + server.endpoint(), "fencer.session-ttl=3s")
                .run(context -> {
                    LockRegistry registry = context.getBean(LockRegistry.class);
                    assertThat(registry).isInstanceOf(FencerLockRegistry.class);
                    Lock lock = registry.obtain(key);
                    lock.lock();
                    try {
                        assertThat(holder()).isEqualTo(((FencerLockRegistry) registry).token(key));
                    } finally {
                        lock.unlock();
                    }
                });
    }
}

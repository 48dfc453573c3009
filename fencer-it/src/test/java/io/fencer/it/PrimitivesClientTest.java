package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencedMultiLock;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.InvalidArgumentException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java client's semaphores and multi-locks against a real server process, and their bad input. */
class PrimitivesClientTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private FencerProcess.Ports ports;
    private FencerProcess server;
    private FencerClient fencer;
    /**
     * The threads of the test's blocking acquires, one each. Not the common pool: on JDK 25 with two cores its one
     * worker ran the first multi-lock's acquire and the second never started (JDK 17 gave each task a thread).
     */
    private final ExecutorService callers = Executors.newCachedThreadPool();

    @BeforeEach
    void start() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
        fencer = Fencer.connect(ports.endpoint());
    }

    @AfterEach
    void stop() {
        callers.shutdownNow();
        fencer.close();
        server.close();
    }

    @Test
    void locks_twoSessionsNamingThemInOppositeOrders_bothGetAllInTurn_withoutDeadlock() throws Exception {
        Session holder = fencer.openSession(TTL);
        Session first = fencer.openSession(TTL);
        Session second = fencer.openSession(TTL);
        Grant held = holder.lock("b").acquire(WAIT);
        CompletableFuture<FencedMultiLock.MultiGrant> ab = CompletableFuture.supplyAsync(
                () -> first.locks("a", "b").acquire(WAIT), callers);
        Awaitility.await().atMost(WAIT).until(() -> fencer.describe("a").waiterSessionIds().size() == 1);
        CompletableFuture<FencedMultiLock.MultiGrant> ba = CompletableFuture.supplyAsync(
                () -> second.locks("b", "a").acquire(WAIT), callers);
        Awaitility.await().atMost(WAIT).until(() -> fencer.describe("a").waiterSessionIds().size() == 2);
        assertThat(fencer.describe("a").holder()).as("nothing taken while b is held").isNull();

        held.close();
        FencedMultiLock.MultiGrant firstGrants = ab.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(firstGrants.grants()).extracting(grant -> grant.token().lock()).containsExactly("a", "b");
        assertThat(firstGrants.grants().get(1).token().value()).isGreaterThan(held.token().value());
        assertThat(ba).isNotDone();
        firstGrants.close();

        FencedMultiLock.MultiGrant secondGrants = ba.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(secondGrants.grants()).extracting(grant -> grant.token().lock()).containsExactly("b", "a");
        assertThat(secondGrants.grants().get(1).token().value())
                .isGreaterThan(firstGrants.grants().get(0).token().value());
        secondGrants.close();
        holder.close();
        first.close();
        second.close();
    }

    @Test
    void semaphore_permitsAndTokensPerSlot_andAnotherCountWhileInUseIsRefusedNamingBoth() {
        Session one = fencer.openSession(TTL);
        Session two = fencer.openSession(TTL);
        FencedSemaphore.PermitGrant first = one.semaphore("jobs", 2).acquire(WAIT);
        FencedSemaphore.PermitGrant second = two.semaphore("jobs", 2).acquire(WAIT);

        assertThat(first.permit()).isZero();
        assertThat(first.token().lock()).isEqualTo("jobs/permit-0");
        assertThat(second.permit()).isEqualTo(1);
        assertThat(fencer.openSession(TTL).semaphore("jobs", 2).tryAcquire()).as("both permits held").isEmpty();
        assertThat(fencer.describeSemaphore("jobs").held()).isEqualTo(2);
        assertThatThrownBy(() -> fencer.openSession(TTL).semaphore("jobs", 3).tryAcquire())
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("permits");
                    assertThat(e.value()).isEqualTo("3");
                }).hasMessageContaining("in use with 2 permits, asked with 3");
        assertThatThrownBy(() -> fencer.openSession(TTL).lock("jobs/permit-1").tryAcquire())
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("permit slot 1 of semaphore");

        first.close();
        FencedSemaphore.PermitGrant again = two.semaphore("jobs", 2).tryAcquire().orElseThrow();
        assertThat(again.token()).as("the session's own permit back").isEqualTo(second.token());
    }

    @Test
    void badInput_zeroOrHugePermits_aLockNamedTwice_areTypedErrorsNamingTheValue() {
        Session session = fencer.openSession(TTL);
        assertThatThrownBy(() -> session.semaphore("jobs", 0)).isInstanceOfSatisfying(
                InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("0"));
        assertThatThrownBy(() -> session.semaphore("jobs", 1_001)).isInstanceOfSatisfying(
                InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("1001"))
                .hasMessageContaining("permitsMax 1000");
        assertThatThrownBy(() -> session.locks("a", "b", "a")).isInstanceOfSatisfying(
                InvalidArgumentException.class, e -> assertThat(e.value()).isEqualTo("a"))
                .hasMessageContaining("names lock 'a' twice");
    }
}

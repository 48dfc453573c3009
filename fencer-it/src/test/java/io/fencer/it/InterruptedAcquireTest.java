package io.fencer.it;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockEvent;
import io.fencer.client.Session;
import io.fencer.client.TokenStatus;
import io.fencer.client.Watch;
import io.fencer.core.UnavailableException;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression: an acquire whose thread is interrupted after its request went out gave up the call, and the grant the
 * service made for it was never heard: the session held the lock, unknown to its caller, until the session ended, and
 * every other session waited for it. The client now asks once more in the background and gives back what the
 * session got. Here the caller waits in line behind another session, is interrupted there, and the other session
 * frees the lock at once, so the service grants it to the interrupted session (the watch shows that grant: the fault
 * was exercised) and the give-back releases it.
 */
class InterruptedAcquireTest {
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration GIVE_BACK_MAX = Duration.ofSeconds(20);

    @TempDir
    static Path dataDir;
    private static FencerTestServer server;
    private static FencerClient client;

    @BeforeAll
    static void start() {
        server = FencerTestServer.builder(dataDir).start();
        client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(10)).build();
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void acquire_interruptedWhileItWaitsInLine_givesBackTheGrantTheServiceMade() throws Exception {
        try (Session session = client.openSession(TTL); Session other = client.openSession(TTL)) {
            Grant blocking = other.lock("jobs/nightly").acquire(WAIT);
            List<LockEvent> events = interruptedWhileWaiting("jobs/nightly", session.id(),
                    () -> session.lock("jobs/nightly").acquire(WAIT),
                    () -> client.describe("jobs/nightly").waiterSessionIds(), blocking);

            assertGrantedThenGivenBack(events, session.id());
            await().atMost(GIVE_BACK_MAX).until(() -> client.describe("jobs/nightly").holder() == null);
            assertThat(session.lock("jobs/nightly").tryAcquire()).as("the session can take it again").isPresent();
        }
    }

    /**
     * An acquire on a thread interrupted beforehand sends nothing: the holder's grant stays current, and no event
     * follows it. (The give-back's care for a grant handed out before, when the holder's acquire again is
     * interrupted while it waits, is the client's unit test: against a real service that answer is too quick to
     * interrupt.)
     */
    @Test
    void acquire_onAThreadInterruptedBeforeTheCall_sendsNothingAndTheHeldGrantStays() throws Exception {
        try (Session session = client.openSession(TTL)) {
            Grant held = session.lock("jobs/weekly").acquire(WAIT);
            List<LockEvent> events = new CopyOnWriteArrayList<>();
            try (Watch watch = client.watch("jobs/weekly", events::add)) {
                await().atMost(WAIT).until(() -> watch.position().revision() > 0);
                Thread.currentThread().interrupt();
                try {
                    assertThatThrownBy(() -> session.lock("jobs/weekly").acquire(WAIT))
                            .isInstanceOf(UnavailableException.class).hasMessageContaining("was not sent");
                    assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept").isTrue();
                } finally {
                    Thread.interrupted();
                }
                assertThat(client.validate(held.token()).status()).isEqualTo(TokenStatus.Status.CURRENT);
                held.close();
                await("the release, the control").atMost(WAIT).until(() -> !events.isEmpty());
                assertThat(events).singleElement().satisfies(e -> assertThat(e.kind())
                        .isEqualTo(LockEvent.Kind.RELEASED));
            }
        }
    }

    @Test
    void acquirePermit_interruptedWhileItWaitsInLine_givesBackThePermitTheServiceGranted() throws Exception {
        try (Session session = client.openSession(TTL); Session first = client.openSession(TTL);
                Session second = client.openSession(TTL)) {
            first.semaphore("pool", 2).acquire(WAIT);
            Grant blocking = second.semaphore("pool", 2).acquire(WAIT);
            List<LockEvent> events = interruptedWhileWaiting("pool", session.id(),
                    () -> session.semaphore("pool", 2).acquire(WAIT),
                    () -> client.describeSemaphore("pool").waiterSessionIds(), blocking);

            assertGrantedThenGivenBack(events, session.id());
            await().atMost(GIVE_BACK_MAX).until(() -> client.describeSemaphore("pool").held() == 1);
        }
    }

    @Test
    void acquireAll_interruptedWhileItWaitsInLine_givesBackEveryLockTheServiceGranted() throws Exception {
        try (Session session = client.openSession(TTL); Session other = client.openSession(TTL)) {
            Grant blocking = other.lock("pair/b").acquire(WAIT);
            List<LockEvent> events = interruptedWhileWaiting("pair/", session.id(),
                    () -> session.locks("pair/a", "pair/b").acquire(WAIT),
                    () -> client.describe("pair/b").waiterSessionIds(), blocking);

            assertThat(events.stream().filter(e -> e.kind() == LockEvent.Kind.GRANTED
                    && e.sessionId() == session.id()).map(LockEvent::lock))
                    .as("the service granted both locks").containsExactlyInAnyOrder("pair/a", "pair/b");
            await().atMost(GIVE_BACK_MAX).until(() -> client.describe("pair/a").holder() == null
                    && client.describe("pair/b").holder() == null);
        }
    }

    /**
     * Calls {@code acquire} for session {@code sessionId} on a thread of its own; once {@code waiters} lists the
     * session, interrupts it and asserts the call says it was interrupted and keeps the thread's interrupt; then
     * releases {@code blocking}, well within the give-back's wait. Returns the events of {@code prefix} from before
     * the interrupt, watched until the session's grant ended.
     */
    private static List<LockEvent> interruptedWhileWaiting(String prefix, long sessionId, ThrowingCallable acquire,
            Supplier<List<Long>> waiters, Grant blocking) throws Exception {
        List<LockEvent> events = new CopyOnWriteArrayList<>();
        try (Watch watch = client.watch(prefix, events::add)) {
            await().atMost(WAIT).until(() -> watch.position().revision() > 0);
            CompletableFuture<Throwable> failure = new CompletableFuture<>();
            CompletableFuture<Boolean> interruptKept = new CompletableFuture<>();
            Thread caller = new Thread(() -> {
                try {
                    acquire.call();
                    failure.complete(null);
                } catch (Throwable t) {
                    failure.complete(t);
                }
                interruptKept.complete(Thread.currentThread().isInterrupted());
            }, "interrupted-acquire");
            caller.start();
            await("the acquire in line").atMost(WAIT).until(() -> waiters.get().contains(sessionId));
            caller.interrupt();
            assertThat(failure.get(WAIT.toMillis(), MILLISECONDS)).isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("was interrupted; the call may or may not have taken effect; the client"
                            + " asks the service once more");
            blocking.close();
            assertThat(interruptKept.get(WAIT.toMillis(), MILLISECONDS)).as("the interrupt is kept").isTrue();
            await("the service's grant").atMost(WAIT).until(() -> events.stream()
                    .anyMatch(e -> e.kind() == LockEvent.Kind.GRANTED && e.sessionId() == sessionId));
            await("the grant given back").atMost(GIVE_BACK_MAX).until(() -> events.stream()
                    .anyMatch(e -> e.kind() == LockEvent.Kind.RELEASED && e.sessionId() == sessionId));
        }
        return events;
    }

    private static void assertGrantedThenGivenBack(List<LockEvent> events, long sessionId) {
        LockEvent granted = events.stream().filter(e -> e.kind() == LockEvent.Kind.GRANTED
                && e.sessionId() == sessionId).findFirst()
                .orElseThrow(() -> new AssertionError("the service granted the session nothing: " + events));
        assertThat(events).filteredOn(e -> e.kind() == LockEvent.Kind.RELEASED && e.sessionId() == sessionId)
                .extracting(LockEvent::token).as("the grant given back by its own session")
                .containsExactly(granted.token());
    }
}

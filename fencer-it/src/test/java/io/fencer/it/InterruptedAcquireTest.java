package io.fencer.it;

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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression: an acquire whose thread is interrupted after its request went out gave up the call, and the grant the
 * service made for it was never heard: the session held the lock, unknown to its caller, until the session ended, and
 * every other session waited for it. The client now asks once more in the background and gives back what the
 * session got. Here the thread is interrupted before it calls: the request is sent, the caller gives up at once, and
 * the lock is free, so the service always grants it (the watch shows that grant: the fault was exercised).
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
    void acquire_interruptedAfterItsRequestWasSent_givesBackTheGrantTheServiceMade() throws Exception {
        try (Session session = client.openSession(TTL)) {
            List<LockEvent> events = interruptedCall("jobs/nightly",
                    () -> session.lock("jobs/nightly").acquire(WAIT));

            assertGrantedThenGivenBack(events, session.id());
            await().atMost(GIVE_BACK_MAX).until(() -> client.describe("jobs/nightly").holder() == null);
            assertThat(session.lock("jobs/nightly").tryAcquire()).as("the session can take it again").isPresent();
        }
    }

    /**
     * The holder acquiring again gets its grant back: when that acquire is interrupted, the grant it would have been
     * answered with is the one the session handed out before, and the give-back leaves it alone. Watched for longer
     * than the give-back's own wait.
     */
    @Test
    void acquire_interruptedWhileItsSessionHoldsTheLock_leavesTheGrantHandedOutBefore() throws Exception {
        try (Session session = client.openSession(TTL)) {
            Grant held = session.lock("jobs/weekly").acquire(WAIT);
            Thread.currentThread().interrupt();
            try {
                assertThatThrownBy(() -> session.lock("jobs/weekly").acquire(WAIT))
                        .isInstanceOf(UnavailableException.class).hasMessageContaining("was interrupted");
            } finally {
                Thread.interrupted();
            }

            long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            while (System.nanoTime() < until) {
                assertThat(client.validate(held.token()).status()).isEqualTo(TokenStatus.Status.CURRENT);
                Thread.sleep(100);
            }
            held.close();
        }
    }

    @Test
    void acquirePermit_interruptedAfterItsRequestWasSent_givesBackThePermitTheServiceGranted() throws Exception {
        try (Session session = client.openSession(TTL)) {
            List<LockEvent> events = interruptedCall("pool",
                    () -> session.semaphore("pool", 2).acquire(WAIT));

            assertGrantedThenGivenBack(events, session.id());
            await().atMost(GIVE_BACK_MAX).until(() -> client.describeSemaphore("pool").held() == 0);
        }
    }

    @Test
    void acquireAll_interruptedAfterItsRequestWasSent_givesBackEveryLockTheServiceGranted() throws Exception {
        try (Session session = client.openSession(TTL)) {
            List<LockEvent> events = interruptedCall("pair/",
                    () -> session.locks("pair/a", "pair/b").acquire(WAIT));

            assertThat(events.stream().filter(e -> e.kind() == LockEvent.Kind.GRANTED).map(LockEvent::lock))
                    .as("the service granted both locks").containsExactlyInAnyOrder("pair/a", "pair/b");
            await().atMost(GIVE_BACK_MAX).until(() -> client.describe("pair/a").holder() == null
                    && client.describe("pair/b").holder() == null);
        }
    }

    /**
     * Calls {@code acquire} on a thread interrupted beforehand; asserts the call says it was interrupted and keeps the
     * thread's interrupt; returns the events of {@code prefix} from before the call, watched until the grant's end.
     */
    private static List<LockEvent> interruptedCall(String prefix, Supplier<?> acquire) throws Exception {
        List<LockEvent> events = new CopyOnWriteArrayList<>();
        try (Watch watch = client.watch(prefix, events::add)) {
            await().atMost(WAIT).until(() -> watch.position().revision() > 0);
            Thread.currentThread().interrupt();
            try {
                assertThatThrownBy(acquire::get).isInstanceOf(UnavailableException.class)
                        .hasMessageContaining("was interrupted; the call may or may not have taken effect; the"
                                + " client asks the service once more");
                assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept").isTrue();
            } finally {
                Thread.interrupted();
            }
            await("the service's grant").atMost(WAIT).until(() -> events.stream()
                    .anyMatch(e -> e.kind() == LockEvent.Kind.GRANTED));
            await("the grant given back").atMost(GIVE_BACK_MAX).until(() -> events.stream()
                    .anyMatch(e -> e.kind() == LockEvent.Kind.RELEASED));
        }
        return events;
    }

    private static void assertGrantedThenGivenBack(List<LockEvent> events, long sessionId) {
        LockEvent granted = events.stream().filter(e -> e.kind() == LockEvent.Kind.GRANTED).findFirst()
                .orElseThrow(() -> new AssertionError("the service granted nothing: " + events));
        assertThat(granted.sessionId()).isEqualTo(sessionId);
        assertThat(events).filteredOn(e -> e.kind() == LockEvent.Kind.RELEASED).extracting(LockEvent::token)
                .as("the grant given back by its own session").containsExactly(granted.token());
    }
}

package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An acquire and an interrupt, with the order made certain: the fake service holds an Acquire's answer until the test
 * lets it go, so the interrupt lands while the caller waits, or before it calls.
 */
class AcquireInterruptTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration SETTLE_MAX = Duration.ofSeconds(10);

    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint())
            .callTimeout(Duration.ofSeconds(10)).build();
    private final Semaphore acquiresArrived = new Semaphore(0);
    private final CountDownLatch answer = new CountDownLatch(1);

    @AfterEach
    void tearDown() {
        answer.countDown();
        client.close();
        server.close();
    }

    /**
     * Regression: sent anyway, such a request raced the interrupt (a grant answered before the caller reached its
     * wait was returned, one answered after it was given back); a run of the integration suite once saw the first.
     */
    @Test
    void acquire_onAThreadInterruptedBeforeTheCall_sendsNothingAndKeepsTheInterrupt() {
        Session session = client.openSession(Duration.ofSeconds(10));

        assertNotSentOnAnInterruptedThread(() -> session.lock("orders").acquire(WAIT), "Acquire orders");
        assertNotSentOnAnInterruptedThread(() -> session.lock("orders").tryAcquire(), "Acquire orders");
        assertNotSentOnAnInterruptedThread(() -> session.semaphore("pool", 2).acquire(WAIT), "pool");

        assertThat(server.locks.calls).as("nothing asked").doesNotContain("Acquire", "AcquirePermit");
        assertThat(session.lock("orders").tryAcquire()).as("the control: the same call, not interrupted, is sent")
                .isPresent();
        assertThat(server.locks.calls).contains("Acquire");
    }

    /** The give-back's control: the grant the interrupted acquire was answered with is released. */
    @Test
    void acquire_interruptedWhileItWaits_givesBackTheGrantAnsweredAfterwards() throws Exception {
        Session session = client.openSession(Duration.ofSeconds(10));
        holdAcquireAnswers();

        interruptWhileWaiting(() -> session.lock("orders").acquire(WAIT));
        answer.countDown();

        await().atMost(SETTLE_MAX).until(() -> server.locks.releases.size() == 1);
        assertThat(server.locks.releases.get(0).getToken().getValue()).as("the grant given back").isEqualTo(1);
    }

    /**
     * The holder acquiring again gets its grant back: when that acquire is interrupted, the give-back's answer is the
     * grant the session handed out before, and it is left with its holder. Watched for a second after the answer.
     */
    @Test
    void acquire_interruptedWhileItsSessionHoldsTheLock_leavesTheGrantHandedOutBefore() throws Exception {
        Session session = client.openSession(Duration.ofSeconds(10));
        Grant held = session.lock("orders").acquire(WAIT);
        holdAcquireAnswers();

        interruptWhileWaiting(() -> session.lock("orders").acquire(WAIT));
        answer.countDown();

        await().atMost(SETTLE_MAX).until(() -> server.locks.grantsAnswered.size() == 3);
        await().during(Duration.ofSeconds(1)).atMost(SETTLE_MAX).until(() -> server.locks.releases.isEmpty());
        held.close();
        assertThat(server.locks.releases).singleElement()
                .satisfies(release -> assertThat(release.getToken().getValue()).isEqualTo(held.token().value()));
    }

    private void holdAcquireAnswers() {
        server.locks.onAcquire = request -> {
            acquiresArrived.release();
            answer.await();
            return server.locks.grant(request);
        };
    }

    /**
     * Runs {@code acquire} on a thread of its own, interrupts it once its request has reached the service, asserts it
     * failed as interrupted with its interrupt kept, and waits for the give-back's request, held like the first.
     */
    private void interruptWhileWaiting(ThrowingCallable acquire) throws Exception {
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
        assertThat(acquiresArrived.tryAcquire(SETTLE_MAX.toMillis(), TimeUnit.MILLISECONDS))
                .as("the acquire reached the service").isTrue();
        caller.interrupt();

        assertThat(failure.get(SETTLE_MAX.toMillis(), TimeUnit.MILLISECONDS)).isInstanceOf(UnavailableException.class)
                .hasMessageContaining("was interrupted").hasMessageContaining("gives back what the session was granted");
        assertThat(interruptKept.get(SETTLE_MAX.toMillis(), TimeUnit.MILLISECONDS)).as("the interrupt is kept").isTrue();
        assertThat(acquiresArrived.tryAcquire(SETTLE_MAX.toMillis(), TimeUnit.MILLISECONDS))
                .as("the give-back asked again").isTrue();
    }

    private static void assertNotSentOnAnInterruptedThread(ThrowingCallable call, String operation) {
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(call).isInstanceOf(UnavailableException.class).hasMessageContaining(operation)
                    .hasMessageContaining("was not sent: the calling thread was interrupted before the call");
            assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept").isTrue();
        } finally {
            Thread.interrupted();
        }
    }
}

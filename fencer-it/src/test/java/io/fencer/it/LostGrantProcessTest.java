package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.GrantLoss;
import io.fencer.client.Session;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * What a crash does to a grant answered before the release that makes it was durable (an early hand-off), on a real
 * {@code fencer server} whose log's file system the test freezes ({@link LoopFileSystem}): an entry stays in flight,
 * two holders' releases wait in the peer's queue, and their waiters are answered from it. SIGKILL then loses both
 * releases. The control is a waiter on plain gRPC that does nothing about it: after the restart its session is still
 * queued behind the old holder, so the grant it was answered is gone; once the old holder's release is sent again
 * its session is granted the lock under a token above the one it was answered, which is never granted twice. The
 * Java client sees the new incarnation, reports its grant lost ({@link GrantLoss.Cause#NOT_DURABLE}) and gives its
 * place up: no lock stays held by a session whose client does not know it. Holds {@link TestResources#CHAOS} to read.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class LostGrantProcessTest {
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration TTL = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private LoopFileSystem loop;
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private FencerProcess.Ports ports;
    private LocksGrpc.LocksBlockingStub raw;

    @BeforeEach
    void mountLoopFileSystem() throws Exception {
        loop = LoopFileSystem.mount(dir, "LostGrantProcessTest");
    }

    @AfterEach
    void closeAllAndUnmount() throws Exception {
        LoopFileSystem.closeAll(loop, toClose);
    }

    @Test
    void grant_answeredEarlyThenLostInACrash_isReportedLostItsPlaceGivenUpAndItsTokenNeverGrantedAgain()
            throws Exception {
        Path data = loop.path().resolve("data");
        ports = FencerProcess.Ports.free();
        FencerProcess server = closing(FencerProcess.server("lost-grant", data, ports, "--no-store"));
        server.awaitHealthy(ports.admin());
        FencerClient fencer = closing(Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(CALL_TIMEOUT)
                .build());
        Session holder = fencer.openSession(TTL);
        Session waiter = fencer.openSession(TTL);
        ManagedChannel channel = ManagedChannelBuilder.forTarget(ports.endpoint()).usePlaintext().build();
        closing(channel::shutdownNow);
        raw = LocksGrpc.newBlockingStub(channel);
        OpenSessionResponse rawHolder = openRaw();
        OpenSessionResponse rawWaiter = openRaw();
        OpenSessionResponse rawThird = openRaw();

        // A hand-off first: the server answers early once a RaiseFloor applied at format level 5.
        handOff(holder, waiter, "warm-up").close();
        Grant orders = holder.lock("orders").acquire(CALL_TIMEOUT);
        CompletableFuture<Grant> ordersNext = acquireLater(waiter, "orders");
        await().atMost(CALL_TIMEOUT).until(() -> fencer.describe("orders").waiterSessionIds().size() == 1);
        // A third session waits behind: the lock keeps its record through the restart, and folds no token into the
        // floor, which would lift the control's next grant above its lost one whether or not the floor was raised.
        CompletableFuture.runAsync(() -> raw.acquire(acquire(rawThird, "orders", CALL_TIMEOUT.toMillis())));
        for (int i = 0; i < 4; i++) { // the control's tokens above every other lock's: no floor folded from them
            raw.release(release(rawHolder, raw.acquire(acquire(rawHolder, "control", 0)).getToken()));
        }
        AcquireResponse control = raw.acquire(acquire(rawHolder, "control", 0));
        CompletableFuture<AcquireResponse> controlNext = CompletableFuture.supplyAsync(() ->
                raw.acquire(acquire(rawWaiter, "control", CALL_TIMEOUT.toMillis())));
        await().atMost(CALL_TIMEOUT).until(() -> fencer.describe("orders").waiterSessionIds().size() == 2
                && fencer.describe("control").waiterSessionIds().size() == 1);

        // The fault: the log's file system takes no write; an Acquire's entry stays in flight, the releases queue.
        Session stuckSession = fencer.openSession(TTL);
        double entries = metric("fencer_proposer_entries_total");
        double handOffs = metric("fencer_proposer_handoffs_early_total");
        loop.freeze();
        CompletableFuture<Grant> stuck = acquireLater(stuckSession, "invoices");
        await().atMost(CALL_TIMEOUT).until(() -> metric("fencer_proposer_entries_total") > entries);
        CompletableFuture.runAsync(orders::close);
        CompletableFuture.runAsync(() -> raw.release(release(rawHolder, control.getToken())));
        Grant early = ordersNext.get(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        AcquireResponse controlEarly = controlNext.get(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(controlEarly.getPendingSequence()).as("answered before durable").isPositive();
        assertThat(early.token().value()).isGreaterThan(orders.token().value());
        assertThat(metric("fencer_proposer_handoffs_early_total")).as("both answered early").isEqualTo(handOffs + 2);
        assertThat(stuck).as("the entry in flight").isNotDone();

        server.sendKill();
        loop.thaw();
        server.awaitExit(CALL_TIMEOUT);
        FencerProcess restarted = FencerProcess.server("lost-grant-restarted", data, ports, "--no-store");
        toClose.add(0, restarted);
        restarted.awaitHealthy(ports.admin());

        // The control: its grant is gone, its session queued behind the old holder, whose release was lost too.
        assertThat(fencer.describe("control").holder().value()).as("the old holder holds again")
                .isEqualTo(control.getToken().getValue());
        assertThat(fencer.describe("control").waiterSessionIds()).containsExactly(rawWaiter.getSessionId());
        // The Java client reports the loss at its next answer of the new incarnation, and gives its place up.
        GrantLoss loss = early.lost().toCompletableFuture().get(TTL.toSeconds() / 2, TimeUnit.SECONDS);
        assertThat(loss.cause()).isEqualTo(GrantLoss.Cause.NOT_DURABLE);
        await().atMost(TTL.dividedBy(2)).untilAsserted(() -> assertThat(raw.acquire(acquire(rawThird, "orders", 0))
                .getAcquired()).as("the lock passed on to the session behind").isTrue());
        assertThat(fencer.describe("orders").waiterSessionIds()).as("the Java client's session waits no more")
                .doesNotContain(waiter.id());
        // No token twice: the control's session is granted under a token above the one it was answered.
        raw.release(release(rawHolder, control.getToken()));
        assertThat(fencer.describe("control").holder().value()).as("the restored state's grant")
                .isGreaterThan(controlEarly.getToken().getValue());
        assertThat(fencer.describe("orders").holder().value()).as("the lock's grant after the restart")
                .isGreaterThan(early.token().value());
    }

    /** {@code waiter} queues for {@code lock} while {@code holder} holds it, and is granted it once it is released. */
    private Grant handOff(Session holder, Session waiter, String lock) throws Exception {
        Grant held = holder.lock(lock).acquire(CALL_TIMEOUT);
        CompletableFuture<Grant> next = acquireLater(waiter, lock);
        await().atMost(CALL_TIMEOUT).until(() -> raw.describe(io.fencer.api.v1.DescribeRequest.newBuilder()
                .setLock(lock).build()).getWaitersCount() == 1);
        held.close();
        return next.get(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    private static CompletableFuture<Grant> acquireLater(Session session, String lock) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return session.lock(lock).acquire(CALL_TIMEOUT);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }

    private OpenSessionResponse openRaw() {
        return raw.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL.toMillis()).build());
    }

    private static AcquireRequest acquire(OpenSessionResponse session, String lock, long waitMillis) {
        return AcquireRequest.newBuilder().setSessionId(session.getSessionId()).setSessionSecret(session.getSecret())
                .setLock(lock).setRequestId(lock + "-" + java.util.UUID.randomUUID()).setWaitMillis(waitMillis)
                .setAnswerBeforeDurable(true).build();
    }

    private static ReleaseRequest release(OpenSessionResponse session, io.fencer.api.v1.FencingToken token) {
        return ReleaseRequest.newBuilder().setToken(token).setSessionId(session.getSessionId())
                .setSessionSecret(session.getSecret()).build();
    }

    private double metric(String name) {
        return FencerProcess.metric(ports.admin(), name);
    }

    private <T extends AutoCloseable> T closing(T closeable) {
        toClose.add(closeable);
        return closeable;
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
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
 * What a crash does to a release answered before it was durable, on a real {@code fencer server} whose data
 * directory is an ext4 file system on a loop device that the test freezes ({@code fsfreeze}): with the log unable to
 * take a write, an Acquire's entry stays in flight, and the releases that follow wait in the peer's queue, answered.
 * SIGKILL then loses them. The control is a client that does not re-send (plain gRPC): after the restart its lock is
 * still held. The Java client sees the new incarnation in its next keepalive and re-sends: its lock is free.
 * Tokens are never at stake: the lost release issued none. Needs root (CI runs as root; elsewhere it is skipped,
 * loudly). It starts processes and bounds no duration, so it holds {@link TestResources#CHAOS} to read.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class LostReleaseProcessTest {
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration TTL = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private LoopFileSystem loop;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void mountLoopFileSystem() throws Exception {
        loop = LoopFileSystem.mount(dir, "LostReleaseProcessTest");
    }

    @AfterEach
    void closeAllAndUnmount() throws Exception {
        LoopFileSystem.closeAll(loop, toClose);
    }

    @Test
    void release_answeredEarlyThenLostInACrash_isResentByTheJavaClientAndStaysLostWithout() throws Exception {
        Path data = loop.path().resolve("data");
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = closing(FencerProcess.server("lost-release", data, ports, "--no-store"));
        server.awaitHealthy(ports.admin());
        FencerClient fencer = closing(Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(CALL_TIMEOUT)
                .build());
        Session session = fencer.openSession(TTL);
        Grant orders = session.lock("orders").acquire(CALL_TIMEOUT);
        Session stuckSession = fencer.openSession(TTL);
        ManagedChannel channel = ManagedChannelBuilder.forTarget(ports.endpoint()).usePlaintext().build();
        closing(channel::shutdownNow);
        LocksGrpc.LocksBlockingStub raw = LocksGrpc.newBlockingStub(channel);
        OpenSessionResponse rawSession = raw.openSession(OpenSessionRequest.newBuilder()
                .setTtlMillis(TTL.toMillis()).build());
        AcquireResponse control = raw.acquire(AcquireRequest.newBuilder().setSessionId(rawSession.getSessionId())
                .setSessionSecret(rawSession.getSecret()).setLock("control").setRequestId("control-1").build());
        assertThat(control.getAcquired()).isTrue();

        // The fault: the log's file system takes no write; an Acquire's entry stays in flight, the releases queue.
        double entries = metric(ports, "fencer_proposer_entries_total");
        loop.freeze();
        CompletableFuture<Grant> stuck = CompletableFuture.supplyAsync(() -> {
            try {
                return stuckSession.lock("invoices").acquire(CALL_TIMEOUT);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        await().atMost(CALL_TIMEOUT).until(() -> metric(ports, "fencer_proposer_entries_total") > entries);
        ReleaseResponse controlRelease = raw.withDeadlineAfter(10, TimeUnit.SECONDS).release(ReleaseRequest
                .newBuilder().setToken(control.getToken()).setSessionId(rawSession.getSessionId())
                .setSessionSecret(rawSession.getSecret()).setAnswerBeforeDurable(true).build());
        orders.close(); // sent without waiting for the answer: the server's count shows when it was answered
        assertThat(controlRelease.getPendingSequence()).as("answered before durable").isPositive();
        await().atMost(CALL_TIMEOUT).until(() -> metric(ports, "fencer_proposer_releases_early_total") == 2);
        assertThat(stuck).as("the entry in flight").isNotDone();

        server.sendKill();
        loop.thaw();
        server.awaitExit(CALL_TIMEOUT);
        // Closed after the client: a client closing while no server answers spends a call timeout (30 s here).
        FencerProcess restarted = FencerProcess.server("lost-release-restarted", data, ports, "--no-store");
        toClose.add(0, restarted);
        restarted.awaitHealthy(ports.admin());

        // The control: released, answered, and lost.
        assertThat(fencer.describe("control").holder()).as("the control's lock after the restart").isNotNull()
                .satisfies(holder -> assertThat(holder.value()).isEqualTo(control.getToken().getValue()));
        // The Java client re-sends at its next keepalive, answered by another incarnation.
        await().atMost(TTL.dividedBy(2)).untilAsserted(() ->
                assertThat(fencer.describe("orders").holder()).as("the Java client's lock").isNull());
        assertThat(fencer.describe("control").holder()).as("no re-send without the client").isNotNull();
        Grant next = fencer.openSession(TTL).lock("orders").tryAcquire().orElseThrow();
        assertThat(next.token().value()).as("tokens only grow").isGreaterThan(orders.token().value());
    }

    private static double metric(FencerProcess.Ports ports, String name) {
        return FencerProcess.metric(ports.admin(), name);
    }

    private <T extends AutoCloseable> T closing(T closeable) {
        toClose.add(closeable);
        return closeable;
    }
}

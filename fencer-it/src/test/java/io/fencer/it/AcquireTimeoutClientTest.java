package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.client.Session;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An acquire whose wait ended leaves nothing queued, end to end through the client and a server process: the reply of
 * an acquire's attempt is lost (the server is killed with SIGKILL while the session waits in the queue; a graceful stop
 * would cancel the wait), the client retries after the wait ran out (so with {@code wait_millis = 0}) and throws
 * {@link LockTimeoutException}; the lock must then be free for another session, not granted later to the timed-out
 * one.
 */
class AcquireTimeoutClientTest {
    private static final Duration WAIT = Duration.ofSeconds(2);
    private static final Duration TTL = Duration.ofSeconds(60);
    private static final Duration CONDITION_MAX = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private final List<FencerProcess> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(FencerProcess::close);
    }

    @Test
    void acquire_whoseReplyIsLostAndWaitEnds_throwsLockTimeoutAndLeavesTheLockFree() throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = start(ports);
        try (FencerClient fencer = Fencer.newBuilder().endpoints(ports.endpoint())
                .callTimeout(Duration.ofSeconds(30)).build()) {
            Session holder = fencer.openSession(TTL);
            Session waiter = fencer.openSession(TTL);
            Grant held = holder.lock("orders").acquire(WAIT);
            long waitEndsNanos = System.nanoTime() + WAIT.toNanos();
            CompletableFuture<Grant> waiting = CompletableFuture.supplyAsync(() -> waiter.lock("orders").acquire(WAIT));
            await().atMost(CONDITION_MAX).until(() -> fencer.describe("orders").waiterSessionIds()
                    .contains(waiter.id()));

            server.kill9(); // the attempt's answer is lost; its queued place stays in the Raft log
            await().atMost(CONDITION_MAX).until(() -> System.nanoTime() - waitEndsNanos > 0);
            start(ports); // the client's retry now asks with wait_millis = 0

            assertThat(waiting).failsWithin(CONDITION_MAX).withThrowableOfType(ExecutionException.class)
                    .withCauseInstanceOf(LockTimeoutException.class);
            assertThat(fencer.describe("orders").waiterSessionIds()).doesNotContain(waiter.id());
            held.close();
            await().atMost(CONDITION_MAX).until(() -> fencer.describe("orders").holder() == null);
            Optional<Grant> other = fencer.openSession(TTL).lock("orders").tryAcquire();
            assertThat(other).as("the lock is free for another session").isPresent();
            assertThat(other.get().token().value()).isGreaterThan(held.token().value());
        }
    }

    private FencerProcess start(FencerProcess.Ports ports) throws Exception {
        FencerProcess server = FencerProcess.server("server-" + servers.size(), dir.resolve("data"), ports);
        servers.add(server);
        server.awaitHealthy(ports.admin());
        return server;
    }
}

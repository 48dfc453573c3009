package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockStatus;
import io.fencer.client.Session;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The paused-client scenario with real processes: client A holds a lock and is frozen (SIGSTOP) past its lease; B,
 * waiting, is granted A's token + 1 while A still believes it holds the lock; A's stale release changes nothing, and
 * the service says A's token was superseded, and by which token.
 */
@Isolated
class SeedScenarioProcessTest {
    /**
     * A's lease. B must queue while A still holds it: in a full parallel run a 2 s lease once ran out first (A's
     * keepalives stalled among a dozen starting JVMs on two cores), so B was granted at once and never queued.
     */
    static final Duration TTL = Duration.ofSeconds(5);

    @TempDir
    Path dir;
    private FencerProcess server;
    private FencerProcess clientA;
    private FencerClient fencer;
    private FencerProcess.Ports ports;

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
        fencer = Fencer.connect(ports.endpoint());
    }

    @AfterEach
    void stop() {
        if (fencer != null) {
            fencer.close();
        }
        if (clientA != null) {
            clientA.close();
        }
        server.close();
    }

    @Test
    void pausedHolder_pastItsLease_isSupersededByWaiterWithNextToken() throws Exception {
        clientA = FencerProcess.start("client-a", dir, List.of("lock", "acquire", "orders", "--ttl",
                TTL.toSeconds() + "s", "--wait", "30s", "--server", ports.endpoint()));
        FencingToken tokenA = FencingToken.parse(clientA.awaitLine(Duration.ofSeconds(60)).split(" ")[1]);

        try (Session sessionB = fencer.openSession(Duration.ofSeconds(10))) {
            CompletableFuture<Grant> grantB = CompletableFuture.supplyAsync(
                    () -> sessionB.lock("orders").acquire(Duration.ofSeconds(60)));
            awaitQueuedBehind(fencer, sessionB, tokenA);
            assertThat(fencer.validate(tokenA).status()).isEqualTo(TokenStatus.Status.CURRENT);

            long pausedAt = System.nanoTime();
            clientA.pause();
            Grant b = grantB.get(60, java.util.concurrent.TimeUnit.SECONDS);
            long grantedAfterMillis = (System.nanoTime() - pausedAt) / 1_000_000;

            assertThat(b.token().value()).isEqualTo(tokenA.value() + 1);
            // The bound a waiter may rely on: B is granted within ttl + 2 s of A's last chance to keep alive.
            assertThat(grantedAfterMillis).isLessThanOrEqualTo(TTL.toMillis() + 2_000);
            assertThat(clientA.isAlive()).as("A is frozen, still believing it holds the lock").isTrue();

            // A's token releases nothing, not even through B, the holder: a release names the session's own token.
            assertThatThrownBy(() -> sessionB.release(tokenA)).isInstanceOfSatisfying(NotHolderException.class, e -> {
                assertThat(e.presented()).isEqualTo(tokenA.value());
                assertThat(e.current()).isEqualTo(b.token().value());
                assertThat(e.sessionId()).isEqualTo(sessionB.id());
            });
            assertThat(fencer.describe("orders").holder()).isEqualTo(b.token());
            TokenStatus status = fencer.validate(tokenA);
            assertThat(status.status()).isEqualTo(TokenStatus.Status.SUPERSEDED);
            assertThat(status.supersededBy()).isEqualTo(b.token().value());

            clientA.resume();
            assertThat(clientA.awaitExit(Duration.ofSeconds(60))).as("A learns its lease is gone").isEqualTo(3);
            assertThat(clientA.logText()).contains("lease on orders#" + tokenA.value() + " lost");
            assertThat(fencer.describe("orders").holder()).isEqualTo(b.token());
            b.close();
        }
    }

    /**
     * Waits until {@code waiter} queues for orders behind {@code holder}; fails at once, saying what happened, when the
     * holder changes first, since the scenario then no longer has a holder to pause.
     */
    static void awaitQueuedBehind(FencerClient fencer, Session waiter, FencingToken holder) {
        await(() -> {
            LockStatus status = fencer.describe("orders");
            if (!holder.equals(status.holder())) {
                throw new AssertionError("orders passed from " + holder + " to " + status.holder() + " before session "
                        + waiter.id() + " queued: A's lease of " + TTL + " ran out while A was stalled");
            }
            return status.waiterSessionIds().contains(waiter.id());
        });
    }

    static void await(java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 60 s");
            }
            FencerProcess.pause(20);
        }
    }
}

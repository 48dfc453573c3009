package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StoreValue;
import io.fencer.core.FencingToken;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The paused-client scenario carried to the resource, all real processes: client A holds "orders" and is frozen
 * (SIGSTOP) past its lease; B is granted the next token and writes to the store that the server hosts beside the lock
 * service; A, resumed, writes with its old token through {@code fencer kv put} and is refused: exit 5, "stale token" on
 * stderr with the lock service's diagnosis, and B's value stays.
 */
class SeedScenarioStoreProcessTest {
    @TempDir
    Path dir;
    private FencerProcess server;
    private FencerProcess clientA;
    private FencerClient fencer;
    private FencedStore store;
    private FencerProcess.Ports ports;

    @BeforeEach
    void startServer() throws Exception {
        ports = FencerProcess.Ports.free();
        server = FencerProcess.server("server", dir.resolve("data"), ports);
        server.awaitHealthy(ports.admin());
        fencer = Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(Duration.ofSeconds(30)).build();
        store = Fencer.newStoreBuilder().endpoint(ports.endpoint()).callTimeout(Duration.ofSeconds(30)).build();
    }

    @AfterEach
    void stop() {
        store.close();
        fencer.close();
        if (clientA != null) {
            clientA.close();
        }
        server.close();
    }

    @Test
    void pausedHolder_writesWithItsOldTokenAfterResume_isRefusedStaleExitFive_andTheNewValueStays() throws Exception {
        clientA = FencerProcess.start("client-a", dir, List.of("lock", "acquire", "orders", "--ttl",
                SeedScenarioProcessTest.TTL.toSeconds() + "s", "--wait", "30s", "--server", ports.endpoint()));
        String[] line = clientA.awaitLine(Duration.ofSeconds(60)).split(" ");
        FencingToken tokenA = FencingToken.parse(line[1]);
        String sequencerA = line[1];

        try (Session sessionB = fencer.openSession(Duration.ofSeconds(10))) {
            CompletableFuture<Grant> grantB = CompletableFuture.supplyAsync(
                    () -> sessionB.lock("orders").acquire(Duration.ofSeconds(60)));
            SeedScenarioProcessTest.awaitQueuedBehind(fencer, sessionB, tokenA);
            clientA.pause();
            Grant b = grantB.get(60, TimeUnit.SECONDS);
            assertThat(b.token().value()).isEqualTo(tokenA.value() + 1);
            store.put("orders", "order-17", "written by B", b);

            clientA.resume();
            FencerProcess writeA = FencerProcess.start("client-a-write", dir, List.of("kv", "put", "orders",
                    "order-17", "written by A", "--token", sequencerA, "--store", ports.endpoint(),
                    "--server", ports.endpoint()));
            int exit = writeA.awaitExit(Duration.ofSeconds(60));

            String stderr = writeA.logText();
            assertThat(exit).as(stderr).isEqualTo(5);
            assertThat(stderr).contains("fencer: stale token orders#" + tokenA.value() + " refused by scope 'orders':"
                    + " accepted orders#" + b.token().value())
                    .contains("fencer: diagnosis: SUPERSEDED: orders#" + tokenA.value() + " was superseded");
            StoreValue value = store.get("orders", "order-17");
            assertThat(value.valueUtf8()).isEqualTo("written by B");
            assertThat(value.writtenBy()).isEqualTo(b.token().value());
            assertThat(clientA.awaitExit(Duration.ofSeconds(60))).as("A learns its lease is gone").isEqualTo(3);
            b.close();
        }
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StoreValue;
import io.fencer.client.TokenStatus;
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
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code fencer lock revoke} with real processes: a {@code fencer lock acquire} holder that writes to the fenced store
 * is revoked by the operator's command; the waiter behind it is granted a higher token and writes, and the revoked
 * holder's next write with its old token, through {@code fencer kv put}, is refused stale (exit 5) while the new
 * value stays.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class RevokeProcessTest {
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private FencerProcess server;
    private FencerProcess holder;
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
        // Revoke is a command of format level 5, which the leader sets once it leads.
        await().atMost(PATIENCE).ignoreExceptions().until(() -> fencer.status().groupFormatLevel() == 5);
    }

    @AfterEach
    void stop() {
        store.close();
        fencer.close();
        if (holder != null) {
            holder.close();
        }
        server.close();
    }

    @Test
    void lockRevoke_ofACliHolder_grantsTheWaiterAHigherTokenAndTheHoldersNextStoreWriteIsRefused() throws Exception {
        holder = FencerProcess.start("holder", dir, List.of("lock", "acquire", "orders", "--ttl", "30s",
                "--wait", "30s", "--server", ports.endpoint()));
        String sequencer = holder.awaitLine(PATIENCE).split(" ")[1];
        FencingToken held = FencingToken.parse(sequencer);
        assertThat(kvPut("holder-write-1", "written by the holder", sequencer).awaitExit(PATIENCE))
                .as("the holder writes before the revoke").isZero();

        try (Session next = fencer.openSession(Duration.ofSeconds(30))) {
            CompletableFuture<Grant> waiting = CompletableFuture.supplyAsync(
                    () -> next.lock("orders").acquire(PATIENCE));
            await().atMost(PATIENCE).until(() -> fencer.describe("orders").waiterSessionIds().contains(next.id()));

            FencerProcess revoke = FencerProcess.start("revoke", dir, List.of("lock", "revoke", "orders",
                    "--server", ports.endpoint()));
            assertThat(revoke.awaitExit(PATIENCE)).as(revoke.logText()).isZero();
            Grant granted = waiting.get(60, TimeUnit.SECONDS);
            store.put("orders", "order-17", "written by the next holder", granted);
            FencerProcess stale = kvPut("holder-write-2", "written by the revoked holder", sequencer);
            int staleExit = stale.awaitExit(PATIENCE);
            TokenStatus status = fencer.validate(held);

            assertThat(revoke.lines()).containsExactly("revoked orders#" + held.value(),
                    "granted next: orders#" + granted.token().value());
            assertThat(granted.token().value()).isGreaterThan(held.value());
            assertThat(staleExit).as(stale.logText()).isEqualTo(5);
            assertThat(stale.logText()).contains("stale token orders#" + held.value() + " refused by scope 'orders'");
            StoreValue value = store.get("orders", "order-17");
            assertThat(value.valueUtf8()).isEqualTo("written by the next holder");
            assertThat(value.writtenBy()).isEqualTo(granted.token().value());
            assertThat(status.status().name()).isEqualTo("SUPERSEDED");
            assertThat(server.logText()).contains("revoked orders#" + held.value() + " of session",
                    "by 'anonymous'");
            granted.close();
        }
    }

    @Test
    void lockRevoke_ofAFreeLock_failsNamingItExitOneAndChangesNothing() throws Exception {
        FencerProcess revoke = FencerProcess.start("revoke-free", dir, List.of("lock", "revoke", "nobody-holds",
                "--server", ports.endpoint()));

        assertThat(revoke.awaitExit(PATIENCE)).as(revoke.logText()).isEqualTo(1);
        assertThat(revoke.logText()).contains("lock 'nobody-holds'", "the lock is free", "nothing to revoke");
        assertThat(fencer.describe("nobody-holds").holder()).isNull();
    }

    /** Starts {@code fencer kv put orders KEY VALUE --token SEQUENCER}: the holder's write to its fenced resource. */
    private FencerProcess kvPut(String name, String value, String sequencer) throws Exception {
        return FencerProcess.start(name, dir, List.of("kv", "put", "orders", "order-17", value,
                "--token", sequencer, "--store", ports.endpoint(), "--server", ports.endpoint()));
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleDiagnosis;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreValue;
import io.fencer.core.FencingToken;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fenced store as its own process beside a lock server process: tokens of two real grants, the stale one
 * refused and diagnosed as superseded, and the fence still in force after the store is killed (SIGKILL) and
 * restarted on the same data (invariant 4, durable fence).
 */
class StoreProcessTest {
    @TempDir
    Path dir;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closing(T closeable) {
        toClose.add(closeable);
        return closeable;
    }

    private FencerProcess startStore(FencerProcess.Ports ports) throws Exception {
        FencerProcess store = closing(FencerProcess.storeServer("store-" + toClose.size(), dir.resolve("store-data"),
                ports));
        store.awaitHealthy(ports.admin());
        return store;
    }

    @Test
    void staleWrite_refusedAndDiagnosedSuperseded_andStillRefusedAfterStoreKill9AndRestart() throws Exception {
        FencerProcess.Ports lockPorts = FencerProcess.Ports.free();
        FencerProcess lockServer = closing(FencerProcess.server("locks", dir.resolve("lock-data"), lockPorts));
        lockServer.awaitHealthy(lockPorts.admin());
        FencerProcess.Ports storePorts = FencerProcess.Ports.free();
        FencerProcess store = startStore(storePorts);
        FencerClient fencer = closing(Fencer.newBuilder().endpoints(lockPorts.endpoint())
                .callTimeout(Duration.ofSeconds(30)).build());
        FencedStore client = closing(Fencer.newStoreBuilder().endpoint(storePorts.endpoint()).lockService(fencer)
                .callTimeout(Duration.ofSeconds(30)).build());

        Grant grantA;
        Grant grantB;
        try (Session a = fencer.openSession(Duration.ofSeconds(10))) {
            grantA = a.lock("orders").acquire(Duration.ofSeconds(30));
            grantA.close();
        }
        Session b = closing(fencer.openSession(Duration.ofSeconds(10)));
        grantB = b.lock("orders").acquire(Duration.ofSeconds(30));
        FencingToken t1 = grantA.token();
        FencingToken t2 = grantB.token();
        assertThat(t2.value()).isGreaterThan(t1.value());

        assertThat(client.put("orders", "order-17", "by B", grantB).accepted()).isEqualTo(t2.value());
        assertStaleSupersededBy(client, grantA, t2);

        store.kill9();
        startStore(storePorts);

        assertThat(client.fence("orders").accepted()).as("the accepted token survived kill -9").isEqualTo(t2.value());
        assertThatThrownBy(() -> client.put("orders", "order-17", "by A after restart", grantA))
                .isInstanceOfSatisfying(StaleWriteException.class, e ->
                        assertThat(e.acceptedToken()).isEqualTo(t2));
        StoreValue value = client.get("orders", "order-17");
        assertThat(value.valueUtf8()).isEqualTo("by B");
        assertThat(value.writtenBy()).isEqualTo(t2.value());
        assertThat(client.put("orders", "order-18", "B again", grantB).revision()).isEqualTo(2);
    }

    private static void assertStaleSupersededBy(FencedStore client, Grant stale, FencingToken newer) {
        assertThatThrownBy(() -> client.put("orders", "order-17", "by A", stale))
                .isInstanceOfSatisfying(StaleWriteException.class, e -> {
                    assertThat(e.token()).isEqualTo(stale.token());
                    assertThat(e.accepted()).isEqualTo(newer.value());
                    StaleDiagnosis diagnosis = e.diagnose();
                    assertThat(diagnosis.kind()).as(diagnosis.detail()).isEqualTo(StaleDiagnosis.Kind.SUPERSEDED);
                    assertThat(diagnosis.supersededBy()).isEqualTo(newer.value());
                });
        assertThat(client.get("orders", "order-17").valueUtf8()).isEqualTo("by B");
    }
}

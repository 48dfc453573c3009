package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A closed client leaves no I/O thread behind. Regression: the channels ran on gRPC's shared event loops, whose
 * threads outlive the last channel by a second; a JVM exiting meanwhile waits up to 300 ms for threads in native code,
 * so every {@code fencer lock exec} paid 300 ms at exit.
 */
class ClientThreadsTest {
    @TempDir
    Path dir;

    @Test
    void close_afterCalls_leavesNoIoThreadAlive() {
        try (FakeServer server = FakeServer.start()) {
            FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(5))
                    .build();
            Session session = client.openSession(Duration.ofSeconds(10));
            assertThat(ioThreads()).as("the client's channels run on its own threads").isNotEmpty();
            session.close();

            client.close();

            assertThat(ioThreads()).as("I/O threads alive once the client returned from close").isEmpty();
        }
    }

    @Test
    void close_ofAStoreAfterCalls_leavesNoIoThreadAlive() {
        FakeStore server = FakeStore.start(dir.resolve("store"));
        try (FakeServer locks = FakeServer.start();
             FencerClient lockService = Fencer.newBuilder().endpoints(locks.endpoint()).build()) {
            FencedStore store = Fencer.store(server.endpoint(), lockService);
            store.get("orders", "k");
            assertThat(ioThreads()).isNotEmpty();

            store.close();
            lockService.close();

            assertThat(ioThreads()).as("I/O threads alive once the store and client were closed").isEmpty();
        } finally {
            server.close();
        }
    }

    /**
     * The event-loop threads of Fencer's clients alive now. (gRPC's shared group cannot be told apart here: the fake
     * servers of this JVM run on it too.)
     */
    private static List<String> ioThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(name -> name.startsWith("fencer-client") || name.startsWith("fencer-store-client")).toList();
    }
}

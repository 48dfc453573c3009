package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A closed client leaves no I/O thread behind. Regression: the channels ran on gRPC's shared event loops, whose
 * threads outlive the last channel by a second; a JVM exiting meanwhile waits up to 300 ms for threads in native code,
 * so every {@code fencer lock exec} paid 300 ms at exit.
 */
class ClientThreadsTest {
    /** How long a thread of a closed client is given to finish its last instructions: far below gRPC's second. */
    private static final long JOIN_MILLIS = 200;
    /** Threads alive before the test: other tests of this JVM may leave clients of their own open. */
    private final Set<Thread> before = Set.copyOf(Thread.getAllStackTraces().keySet());

    @TempDir
    Path dir;

    @Test
    void close_afterCalls_leavesNoIoThreadAlive() throws InterruptedException {
        try (FakeServer server = FakeServer.start()) {
            FencerClient client = Fencer.newBuilder().endpoints(server.endpoint()).callTimeout(Duration.ofSeconds(5))
                    .build();
            Session session = client.openSession(Duration.ofSeconds(10));
            assertThat(ioThreads()).as("the client's channels run on its own threads").isNotEmpty();
            session.close();

            client.close();

            assertThat(ioThreadsAfterClose()).as("I/O threads alive once the client returned from close").isEmpty();
        }
    }

    @Test
    void close_ofAStoreAfterCalls_leavesNoIoThreadAlive() throws InterruptedException {
        FakeStore server = FakeStore.start(dir.resolve("store"));
        try (FakeServer locks = FakeServer.start();
             FencerClient lockService = Fencer.newBuilder().endpoints(locks.endpoint()).build()) {
            FencedStore store = Fencer.store(server.endpoint(), lockService);
            store.get("orders", "k");
            assertThat(ioThreads()).isNotEmpty();

            store.close();
            lockService.close();

            assertThat(ioThreadsAfterClose()).as("I/O threads alive once the store and client were closed").isEmpty();
        } finally {
            server.close();
        }
    }

    /**
     * The event-loop threads of Fencer's clients started by this test and alive now. (gRPC's shared group cannot be
     * told apart here: the fake servers of this JVM run on it too.)
     */
    private List<String> ioThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                .filter(thread -> !before.contains(thread)).map(Thread::getName)
                .filter(name -> name.startsWith("fencer-client") || name.startsWith("fencer-store-client")).toList();
    }

    /**
     * The event-loop threads of this test still alive a moment after the client's close returned: an event loop
     * completes its termination just before its thread's last instructions, so a thread may still be seen alive for
     * that instant. Threads stuck in their loop (gRPC's shared group keeps its own a second) stay alive through it.
     */
    private List<String> ioThreadsAfterClose() throws InterruptedException {
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(thread) && (thread.getName().startsWith("fencer-client")
                    || thread.getName().startsWith("fencer-store-client"))) {
                thread.join(JOIN_MILLIS);
            }
        }
        return ioThreads();
    }
}

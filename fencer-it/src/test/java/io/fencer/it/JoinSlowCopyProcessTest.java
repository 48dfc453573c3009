package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.process.Network;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import io.fencer.core.MembershipRefusedException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A new peer whose copy of the group's state takes longer than its wait and than an election timeout. The founder
 * holds some 80,000 locks of long names, the joiner's host receives at most 24 Mbit/s (a real token bucket on its
 * link, in a network namespace), and the add is made as the joiner's 2-second wait begins. Two regressions: the joiner
 * gave up when its {@code --join-wait} ran out mid-copy and removed its storage, failing the add; and, the add
 * committed while the joiner was still far behind, the leader marked it caught up at once, so it turned RUNNING with
 * a configuration that did not yet name it, stood for election when one 4 MiB append took longer than its election
 * timeout to arrive, found itself in no configuration and shut its Raft division down for good. Now the joiner says
 * its wait ran out during the copy (the fault was exercised) and waits on, the leader marks it caught up once it
 * holds the configuration that adds it, and it serves. A promote meanwhile is refused (promoted, it would have met
 * the same end), and succeeds once it serves. The rate keeps each request of the copy within the Raft port's 3-second
 * request timeout.
 */
class JoinSlowCopyProcessTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SESSIONS = 8;
    private static final int THREADS_PER_SESSION = 1;
    private static final int LOCKS_PER_THREAD = 9_984;
    /**
     * Locks taken by one AcquireAll (the most is 64): each counts as a wait while it is added, so the 8 threads stay
     * within an identity's quota of 1,000 waits.
     */
    private static final int LOCKS_PER_CALL = 64;
    /** 250 bytes of name (the most is 256): some 80,000 held locks, in the log or a snapshot. */
    private static final String NAME_PADDING = "x".repeat(240);

    @TempDir
    Path dir;
    private final List<FencerProcess> processes = new ArrayList<>();
    private Network network;

    @AfterEach
    void stopAll() {
        processes.forEach(FencerProcess::close);
        if (network != null) {
            network.close();
        }
    }

    @Test
    void join_copyOutlastsTheJoinWait_waitsOnAndJoins() throws Exception {
        network = Network.create(List.of("n1", "n2"));
        String founder = network.address("n1") + ":7070";
        String secret = dir.resolve("raft.secret").toString();
        FencerProcess first = started("n1", List.of("server", "--id", "n1", "--host", network.address("n1"),
                "--insecure", "--no-store", "--data", dir.resolve("n1").toString(), "--raft-secret-file", secret));
        try (FencerClient client = Fencer.newBuilder().endpoints(founder).callTimeout(Duration.ofSeconds(30))
                .build()) {
            await(() -> answers(client) || !first.isAlive(), () -> "the founder serving");
            assertThat(first.isAlive()).as(first.logText()).isTrue();
            holdLocks(client);
            network.throttleInbound("n2", "24mbit");
            FencerProcess joiner = started("n2", List.of("server", "--id", "n2", "--host", network.address("n2"),
                    "--insecure", "--join", founder, "--join-wait", "2s", "--no-store", "--data",
                    dir.resolve("n2").toString(), "--raft-secret-file", secret));
            await(() -> joiner.logContains("waits to be added"), () -> "n2 waiting; " + joiner.logText());
            // Through the client, not a command of its own: the add must come early in the wait, and a JVM's start
            // could take much of it on a busy machine.
            long addStart = System.nanoTime();
            client.peers().add("n2", network.address("n2") + ":7072", network.address("n2") + ":7070");
            Duration add = Duration.ofNanos(System.nanoTime() - addStart);
            assertThatThrownBy(() -> client.peers().promote("n2")).as("a promote before the joiner holds its add")
                    .isInstanceOf(MembershipRefusedException.class)
                    .hasMessageContaining("does not hold the configuration that adds it yet");

            await(() -> joiner.logContains("is in the group's configuration"), () -> "n2 in the group; "
                    + joiner.logText());
            assertThat(joiner.logText()).as("the fault was exercised (the add took " + add + ")")
                    .contains("--join-wait 2s ran out while the group copies its state to this peer")
                    .doesNotContain("--join refused");
            await(() -> FencerProcess.health(network.address("n2"), 7071).contains("\"status\":\"ok\""),
                    () -> "n2 healthy; " + FencerProcess.health(network.address("n2"), 7071) + joiner.logText());
            assertThat(joiner.logText()).doesNotContain("NOT_IN_CONF");
            assertThat(client.peers().promote("n2")).as("promoted once it holds it").anySatisfy(peer -> {
                assertThat(peer.id()).isEqualTo("n2");
                assertThat(peer.voter()).isTrue();
            });
            assertThat(client.peers().list()).anySatisfy(peer -> assertThat(peer.id()).isEqualTo("n2"));
        }
    }

    private static boolean answers(FencerClient client) {
        try {
            client.peers().list();
            return true;
        } catch (RuntimeException notYet) {
            return false;
        }
    }

    /** Has {@value #SESSIONS} sessions take and keep some 80,000 locks of 250-byte names. */
    private static void holdLocks(FencerClient client) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(SESSIONS * THREADS_PER_SESSION);
        try {
            List<Future<?>> work = new ArrayList<>();
            for (int s = 0; s < SESSIONS; s++) {
                Session session = client.openSession(Duration.ofMinutes(5));
                for (int t = 0; t < THREADS_PER_SESSION; t++) {
                    String prefix = "s" + s + "t" + t + "-" + NAME_PADDING + "-";
                    work.add(threads.submit(() -> {
                        for (int first = 0; first < LOCKS_PER_THREAD; first += LOCKS_PER_CALL) {
                            String[] names = IntStream.range(first, Math.min(first + LOCKS_PER_CALL, LOCKS_PER_THREAD))
                                    .mapToObj(i -> prefix + i).toArray(String[]::new);
                            session.locks(names).acquire(Duration.ofSeconds(30));
                        }
                    }));
                }
            }
            for (Future<?> each : work) {
                each.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private FencerProcess started(String host, List<String> arguments) throws Exception {
        List<String> prefix = new ArrayList<>(network.commandPrefixOn(host));
        // A line per applied entry's grants would fill the joiner's log with the copied state.
        prefix.addAll(List.of("env", "JAVA_TOOL_OPTIONS=-Dorg.slf4j.simpleLogger.log.io.fencer.server.grants=warn"));
        FencerProcess process = FencerProcess.start(host, dir, prefix, arguments);
        processes.add(process);
        return process;
    }

    private static void await(BooleanSupplier condition, Supplier<String> what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(what.get() + "\n: not within " + WAIT);
            }
            FencerProcess.pause(200);
        }
    }
}

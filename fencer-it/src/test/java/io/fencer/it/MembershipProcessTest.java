package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StoreValue;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Membership at run time with real processes and the operator's commands: a group of three under load (fenced
 * writes from client threads) gets a fourth peer started with {@code --join} and added as a learner, promotes it,
 * removes an original peer, then loses its leader to SIGKILL. The service keeps granting, tokens strictly increase
 * per lock, every acknowledged write is in the store, and the removed peer's process neither serves nor disturbs.
 * A join the group does not know fails with exit code 8 and the command to run, changing nothing.
 */
@org.junit.jupiter.api.Tag(Soak.TAG) // the full suite keeps MembershipTest (in process: the same changes under grants, bad input, durability)
class MembershipProcessTest {
    private static final List<String> LOCKS = List.of("alpha", "beta");
    private static final int WORKERS = 3;
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    Path dir;
    private final List<FencerProcess> processes = new CopyOnWriteArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();
    private final Map<String, List<Long>> tokensByLock = new ConcurrentHashMap<>();
    /** Every acknowledged write: the key written (under its lock's scope) and the value. */
    private final Map<String, String> acknowledged = new ConcurrentHashMap<>();
    private final AtomicLong grants = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Throwable> workerFailures = new CopyOnWriteArrayList<>();

    @AfterEach
    void stopAll() {
        stop.set(true);
        processes.forEach(FencerProcess::close);
        if (System.getProperty("fencer.it.printLogs") != null) {
            processes.forEach(process -> System.out.println("=== " + process + "\n" + process.logText()));
        }
    }

    @Test
    void addPromoteRemoveAndKill_underFencedLoad_keepsGrantingWithIncreasingTokensAndLosesNothing()
            throws Exception {
        String founders = startFounders();
        FencerProcess.Ports storePorts = FencerProcess.Ports.free();
        FencerProcess store = started(FencerProcess.storeServer("store", dir.resolve("store"), storePorts));
        store.awaitHealthy(storePorts.admin());
        List<Thread> workers = startWorkers(founders, storePorts.endpoint());
        awaitGrants(20);

        String unknown = joinUnknownPeer(founders);
        FencerProcess.Ports n4 = FencerProcess.Ports.free();
        FencerProcess joiner = started(FencerProcess.start("n4", dir, List.of("server", "--id", "n4", "--join",
                founders, "--data", dir.resolve("n4").toString(), "--port", Integer.toString(n4.client()),
                "--admin-port", Integer.toString(n4.admin()), "--raft-port", Integer.toString(n4.raft()),
                "--http-port", "0", "--raft-secret-file", dir.resolve("raft.secret").toString())));
        await(() -> joiner.logText().contains("waits to be added"), "n4 waiting to be added");
        assertThat(cli("peers", "add", "n4", "--raft", "127.0.0.1:" + n4.raft(), "--client", n4.endpoint(),
                "--server", founders)).isZero();
        awaitGrants(grants.get() + 10);
        await(() -> cli("peers", "promote", "n4", "--server", founders) == 0, "n4 promoted once caught up");
        awaitGrants(grants.get() + 10);

        int leader = leaderIndex();
        int removed = (leader + 1) % 3;
        assertThat(cli("peers", "remove", "n" + (removed + 1), "--server", founders)).isZero();
        await(() -> !FencerProcess.health(ports.get(removed).admin()).contains("\"status\":\"ok\""),
                "the removed peer no longer reports a leader it serves under");
        awaitGrants(grants.get() + 10);
        processes.get(leader).kill9();
        awaitGrants(grants.get() + 20);
        stop.set(true);
        for (Thread worker : workers) {
            worker.join(WAIT.toMillis());
        }

        String list = cliOutput("peers", "list", "--json", "--server", n4.endpoint());
        assertThat(list).contains("\"id\":\"n4\"", "\"role\":\"voter\"").doesNotContain("\"id\":\"n" + (removed + 1)
                + "\"").doesNotContain("\"id\":\"" + unknown + "\"");
        assertThat(workerFailures).isEmpty();
        assertTokensStrictlyIncreasePerLock();
        assertEveryAcknowledgedWriteIsStored(storePorts.endpoint());
        assertThat(FencerProcess.health(ports.get(removed).admin())).as("the removed peer serves nothing")
                .doesNotContain("\"status\":\"ok\"");
    }

    /** Starts n1..n3 with --peers; returns their client addresses, comma-separated. */
    private String startFounders() throws Exception {
        StringBuilder group = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            group.append(i == 0 ? "" : ",").append("n").append(i + 1).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
        }
        for (int i = 0; i < 3; i++) {
            started(FencerProcess.server("n" + (i + 1), dir.resolve("n" + (i + 1)), ports.get(i), "--id",
                    "n" + (i + 1), "--peers", group.toString(), "--raft-secret-file",
                    dir.resolve("raft.secret").toString()));
        }
        for (int i = 0; i < 3; i++) {
            processes.get(i).awaitHealthy(ports.get(i).admin());
        }
        return String.join(",", ports.stream().map(FencerProcess.Ports::endpoint).toList());
    }

    /** A peer the group was never told of: --join fails with exit 8, naming the command, and changes nothing. */
    private String joinUnknownPeer(String founders) throws Exception {
        String before = cliOutput("peers", "list", "--json", "--server", founders);
        FencerProcess.Ports p = FencerProcess.Ports.free();
        FencerProcess stranger = started(FencerProcess.start("n9", dir, List.of("server", "--id", "n9", "--join",
                founders, "--join-wait", "2s", "--data", dir.resolve("n9").toString(), "--port",
                Integer.toString(p.client()), "--admin-port", Integer.toString(p.admin()), "--raft-port",
                Integer.toString(p.raft()), "--http-port", "0", "--raft-secret-file",
                dir.resolve("raft.secret").toString())));

        assertThat(stranger.awaitExit(WAIT)).isEqualTo(8);
        assertThat(stranger.logText()).contains("did not add peer n9", "fencer peers add n9 --raft 127.0.0.1:"
                + p.raft());
        assertThat(dir.resolve("n9").resolve("raft")).as("the storage it made, with nothing of the group").doesNotExist();
        assertThat(shape(cliOutput("peers", "list", "--json", "--server", founders))).isEqualTo(shape(before));
        return "n9";
    }

    /** Returns the ids and roles of a `peers list --json` output, without the progress that changes meanwhile. */
    private static List<String> shape(String json) {
        List<String> shape = new ArrayList<>();
        for (String peer : json.split("\\{")) {
            if (peer.contains("\"id\"")) {
                shape.add(field(peer, "id") + " " + field(peer, "role"));
            }
        }
        return shape;
    }

    private static String field(String object, String name) {
        int start = object.indexOf("\"" + name + "\":\"") + name.length() + 4;
        return object.substring(start, object.indexOf('"', start));
    }

    private List<Thread> startWorkers(String founders, String store) {
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            int worker = w;
            Thread thread = new Thread(() -> work(founders, store, worker), "worker-" + w);
            thread.setDaemon(true);
            thread.start();
            workers.add(thread);
        }
        return workers;
    }

    /** Takes each lock in turn, records its token while holding it, and writes under it to the store. */
    private void work(String founders, String storeEndpoint, int worker) {
        try (FencerClient fencer = Fencer.newBuilder().endpoints(founders.split(","))
                .callTimeout(Duration.ofSeconds(30)).build();
                FencedStore store = Fencer.newStoreBuilder().endpoint(storeEndpoint)
                        .callTimeout(Duration.ofSeconds(10)).build()) {
            Session session = fencer.openSession(Duration.ofSeconds(10));
            for (long i = 0; !stop.get(); i++) {
                String lock = LOCKS.get((int) ((i + worker) % LOCKS.size()));
                try (Grant grant = session.lock(lock).acquire(Duration.ofSeconds(30))) {
                    tokensByLock.computeIfAbsent(lock, key -> new CopyOnWriteArrayList<>()).add(grant.token().value());
                    String key = "w" + worker + "-" + i;
                    store.put(lock, key, Long.toString(grant.token().value()), grant);
                    acknowledged.put(lock + "/" + key, Long.toString(grant.token().value()));
                    grants.incrementAndGet();
                }
            }
        } catch (Throwable e) {
            if (!stop.get()) {
                workerFailures.add(e);
            }
        }
    }

    private void assertTokensStrictlyIncreasePerLock() {
        for (Map.Entry<String, List<Long>> tokens : tokensByLock.entrySet()) {
            List<Long> values = tokens.getValue();
            for (int i = 1; i < values.size(); i++) {
                assertThat(values.get(i)).as("token %d of lock %s", i, tokens.getKey()).isGreaterThan(values.get(i - 1));
            }
        }
    }

    private void assertEveryAcknowledgedWriteIsStored(String storeEndpoint) {
        assertThat(acknowledged).isNotEmpty();
        try (FencedStore store = Fencer.newStoreBuilder().endpoint(storeEndpoint).callTimeout(Duration.ofSeconds(10))
                .build()) {
            for (Map.Entry<String, String> write : acknowledged.entrySet()) {
                String[] scopeAndKey = write.getKey().split("/", 2);
                StoreValue stored = store.get(scopeAndKey[0], scopeAndKey[1]);
                assertThat(new String(stored.value(), StandardCharsets.UTF_8)).as(write.getKey())
                        .isEqualTo(write.getValue());
            }
        }
    }

    private void awaitGrants(long count) {
        await(() -> grants.get() >= count || !workerFailures.isEmpty(), count + " grants");
        assertThat(workerFailures).isEmpty();
    }

    private int leaderIndex() {
        int[] leader = {-1};
        await(() -> {
            for (int i = 0; i < 3; i++) {
                if (processes.get(i).isAlive()
                        && FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\"")) {
                    leader[0] = i;
                    return true;
                }
            }
            return false;
        }, "a leader among the founders");
        return leader[0];
    }

    /** Runs {@code fencer ARGS...} to its end and returns its exit code. */
    private int cli(String... arguments) {
        try {
            FencerProcess command = FencerProcess.start("cli", dir.resolve("cli"), List.of(arguments));
            return command.awaitExit(WAIT);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** Runs {@code fencer ARGS...}, checks it succeeded, and returns its first line of output. */
    private String cliOutput(String... arguments) throws Exception {
        FencerProcess command = FencerProcess.start("cli", dir.resolve("cli"), List.of(arguments));
        String line = command.awaitLine(WAIT);
        assertThat(command.awaitExit(WAIT)).as(command.logText()).isZero();
        return line;
    }

    private FencerProcess started(FencerProcess process) {
        processes.add(process);
        return process;
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(what + ": not within " + WAIT);
            }
            FencerProcess.pause(200);
        }
    }
}

package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreOp;
import io.fencer.client.StoreValue;
import io.fencer.core.UnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durability of acknowledged writes and of refusals across a store crash: 32 writer threads in this JVM write through
 * gRPC to a store-server process, with tokens of real grants that a rotator replaces by newer ones over time, and
 * every tenth write deliberately with the scope's previous, superseded token. Every attempt is recorded as
 * acknowledged, refused, or unknown (no answer). The store is killed (SIGKILL) mid-stream and restarted on the same
 * data; afterwards every key holds its latest acknowledged value (or the value of a write whose outcome was
 * unknown), and no refused write's value is visible anywhere.
 */
class StoreCrashDurabilityProcessTest {
    private static final int SCOPES = 4;
    private static final int WRITERS = 32;
    private static final int KEYS_PER_WRITER = 8;
    /** Every this many writes, a writer presents its scope's previous (superseded) token. */
    private static final int STALE_EVERY = 10;
    /** Every this many writes, a writer sends an idempotency key (retried when the answer is lost). */
    private static final int IDEMPOTENT_EVERY = 3;
    private static final long ACKS_PER_PHASE = 1_000;
    private static final Duration ROTATE_EVERY = Duration.ofMillis(250);
    private static final Duration ERROR_PAUSE = Duration.ofMillis(50);

    /** What became of one write attempt. */
    enum Outcome { ACKED, REFUSED, UNKNOWN }

    /** One write attempt: its key, its unique value, and its outcome. */
    record Attempt(String scope, String key, String value, Outcome outcome) {}

    @TempDir
    Path dir;
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicLong acks = new AtomicLong();
    private final List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    /** The current and previous sequencer of each scope, published by the rotator. */
    private final AtomicReferenceArray<String> current = new AtomicReferenceArray<>(SCOPES);
    private final AtomicReferenceArray<String> previous = new AtomicReferenceArray<>(SCOPES);

    @AfterEach
    void closeAll() throws Exception {
        stop.set(true);
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closing(T closeable) {
        toClose.add(closeable);
        return closeable;
    }

    private static String scope(int index) {
        return "crash-" + index;
    }

    @Test
    void kill9MidStream_everyAcknowledgedWriteSurvives_andNoRefusedWriteIsVisible() throws Exception {
        FencerProcess.Ports lockPorts = FencerProcess.Ports.free();
        FencerProcess.Ports storePorts = FencerProcess.Ports.free();
        FencerProcess lockServer = closing(FencerProcess.server("locks", dir.resolve("lock-data"), lockPorts));
        FencerProcess store = closing(FencerProcess.storeServer("store-0", dir.resolve("store-data"), storePorts));
        lockServer.awaitHealthy(lockPorts.admin());
        store.awaitHealthy(storePorts.admin());
        FencerClient fencer = closing(Fencer.newBuilder().endpoints(lockPorts.endpoint())
                .callTimeout(Duration.ofSeconds(30)).build());
        FencedStore client = closing(Fencer.newStoreBuilder().endpoint(storePorts.endpoint())
                .callTimeout(Duration.ofSeconds(5)).build());

        Thread rotator = startThread("rotator", () -> rotate(fencer));
        SeedScenarioProcessTest.await(() -> allScopesHaveTokens());
        List<List<Attempt>> histories = new ArrayList<>();
        List<Thread> writers = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
            List<Attempt> history = new ArrayList<>();
            histories.add(history);
            int writer = w;
            writers.add(startThread("writer-" + w, () -> write(client, writer, history)));
        }

        SeedScenarioProcessTest.await(() -> acks.get() >= ACKS_PER_PHASE);
        long acksBeforeKill = acks.get();
        store.kill9();
        FencerProcess restarted = closing(FencerProcess.storeServer("store-1", dir.resolve("store-data"),
                storePorts));
        restarted.awaitHealthy(storePorts.admin());
        long acksAtRestart = acks.get();
        SeedScenarioProcessTest.await(() -> acks.get() >= acksAtRestart + ACKS_PER_PHASE);
        stop.set(true);
        for (Thread thread : writers) {
            thread.join(Duration.ofSeconds(60).toMillis());
            assertThat(thread.isAlive()).as(thread.getName() + " stopped").isFalse();
        }
        rotator.join(Duration.ofSeconds(60).toMillis());

        assertThat(unexpected).as("unexpected errors").isEmpty();
        assertThat(acksBeforeKill).isGreaterThanOrEqualTo(ACKS_PER_PHASE);
        checkHistories(client, histories);
    }

    private boolean allScopesHaveTokens() {
        for (int i = 0; i < SCOPES; i++) {
            if (current.get(i) == null) {
                return false;
            }
        }
        return true;
    }

    private Thread startThread(String name, Runnable body) {
        Thread thread = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable t) {
                unexpected.add(t);
            }
        }, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    /** Replaces each scope's grant by a newer one, round after round: release, then acquire again. */
    private void rotate(FencerClient fencer) {
        try (Session session = fencer.openSession(Duration.ofSeconds(10))) {
            Grant[] grants = new Grant[SCOPES];
            while (!stop.get()) {
                for (int i = 0; i < SCOPES; i++) {
                    if (grants[i] != null) {
                        grants[i].close();
                    }
                    grants[i] = session.lock(scope(i)).acquire(Duration.ofSeconds(30));
                    String before = current.getAndSet(i, grants[i].sequencer());
                    if (before != null) {
                        previous.set(i, before);
                    }
                }
                FencerProcess.pause(ROTATE_EVERY.toMillis());
            }
        }
    }

    /** One writer: puts unique values to its own keys until stopped, recording every outcome. */
    private void write(FencedStore client, int writer, List<Attempt> history) {
        int scopeIndex = writer % SCOPES;
        String scope = scope(scopeIndex);
        for (long n = 1; !stop.get(); n++) {
            String stale = previous.get(scopeIndex);
            String sequencer = n % STALE_EVERY == 0 && stale != null ? stale : current.get(scopeIndex);
            String key = "w" + writer + "-k" + (n % KEYS_PER_WRITER);
            String value = "w" + writer + "-" + n;
            String idempotencyKey = n % IDEMPOTENT_EVERY == 0 ? value : null;
            Outcome outcome;
            try {
                client.write(scope, sequencer, List.of(StoreOp.put(key, value)), idempotencyKey);
                outcome = Outcome.ACKED;
                acks.incrementAndGet();
            } catch (StaleWriteException e) {
                // A refusal after a retry may follow an earlier attempt that was applied: its outcome is unknown.
                outcome = e.retried() ? Outcome.UNKNOWN : Outcome.REFUSED;
            } catch (UnavailableException e) {
                outcome = Outcome.UNKNOWN;
                FencerProcess.pause(ERROR_PAUSE.toMillis());
            }
            history.add(new Attempt(scope, key, value, outcome));
        }
    }

    private void checkHistories(FencedStore client, List<List<Attempt>> histories) {
        Set<String> refused = new HashSet<>();
        long refusedCount = 0;
        long unknownCount = 0;
        Map<String, String> lastAcked = new HashMap<>();
        Map<String, Set<String>> unknown = new HashMap<>();
        Map<String, String> scopeOfKey = new HashMap<>();
        for (List<Attempt> history : histories) {
            for (Attempt attempt : history) {
                scopeOfKey.put(attempt.key(), attempt.scope());
                switch (attempt.outcome()) {
                    case ACKED -> lastAcked.put(attempt.key(), attempt.value());
                    case REFUSED -> {
                        refused.add(attempt.value());
                        refusedCount++;
                    }
                    case UNKNOWN -> {
                        unknown.computeIfAbsent(attempt.key(), k -> new HashSet<>()).add(attempt.value());
                        unknownCount++;
                    }
                    default -> throw new IllegalStateException("outcome " + attempt.outcome());
                }
            }
        }
        assertThat(refusedCount).as("deliberately stale writes were refused").isPositive();
        assertThat(unknownCount).as("some writes met the dead store").isPositive();
        for (Map.Entry<String, String> entry : scopeOfKey.entrySet()) {
            String key = entry.getKey();
            StoreValue stored = client.get(entry.getValue(), key);
            String value = stored.valueUtf8();
            Set<String> allowed = new HashSet<>(unknown.getOrDefault(key, Set.of()));
            if (lastAcked.containsKey(key)) {
                allowed.add(lastAcked.get(key));
                assertThat(value).as("key " + key + " keeps its last acknowledged value " + lastAcked.get(key)
                        + " or an unknown-outcome one").isIn(allowed);
            } else if (value != null) {
                assertThat(value).as("key " + key + " without acknowledged writes").isIn(allowed);
            }
            assertThat(refused).as("no refused value is visible at " + key).doesNotContain(value);
        }
    }
}

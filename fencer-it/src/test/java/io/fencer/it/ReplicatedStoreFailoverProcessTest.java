package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleDiagnosis;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreOp;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The replicated store of three peers (three {@code fencer server} processes) under fenced write load, its leader
 * killed (SIGKILL) in the middle: every acknowledged write is read back afterwards, no write with a superseded token
 * was ever accepted (the accepted tokens of each scope never decrease in the scope's own write order), writes resume
 * on a new leader within {@link #RESUME_BOUND}, and the fault really happened (the killed process led, died of
 * signal 9, and a peer with another id led afterwards).
 *
 * <p>The load: {@value #OWN_WRITERS} writers each hold their own lock for the whole run and write increasing values
 * to their own scope; a pair of writers contend on one lock and one scope, taking turns, so their tokens supersede
 * each other; after each of its writes a contending writer also presents the previous grant's token (a holder paused
 * past its turn would), which the store must refuse.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ReplicatedStoreFailoverProcessTest {
    /** How soon after the kill every writer must have a write acknowledged again, on this slow shared machine. */
    static final Duration RESUME_BOUND = Duration.ofSeconds(10);
    private static final int OWN_WRITERS = 3;
    private static final String SHARED = "shared";
    private static final Duration LOAD_BEFORE_KILL = Duration.ofSeconds(3);
    private static final Duration LOAD_AFTER_RESUME = Duration.ofSeconds(2);
    /** A session outlives the failover (detection, election, the clients' reconnection) on a loaded machine. */
    private static final Duration SESSION_TTL = Duration.ofSeconds(15);

    @TempDir
    Path dir;
    private final List<FencerProcess> peers = new ArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    /** Every acknowledged write, in the order the acknowledgements arrived. */
    private final List<Ack> acks = new CopyOnWriteArrayList<>();
    /** Every token granted for the shared lock, by the writer that got it. */
    private final Map<Long, String> sharedGrants = new ConcurrentHashMap<>();
    private final AtomicInteger staleRefused = new AtomicInteger();
    /** A refusal of a superseded token kept for diagnosis once the load has stopped (diagnosis asks the group). */
    private final java.util.concurrent.atomic.AtomicReference<StaleWriteException> keptRefusal =
            new java.util.concurrent.atomic.AtomicReference<>();
    private final List<Ack> staleAccepted = new CopyOnWriteArrayList<>();
    private final AtomicInteger unavailable = new AtomicInteger();

    /** One acknowledged write: who wrote what with which token, when it was sent and when acknowledged. */
    record Ack(String writer, String scope, String key, long value, WriteReceipt receipt, long sentNanos,
            long ackNanos) {}

    @AfterEach
    void stopPeers() {
        stop.set(true);
        peers.forEach(FencerProcess::close);
    }

    @Test
    void killLeader_underFencedWriteLoad_keepsEveryAcknowledgedWriteRefusesStaleTokensAndResumes() throws Exception {
        startGroup();
        String endpoints = ports.stream().map(FencerProcess.Ports::endpoint).collect(Collectors.joining(","));
        ExecutorService writers = Executors.newFixedThreadPool(OWN_WRITERS + 2);
        try (FencerClient fencer = Fencer.newBuilder().endpoints(endpoints.split(","))
                .callTimeout(Duration.ofSeconds(30)).build();
             FencedStore store = Fencer.newStoreBuilder().endpoint(endpoints).lockService(fencer)
                     .callTimeout(Duration.ofSeconds(20)).build()) {
            List<Future<?>> running = new ArrayList<>();
            for (int i = 0; i < OWN_WRITERS; i++) {
                String name = "own-" + i;
                running.add(writers.submit(() -> ownWriter(fencer, store, name)));
            }
            for (String name : List.of("pair-a", "pair-b")) {
                running.add(writers.submit(() -> contendingWriter(fencer, store, name)));
            }
            awaitAcksFromEveryWriter(0);
            FencerProcess.pause(LOAD_BEFORE_KILL.toMillis());

            int leader = leaderIndex(-1);
            String leaderId = "n" + (leader + 1);
            assertThat(FencerProcess.health(ports.get(leader).admin())).as("the peer about to be killed leads")
                    .contains("\"role\":\"LEADER\"").contains("\"id\":\"" + leaderId + "\"");
            long killNanos = System.nanoTime();
            peers.get(leader).kill9();
            long deadNanos = System.nanoTime();
            int exit = peers.get(leader).awaitExit(Duration.ofSeconds(1));

            awaitAcksFromEveryWriter(deadNanos);
            Duration resume = resumeAfter(killNanos, deadNanos);
            FencerProcess.pause(LOAD_AFTER_RESUME.toMillis());
            stop.set(true);
            for (Future<?> writer : running) {
                writer.get(60, TimeUnit.SECONDS); // a writer's unexpected failure fails the test here
            }
            int successor = leaderIndex(leader);
            System.out.printf("replicated store failover: killed leader %s (exit %d); every writer resumed %d ms"
                    + " after the kill (bound %d ms); %d writes acknowledged, %d stale refused, %d attempts"
                    + " unavailable; new leader n%d%n", leaderId, exit, resume.toMillis(), RESUME_BOUND.toMillis(),
                    acks.size(), staleRefused.get(), unavailable.get(), successor + 1);

            assertThat(exit).as("the leader died of SIGKILL (128 + 9)").isEqualTo(137);
            assertThat(successor).as("a peer with another id leads after the kill").isNotEqualTo(leader);
            assertThat(resume).as("every writer resumed within the bound").isLessThan(RESUME_BOUND);
            assertEveryAcknowledgedWriteReadBack(store);
            assertNoSupersededTokenAccepted();
            StaleDiagnosis diagnosis = keptRefusal.get().diagnose();
            assertThat(diagnosis.kind()).as("a refusal from the replicated store diagnosed by the group: %s",
                    diagnosis).isEqualTo(StaleDiagnosis.Kind.SUPERSEDED);
            assertThat(diagnosis.supersededBy()).isGreaterThan(diagnosis.presented().value());
        } finally {
            stop.set(true);
            writers.shutdownNow();
        }
    }

    /** Holds its own lock for the whole run and writes 1, 2, 3, ... to key {@code v} of its own scope. */
    private Void ownWriter(FencerClient fencer, FencedStore store, String name) {
        try (Session session = fencer.openSession(SESSION_TTL);
             Grant grant = session.lock(name).acquire(Duration.ofSeconds(30))) {
            for (long value = 1; !stop.get(); value++) {
                if (!writeUntilAnswered(store, name, name, "v", value, grant)) {
                    throw new AssertionError(name + "'s own grant " + grant.token() + " was refused as stale");
                }
            }
        }
        return null;
    }

    /**
     * Takes turns with the other contending writer on the shared lock: acquires, writes three values to its own key
     * of the shared scope, presents the previous grant's token once after each (it must be refused), releases.
     */
    private Void contendingWriter(FencerClient fencer, FencedStore store, String name) {
        long value = 0;
        try (Session session = fencer.openSession(SESSION_TTL)) {
            while (!stop.get()) {
                Grant grant = session.lock(SHARED).acquire(Duration.ofSeconds(60));
                sharedGrants.put(grant.token().value(), name);
                try {
                    for (int i = 0; i < 3 && !stop.get(); i++) {
                        if (!writeUntilAnswered(store, name, SHARED, name, ++value, grant)) {
                            break; // superseded (its session lapsed during the failover): take another turn
                        }
                        presentPreviousToken(store, name, grant);
                    }
                } finally {
                    closeQuietly(grant);
                }
            }
        }
        return null;
    }

    /**
     * Writes {@code value} under {@code grant} until the store answers: an UNAVAILABLE attempt (its answer lost in
     * the failover) is sent again with the same idempotency key, which the store answers with the first result
     * if the first attempt was applied. Returns false when the token was refused as stale.
     */
    private boolean writeUntilAnswered(FencedStore store, String writer, String scope, String key, long value,
            Grant grant) {
        String idempotencyKey = writer + "-" + value;
        while (true) {
            long sent = System.nanoTime();
            try {
                WriteReceipt receipt = store.write(scope, grant, List.of(StoreOp.put(key, Long.toString(value))),
                        idempotencyKey);
                acks.add(new Ack(writer, scope, key, value, receipt, sent, System.nanoTime()));
                return true;
            } catch (StaleWriteException e) {
                return false;
            } catch (FencerException e) {
                if (stop.get()) {
                    return true; // torn down meanwhile; unacknowledged, so not checked
                }
                unavailable.incrementAndGet();
            }
        }
    }

    /** Presents the shared lock's largest token below {@code grant}'s: the store has accepted newer, so refuses it. */
    private void presentPreviousToken(FencedStore store, String writer, Grant grant) {
        long previous = sharedGrants.keySet().stream().filter(t -> t < grant.token().value())
                .max(Comparator.naturalOrder()).orElse(0L);
        if (previous == 0) {
            return;
        }
        String sequencer = Sequencer.format(new FencingToken(SHARED, previous)); // the group signs nothing
        long sent = System.nanoTime();
        try {
            WriteReceipt receipt = store.write(SHARED, sequencer, List.of(StoreOp.put("stale", writer)), null);
            staleAccepted.add(new Ack(writer, SHARED, "stale", previous, receipt, sent, System.nanoTime()));
        } catch (StaleWriteException e) {
            staleRefused.incrementAndGet();
            keptRefusal.compareAndSet(null, e);
        } catch (FencerException e) {
            unavailable.incrementAndGet(); // lost in the failover: neither refused nor accepted as far as we know
        }
    }

    private static void closeQuietly(Grant grant) {
        try {
            grant.close();
        } catch (RuntimeException e) {
            // a release lost in the failover; the session's end or the next grant supersedes it anyway
        }
    }

    /** Waits until every writer has a write acknowledged that it sent after {@code sinceNanos}. */
    private void awaitAcksFromEveryWriter(long sinceNanos) {
        SeedScenarioProcessTest.await(() -> acks.stream().filter(a -> a.sentNanos() > sinceNanos).map(Ack::writer)
                .distinct().count() == OWN_WRITERS + 2);
    }

    /**
     * Returns how long after the kill the last writer to resume had its first write acknowledged among those it sent
     * once the killed process was gone (so a new leader answered it).
     */
    private Duration resumeAfter(long killNanos, long deadNanos) {
        Map<String, Long> firstAck = new TreeMap<>();
        for (Ack ack : acks) {
            if (ack.sentNanos() > deadNanos) {
                firstAck.merge(ack.writer(), ack.ackNanos(), Math::min);
            }
        }
        assertThat(firstAck).hasSize(OWN_WRITERS + 2);
        return Duration.ofNanos(firstAck.values().stream().max(Comparator.naturalOrder()).orElseThrow() - killNanos);
    }

    /** Reads back every writer's key: it holds at least the last value acknowledged to that writer. */
    private void assertEveryAcknowledgedWriteReadBack(FencedStore store) {
        Map<String, Ack> last = new TreeMap<>();
        for (Ack ack : acks) {
            last.merge(ack.writer(), ack, (a, b) -> a.value() >= b.value() ? a : b);
        }
        assertThat(last).hasSize(OWN_WRITERS + 2);
        for (Ack ack : last.values()) {
            long read = Long.parseLong(store.get(ack.scope(), ack.key()).valueUtf8());
            assertThat(read).as("%s's key %s/%s after the failover", ack.writer(), ack.scope(), ack.key())
                    .isGreaterThanOrEqualTo(ack.value());
        }
    }

    /**
     * Checks that the store accepted no superseded token: in each scope's own write order (its revision), the tokens
     * never decrease; every token of the shared scope was granted; the contending writers' stale presentations were
     * made (a control) and every one refused.
     */
    private void assertNoSupersededTokenAccepted() {
        assertThat(staleAccepted).as("writes with a superseded token accepted").isEmpty();
        assertThat(staleRefused.get()).as("stale presentations refused (the attack was made)").isPositive();
        Map<String, TreeMap<Long, Long>> tokenByRevision = new TreeMap<>();
        for (Ack ack : acks) {
            Long earlier = tokenByRevision.computeIfAbsent(ack.scope(), s -> new TreeMap<>())
                    .putIfAbsent(ack.receipt().revision(), ack.receipt().token());
            assertThat(earlier == null || earlier == ack.receipt().token())
                    .as("revision %d of %s acknowledged with two tokens", ack.receipt().revision(), ack.scope())
                    .isTrue();
        }
        for (Map.Entry<String, TreeMap<Long, Long>> scope : tokenByRevision.entrySet()) {
            long highest = 0;
            for (Map.Entry<Long, Long> write : scope.getValue().entrySet()) {
                assertThat(write.getValue()).as("token of revision %d of %s", write.getKey(), scope.getKey())
                        .isGreaterThanOrEqualTo(highest);
                highest = write.getValue();
            }
        }
        assertThat(tokenByRevision.get(SHARED).values()).as("every accepted token of the shared scope was granted")
                .allMatch(sharedGrants::containsKey);
        assertThat(tokenByRevision.get(SHARED).values().stream().distinct().count())
                .as("the contending writers' tokens superseded each other").isGreaterThan(2);
    }

    private void startGroup() throws Exception {
        StringBuilder group = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            group.append(i == 0 ? "" : ",").append("n").append(i + 1).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
        }
        for (int i = 0; i < 3; i++) {
            peers.add(FencerProcess.server("n" + (i + 1), dir.resolve("n" + (i + 1)), ports.get(i),
                    "--id", "n" + (i + 1), "--peers", group.toString(),
                    "--raft-secret-file", dir.resolve("raft.secret").toString()));
        }
        for (int i = 0; i < 3; i++) {
            peers.get(i).awaitHealthy(ports.get(i).admin());
        }
    }

    /** Returns the index of the live peer, other than {@code excluded}, that says it leads; waits up to 60 s. */
    private int leaderIndex(int excluded) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < peers.size(); i++) {
                if (i != excluded && peers.get(i).isAlive()
                        && FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\"")) {
                    return i;
                }
            }
            FencerProcess.pause(100);
        }
        throw new AssertionError("no leader within 60 s");
    }
}

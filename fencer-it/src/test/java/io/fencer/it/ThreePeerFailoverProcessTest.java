package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockEvent;
import io.fencer.client.Session;
import io.fencer.client.TokenStatus;
import io.fencer.client.Watch;
import io.fencer.core.FencingToken;
import io.fencer.core.UnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Three peers as three processes: the leader is killed (SIGKILL) or frozen (SIGSTOP) while clients hold and wait for
 * locks. A new leader takes over, the clients follow it by themselves, sessions survive, a waiting acquire hears its
 * grant from the new leader, and every token granted after the failover exceeds every token granted before it, lock
 * by lock.
 */
// Never beside a chaos run: beside the partition chaos's fenced run and control (two groups of three at once), the
// failover starved, the sessions' keepalives went unanswered past their 8 s ttl, and both sessions were lost.
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class ThreePeerFailoverProcessTest {
    private static final List<String> LOCKS = List.of("alpha", "beta", "gamma");
    /** The sessions' ttl: it outlasts a failover on a loaded machine (detection, election, reconnection). */
    private static final Duration TTL = Duration.ofSeconds(8);

    @TempDir
    Path dir;
    private final List<FencerProcess> peers = new ArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();
    private FencerClient watching;

    @AfterEach
    void stopPeers() {
        if (watching != null) {
            watching.close();
        }
        peers.forEach(FencerProcess::close);
    }

    @Test
    void killLeader_whileHoldingAndWaiting_newLeaderGrantsOnlyHigherTokens() throws Exception {
        try (FencerClient fencer = startGroupAndConnect()) {
            Session holder = fencer.openSession(TTL);
            Session waiter = fencer.openSession(TTL);
            Map<String, Long> maxBefore = new HashMap<>();
            for (String lock : LOCKS) {
                for (int i = 0; i < 3; i++) {
                    try (Grant grant = holder.lock(lock).acquire(Duration.ofSeconds(30))) {
                        maxBefore.merge(lock, grant.token().value(), Math::max);
                    }
                }
            }
            Grant held = holder.lock("alpha").acquire(Duration.ofSeconds(30));
            maxBefore.merge("alpha", held.token().value(), Math::max);
            CompletableFuture<Grant> waiting = CompletableFuture.supplyAsync(
                    () -> waiter.lock("alpha").acquire(Duration.ofSeconds(120)));
            SeedScenarioProcessTest.await(() -> fencer.describe("alpha").waiterSessionIds().contains(waiter.id()));

            int leader = leaderIndex();
            peers.get(leader).kill9();
            SeedScenarioProcessTest.await(() -> leaderIndexOrMinusOne(leader) >= 0);

            // The clients find the new leader by themselves; the holder's session survived the failover.
            SeedScenarioProcessTest.await(() -> statusOrNull(fencer, held) == TokenStatus.Status.CURRENT);
            assertThat(holder.isAlive()).isTrue();
            held.close();
            Grant next = waiting.get(120, TimeUnit.SECONDS);
            assertThat(next.token().value()).isGreaterThan(maxBefore.get("alpha"));
            next.close();
            for (String lock : LOCKS) {
                try (Grant grant = waiter.lock(lock).acquire(Duration.ofSeconds(30))) {
                    assertThat(grant.token().value()).as("token of %s after failover", lock)
                            .isGreaterThan(maxBefore.get(lock));
                }
            }
        }
    }

    /**
     * Regression: an acquire queued on a leader that froze (SIGSTOP: its connections stay open and silent) stayed on
     * that connection for its whole wait, five minutes here, while the sessions' keepalives, which time out, followed
     * the new leader; the lock released there was granted to the waiter's session with no call left to hear it. The
     * client's connection keepalive now ends the silent call, and the wait is asked again of the new leader. A watch
     * begun on the leader before it froze is such a call too: it resumes on another peer and hears the grant there
     * (its control: the grant of {@code beacon}, heard from the leader before the freeze).
     */
    @Test
    void pauseLeader_whileAnAcquireWaitsAndAWatchListens_bothFollowTheNewLeaderAndHearTheGrant() throws Exception {
        try (FencerClient fencer = startGroupAndConnect()) {
            Session holder = fencer.openSession(TTL);
            Session waiter = fencer.openSession(TTL);
            Grant held = holder.lock("alpha").acquire(Duration.ofSeconds(30));
            CompletableFuture<Grant> waiting = CompletableFuture.supplyAsync(
                    () -> waiter.lock("alpha").acquire(Duration.ofMinutes(5)));
            SeedScenarioProcessTest.await(() -> fencer.describe("alpha").waiterSessionIds().contains(waiter.id()));

            int leader = leaderIndex();
            watching = leaderFirstClient(leader);
            List<LockEvent> events = new CopyOnWriteArrayList<>();
            Watch watch = watching.watch("", events::add); // on the first endpoint: the leader about to freeze
            SeedScenarioProcessTest.await(() -> watch.position().revision() > 0);
            FencingToken beacon = holder.lock("beacon").tryAcquire().orElseThrow().token();
            SeedScenarioProcessTest.await(() -> tokens(events, LockEvent.Kind.GRANTED).contains(beacon));

            peers.get(leader).pause();
            try (FencerClient direct = Fencer.newBuilder().endpoints(ports.get(leader).endpoint())
                    .callTimeout(Duration.ofSeconds(2)).build()) {
                assertThatThrownBy(() -> direct.describe("alpha")).as("the frozen leader answers nothing")
                        .isInstanceOf(UnavailableException.class);
            }
            SeedScenarioProcessTest.await(() -> leaderIndexOrMinusOne(leader) >= 0);
            SeedScenarioProcessTest.await(() -> statusOrNull(fencer, held) == TokenStatus.Status.CURRENT);
            held.close();
            long releasedAt = System.nanoTime();
            SeedScenarioProcessTest.await(() -> tokens(events, LockEvent.Kind.RELEASED).contains(held.token()));
            System.out.printf("the watch begun on the frozen leader heard the release %d ms after it%n",
                    (System.nanoTime() - releasedAt) / 1_000_000);

            Grant next = waiting.get(60, TimeUnit.SECONDS);
            long heardAfterMillis = (System.nanoTime() - releasedAt) / 1_000_000;
            System.out.printf("the waiter heard its grant %d ms after the release at the new leader%n",
                    heardAfterMillis);
            assertThat(next.token().value()).isGreaterThan(held.token().value());
            assertThat(fencer.validate(next.token()).status()).isEqualTo(TokenStatus.Status.CURRENT);
            assertThat(waiter.isAlive()).isTrue();
            SeedScenarioProcessTest.await(() -> tokens(events, LockEvent.Kind.GRANTED).contains(next.token()));
            next.close();
            watch.close();
        }
    }

    private static List<FencingToken> tokens(List<LockEvent> events, LockEvent.Kind kind) {
        return events.stream().filter(e -> e.kind() == kind).map(LockEvent::token).toList();
    }

    /** A client whose first endpoint, where its watches begin, is peer {@code first}'s. */
    private FencerClient leaderFirstClient(int first) {
        List<String> endpoints = new ArrayList<>();
        endpoints.add(ports.get(first).endpoint());
        for (int i = 0; i < ports.size(); i++) {
            if (i != first) {
                endpoints.add(ports.get(i).endpoint());
            }
        }
        return Fencer.newBuilder().endpoints(endpoints.toArray(String[]::new)).callTimeout(Duration.ofSeconds(30))
                .build();
    }

    private static TokenStatus.Status statusOrNull(FencerClient fencer, Grant grant) {
        try {
            return fencer.validate(grant.token()).status();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Starts the group and returns a client of all three peers. */
    private FencerClient startGroupAndConnect() throws Exception {
        startGroup();
        String[] endpoints = ports.stream().map(FencerProcess.Ports::endpoint).toArray(String[]::new);
        return Fencer.newBuilder().endpoints(endpoints).callTimeout(Duration.ofSeconds(30)).build();
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
                    "--raft-secret-file", dir.resolve("raft.secret").toString())); // made by whichever starts first
        }
        for (int i = 0; i < 3; i++) {
            peers.get(i).awaitHealthy(ports.get(i).admin());
        }
    }

    private int leaderIndex() {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            int leader = leaderIndexOrMinusOne(-1);
            if (leader >= 0) {
                return leader;
            }
            FencerProcess.pause(100);
        }
        throw new AssertionError("no leader within 60 s");
    }

    private int leaderIndexOrMinusOne(int excluded) {
        for (int i = 0; i < peers.size(); i++) {
            if (i != excluded && peers.get(i).isAlive()
                    && FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\"")) {
                return i;
            }
        }
        return -1;
    }
}

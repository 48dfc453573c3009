package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.lock.LockStateMachine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A group started on the previous release, upgraded peer by peer under load to this build: the service keeps
 * granting (at most one election's pause per restart), tokens keep increasing, the group stays at the previous
 * release's format level while one peer still runs it (and a peer can go back to it), and the level is raised once
 * the last peer is upgraded. The previous release is built from its commit in this repository into {@code target/}
 * (cached there), which takes minutes: soak tier.
 */
@Tag(Soak.TAG)
@Isolated
class RollingUpgradeProcessTest {
    /**
     * The previous release: the last commit before format levels, whose peers read level 4 and refuse the question
     * of levels. A commit, not a tag: every clone of the main branch has it, and tags do not travel with it.
     */
    static final String PREVIOUS_RELEASE = "bd7f38ceb9d26ea36dcee305d0d6574283a9e5c8";
    private static final String LOCK = "orders";
    /** The longest pause of grants a restart may cause: an election, and the clients' reconnection, on 2 cores. */
    private static final Duration PAUSE_MAX = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    private final List<FencerProcess> processes = new ArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();
    private final FencerProcess[] peers = new FencerProcess[3];
    private String group;

    @AfterEach
    void stop() {
        processes.forEach(FencerProcess::close);
    }

    @Test
    void upgradePeerByPeer_underLoad_keepsGrantingMonotonicTokensAndRaisesTheLevelAfterTheLast() throws Exception {
        Path previous = PreviousRelease.jar(PREVIOUS_RELEASE);
        startGroup(previous);
        String[] endpoints = ports.stream().map(FencerProcess.Ports::endpoint).toArray(String[]::new);
        try (FencerClient fencer = Fencer.newBuilder().endpoints(endpoints).callTimeout(Duration.ofSeconds(30))
                .build()) {
            Load load = new Load(fencer);
            load.start();
            load.awaitGrants(20);

            upgrade(0);
            assertThat(levelOf(0)).as("one peer new, two old").isEqualTo(LockStateMachine.FORMAT_LEVEL_PREVIOUS);
            downgrade(0, previous); // the previous release still reads everything the group wrote
            upgrade(0);
            upgrade(1);
            load.awaitGrants(load.count() + 20);
            assertThat(levelOf(0)).as("one peer still old").isEqualTo(LockStateMachine.FORMAT_LEVEL_PREVIOUS);
            upgrade(2);
            SeedScenarioProcessTest.await(() -> levelOrZero(0) == LockStateMachine.FORMAT_LEVEL
                    && levelOrZero(1) == LockStateMachine.FORMAT_LEVEL && levelOrZero(2) == LockStateMachine.FORMAT_LEVEL);
            load.awaitGrants(load.count() + 20);
            load.stop();

            assertThat(load.failures).as("grants that failed for good").isEmpty();
            assertThat(load.tokens).as("tokens strictly increase").isSorted().doesNotHaveDuplicates();
            assertThat(load.longestPause()).as("the longest pause of grants").isLessThan(PAUSE_MAX);
            System.out.printf("rolling upgrade: %d grants, longest pause %d ms%n", load.tokens.size(),
                    load.longestPause().toMillis());
        }
    }

    private void startGroup(Path jar) throws IOException {
        StringBuilder names = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            names.append(i == 0 ? "" : ",").append("n").append(i + 1).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
        }
        group = names.toString();
        for (int i = 0; i < 3; i++) {
            peers[i] = track(FencerProcess.serverOfRelease(jar, "n" + (i + 1) + "-old", data(i), ports.get(i),
                    arguments(i)));
        }
        for (int i = 0; i < 3; i++) {
            peers[i].awaitHealthy(ports.get(i).admin());
        }
    }

    /** Stops peer {@code i} (SIGTERM) and starts this build on its data directory. */
    private void upgrade(int i) throws IOException {
        assertThat(peers[i].terminate(Duration.ofSeconds(30))).as("exit of peer %d", i).isNotEqualTo(-1);
        peers[i] = track(FencerProcess.server("n" + (i + 1) + "-new-" + processes.size(), data(i), ports.get(i),
                arguments(i)));
        peers[i].awaitHealthy(ports.get(i).admin());
    }

    private void downgrade(int i, Path jar) throws IOException {
        peers[i].terminate(Duration.ofSeconds(30));
        peers[i] = track(FencerProcess.serverOfRelease(jar, "n" + (i + 1) + "-back-" + processes.size(), data(i),
                ports.get(i), arguments(i)));
        peers[i].awaitHealthy(ports.get(i).admin());
    }

    private String[] arguments(int i) {
        return new String[] {"--id", "n" + (i + 1), "--peers", group, "--raft-secret-file",
            dir.resolve("group.secret").toString()};
    }

    private Path data(int i) {
        return dir.resolve("n" + (i + 1));
    }

    private int levelOf(int i) {
        try (FencerClient peer = Fencer.newBuilder().endpoints(ports.get(i).endpoint())
                .callTimeout(Duration.ofSeconds(10)).build()) {
            return peer.status().groupFormatLevel();
        }
    }

    private int levelOrZero(int i) {
        try {
            return levelOf(i);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    private FencerProcess track(FencerProcess process) {
        processes.add(process);
        return process;
    }

    /** One client acquiring and releasing {@link #LOCK} in a loop, recording every token and every pause. */
    private static final class Load implements Runnable {
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        final List<Long> grantNanos = new CopyOnWriteArrayList<>();
        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        private final FencerClient fencer;
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread = new Thread(this, "upgrade-load");

        Load(FencerClient fencer) {
            this.fencer = fencer;
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            Session session = null;
            while (running.get()) {
                try {
                    if (session == null || !session.isAlive()) {
                        session = fencer.openSession(Duration.ofSeconds(15));
                    }
                    try (Grant grant = session.lock(LOCK).acquire(Duration.ofSeconds(30))) {
                        tokens.add(grant.token().value());
                        grantNanos.add(System.nanoTime());
                    }
                } catch (RuntimeException e) {
                    if (!(e instanceof io.fencer.core.UnavailableException)
                            && !(e instanceof io.fencer.core.SessionExpiredException)) {
                        failures.add(e);
                    }
                }
            }
        }

        int count() {
            return tokens.size();
        }

        void awaitGrants(int count) {
            SeedScenarioProcessTest.await(() -> tokens.size() >= count);
        }

        Duration longestPause() {
            long longest = 0;
            for (int i = 1; i < grantNanos.size(); i++) {
                longest = Math.max(longest, grantNanos.get(i) - grantNanos.get(i - 1));
            }
            return Duration.ofNanos(longest);
        }

        void stop() throws InterruptedException {
            running.set(false);
            thread.join(TimeUnit.SECONDS.toMillis(60));
        }
    }
}

package io.fencer.chaos.bench;

import io.fencer.chaos.process.Cluster;
import io.fencer.chaos.process.Launcher;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * {@code fencer bench failover}: the failover pause of a group of lock peers, measured with real processes. It
 * starts the peers, runs an acquire → release loop on one lock through one session, and, round after round, kills
 * the leader with SIGKILL, measures the time from the kill until a new leader is known and until the loop's next
 * grant, then restarts the killed peer from its data and waits until it has caught up.
 */
public final class FailoverBench {
    /** How long the loop must have been granting, without a failure, before a round kills the leader. */
    static final Duration STEADY_BEFORE_KILL = Duration.ofSeconds(1);
    /** How long a round waits for a new leader and for the next grant before it gives up on them. */
    static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(60);
    /** How long a restarted peer may take to start and catch up with the leader. */
    static final Duration CATCH_UP_TIMEOUT = Duration.ofSeconds(90);
    private static final String LOCK = "bench-failover";
    private static final long POLL_MILLIS = 10;

    private final Settings settings;
    private final Cluster cluster;
    private final Consumer<Round> progress;

    /**
     * What to measure.
     *
     * @param peers lock peers: 3 or 5
     * @param kills leader kills, one a round: 1 to {@link #KILLS_MAX}
     * @param ttl the loop's session lease: 1 s to 1 h
     */
    public record Settings(int peers, int kills, Duration ttl) {
        public static final int KILLS_MAX = 100;
        public static final Duration TTL_MIN = Duration.ofSeconds(1);
        public static final Duration TTL_MAX = Duration.ofHours(1);

        public Settings {
            Objects.requireNonNull(ttl, "ttl");
            if (peers != 3 && peers != 5) {
                throw new IllegalArgumentException("peers must be 3 or 5, not " + peers);
            }
            if (kills < 1 || kills > KILLS_MAX) {
                throw new IllegalArgumentException("kills " + kills + " is outside [1, " + KILLS_MAX + "]");
            }
            if (ttl.compareTo(TTL_MIN) < 0 || ttl.compareTo(TTL_MAX) > 0) {
                throw new IllegalArgumentException("ttl " + ttl.toMillis() + " ms is outside [" + TTL_MIN.toMillis()
                        + " ms, " + TTL_MAX.toMillis() + " ms]");
            }
        }
    }

    /**
     * One leader kill.
     *
     * @param number the round, from 1
     * @param killedPeer the killed leader's name ({@code lock-n2})
     * @param leaderKnownMillis from the kill until a survivor's {@code /healthz} said it leads; -1 when none did
     *     within {@link #FAILOVER_TIMEOUT}
     * @param pauseMillis from the kill until the loop's first grant answered after the killed leader was gone; -1
     *     when none came within {@link #FAILOVER_TIMEOUT}
     * @param failedCalls the loop's acquires and releases that failed from the kill to that grant
     * @param sessionsLost the loop's sessions lost in this round (with a ttl well above the pause: 0)
     * @param caughtUp whether the restarted peer applied the log as far as the leader within
     *     {@link #CATCH_UP_TIMEOUT}
     */
    public record Round(int number, String killedPeer, long leaderKnownMillis, long pauseMillis, int failedCalls,
            int sessionsLost, boolean caughtUp) {
        /** Returns whether the round measured a pause. */
        public boolean measured() {
            return pauseMillis >= 0;
        }
    }

    /**
     * The outcome of a run.
     *
     * @param settings what was measured
     * @param rounds every round, in order
     * @param processIds the process ids of every lock server the run started (restarts included): none runs once
     *     the run is over
     */
    public record Result(Settings settings, List<Round> rounds, List<Long> processIds) {
        public Result {
            rounds = List.copyOf(rounds);
            processIds = List.copyOf(processIds);
        }

        /** Returns the measured pauses, in round order. */
        public List<Long> pausesMillis() {
            return rounds.stream().filter(Round::measured).map(Round::pauseMillis).toList();
        }

        /** Returns the times until a new leader was known, in round order (the rounds where one was). */
        public List<Long> leaderKnownMillis() {
            return rounds.stream().filter(round -> round.leaderKnownMillis() >= 0).map(Round::leaderKnownMillis)
                    .toList();
        }

        /** Returns the median pause (the mean of the middle two for an even count); -1 when none was measured. */
        public long medianPauseMillis() {
            return median(pausesMillis());
        }

        /** Returns the median time until a new leader was known; -1 when none was. */
        public long medianLeaderKnownMillis() {
            return median(leaderKnownMillis());
        }

        public long minPauseMillis() {
            return pausesMillis().stream().mapToLong(Long::longValue).min().orElse(-1);
        }

        public long maxPauseMillis() {
            return pausesMillis().stream().mapToLong(Long::longValue).max().orElse(-1);
        }

        public int failedCalls() {
            return rounds.stream().mapToInt(Round::failedCalls).sum();
        }

        public int sessionsLost() {
            return rounds.stream().mapToInt(Round::sessionsLost).sum();
        }

        /** Returns whether every round measured a pause and saw the killed peer catch up. */
        public boolean complete() {
            return rounds.size() == settings.kills()
                    && rounds.stream().allMatch(round -> round.measured() && round.caughtUp());
        }
    }

    private FailoverBench(Settings settings, Cluster cluster, Consumer<Round> progress) {
        this.settings = settings;
        this.cluster = cluster;
        this.progress = progress;
    }

    /** Returns the median of {@code values}: the mean of the middle two for an even count; -1 when empty. */
    static long median(List<Long> values) {
        if (values.isEmpty()) {
            return -1;
        }
        List<Long> sorted = values.stream().sorted().toList();
        int middle = sorted.size() / 2;
        return sorted.size() % 2 == 1 ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
    }

    /**
     * Runs the bench: peers started with {@code launcher} in a new temporary directory (removed at the end), every
     * one of them killed when the run ends, also when this JVM is stopped (a shutdown hook). Each round is passed
     * to {@code progress} as soon as it is done.
     */
    public static Result run(Settings settings, Launcher launcher, Consumer<Round> progress) throws IOException {
        Path directory = Files.createTempDirectory("fencer-failover-");
        Cluster cluster = Cluster.lockGroup(launcher, directory, settings.peers());
        Thread hook = new Thread(() -> cleanUp(cluster, directory), "fencer-failover-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            cluster.start();
            return new FailoverBench(settings, cluster, progress).rounds();
        } finally {
            cleanUp(cluster, directory);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs or ran: it cleans up the same way
            }
        }
    }

    private Result rounds() {
        List<Round> rounds = new ArrayList<>();
        try (FencerClient client = Fencer.newBuilder().endpoints(cluster.lockEndpoints().toArray(String[]::new))
                .build();
             GrantLoop loop = GrantLoop.start(client, settings.ttl(), LOCK)) {
            for (int number = 1; number <= settings.kills(); number++) {
                Round round = round(number, loop);
                rounds.add(round);
                progress.accept(round);
            }
        }
        return new Result(settings, rounds, cluster.lockProcessIds());
    }

    private Round round(int number, GrantLoop loop) {
        awaitOrThrow(() -> cluster.lockGroupWhole() && loop.grantingFor(STEADY_BEFORE_KILL)
                        && cluster.reportedLockLeader() != null, CATCH_UP_TIMEOUT,
                () -> "round " + number + ": the group did not become whole with the loop granting; last failure: "
                        + loop.lastFailure());
        String victim = cluster.reportedLockLeader();
        int sessionsLostBefore = loop.sessionsLost();
        long killNanos = System.nanoTime();
        cluster.killLock(victim);
        long goneNanos = System.nanoTime();
        long leaderKnownMillis = awaitNewLeader(killNanos);
        await(() -> loop.firstGrantAfter(goneNanos) != null, remaining(killNanos));
        FailoverPause pause = FailoverPause.of(killNanos, goneNanos, loop.eventsSince(killNanos));
        boolean caughtUp = restartAndCatchUp(victim);
        loop.forgetBefore(goneNanos);
        return new Round(number, victim, leaderKnownMillis, pause.pauseMillis(), pause.failedCalls(),
                loop.sessionsLost() - sessionsLostBefore, caughtUp);
    }

    /** Polls the survivors until one says it leads; returns the time from the kill, or -1 after the timeout. */
    private long awaitNewLeader(long killNanos) {
        long deadline = killNanos + FAILOVER_TIMEOUT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (cluster.reportedLockLeader() != null) {
                return (System.nanoTime() - killNanos) / 1_000_000;
            }
            pause(POLL_MILLIS);
        }
        return -1;
    }

    private static Duration remaining(long killNanos) {
        return Duration.ofNanos(Math.max(0, killNanos + FAILOVER_TIMEOUT.toNanos() - System.nanoTime()));
    }

    /**
     * Starts the killed peer again on its data and ports, and waits until it has applied the log as far as the
     * leader had when the restarted peer first answered; returns whether it did within {@link #CATCH_UP_TIMEOUT}.
     */
    private boolean restartAndCatchUp(String victim) {
        try {
            cluster.restartLock(victim);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot restart " + victim, e);
        }
        cluster.awaitLockHealthy(victim);
        long[] target = {-1};
        return await(() -> {
            if (target[0] < 0) {
                String leader = cluster.reportedLockLeader();
                target[0] = leader == null ? -1 : cluster.appliedIndex(leader);
            }
            return target[0] >= 0 && cluster.appliedIndex(victim) >= target[0];
        }, CATCH_UP_TIMEOUT);
    }

    /** Waits until {@code condition} holds; returns false when {@code timeout} passed first. */
    private static boolean await(BooleanSupplier condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            pause(POLL_MILLIS);
        }
        return true;
    }

    private static void awaitOrThrow(BooleanSupplier condition, Duration timeout,
            Supplier<String> failure) {
        if (!await(condition, timeout)) {
            throw new IllegalStateException(failure.get());
        }
    }

    private static void cleanUp(Cluster cluster, Path directory) {
        cluster.close();
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            // left behind in the temporary directory: nothing runs from it any more
        }
    }

    /** Sleeps {@code millis} (nothing when not positive); an interrupt ends the sleep and stays set. */
    static void pause(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

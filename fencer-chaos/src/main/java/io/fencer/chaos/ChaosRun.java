package io.fencer.chaos;

import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Checker;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.fault.FaultSchedule;
import io.fencer.chaos.fault.MembershipFaults;
import io.fencer.chaos.fault.MembershipPlan;
import io.fencer.chaos.fault.NetworkFaults;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.process.Cluster;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.process.Network;
import io.fencer.chaos.process.WorkerHandle;
import io.fencer.chaos.workload.Worker;
import io.fencer.chaos.workload.WorkerArguments;
import io.fencer.chaos.workload.WorkerOptions;
import io.fencer.chaos.workload.Workload;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.StoreValue;
import io.fencer.core.SkewedTicker;
import io.fencer.core.internal.PermitSlots;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One chaos run: starts the servers and the workers as real processes, injects the faults its seed schedules, stops the
 * workers, reads the final state, merges the histories and checks them.
 *
 * <p>Files under the run's directory: {@code history.jsonl} (the merged history), {@code workers/} (each
 * worker's own history), {@code logs/} (every process's standard error) and {@code servers/} (data directories).
 */
public final class ChaosRun {
    /** The lock the workers share (the store scope has the same name), or the semaphore of the semaphore workload. */
    static final String LOCK = "chaos";
    private static final Duration PAUSE_ARM_WAIT = Duration.ofSeconds(10);
    /** The longest a pause is held past its schedule for another worker's write (see PauseHold). */
    private static final Duration PAUSE_HOLD_MAX = Duration.ofSeconds(20);
    private static final Duration WORKER_STOP_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration FINAL_READ_TIMEOUT = Duration.ofSeconds(60);
    /** The JVM option that switches a lock peer's lease fix off (test only; see {@link ChaosOptions}). */
    static final String UNSAFE_LEASE_ACK_OPTION = "-Dfencer.testing.unsafeLeaseAck=true";

    private final ChaosOptions options;
    private final Launcher launcher;
    private final PrintStream out;
    private final List<Fault> schedule;
    private final long originNanos = System.nanoTime();
    private final List<WorkerHandle> workers = new ArrayList<>();
    /** The run's network hosts when it has network faults; else null (every process on the loopback). */
    private Network network;
    /** How many spare lock peers the membership faults may start (0 without them). */
    private final int sparesMax;
    /** The membership faults' state while the cluster runs; null without them. */
    private MembershipFaults membership;
    /** Where the lock peers and workers read their clocks from (clock faults), or null: the host's clock. */
    private final Path clocks;
    /** The total forward jump of each clock so far, by its file's name. */
    private final Map<String, Long> clockJumps = new HashMap<>();

    private ChaosRun(ChaosOptions options, Launcher launcher, PrintStream out) {
        this.clocks = options.clockFaults() ? options.directory().resolve("clocks") : null;
        this.options = options;
        this.launcher = launcher;
        this.out = out;
        this.schedule = FaultSchedule.plan(options.seed(), options.faults(), options.partitions(), options.workers(),
                options.peers(), options.duration(), options.ttl(), options.faultInterval());
        this.sparesMax = options.faults().contains(Fault.Kind.MEMBERSHIP) ? MembershipPlan.sparesMax(
                schedule.stream().filter(fault -> fault.kind() == Fault.Kind.MEMBERSHIP).count()) : 0;
    }

    /**
     * What a run produced.
     *
     * @param membershipChanges the membership changes the harness completed (adds, promotes, removes); the
     *     history's count, {@code membership_changes} of the result's counts, must agree
     * @param membershipRefused the membership changes the group refused (each retried later, none counted above)
     */
    public record Outcome(CheckResult result, List<Fault> schedule, Path history, int membershipChanges,
            int membershipRefused) {
    }

    /**
     * Runs the chaos described by {@code options}, starting processes with {@code launcher} and narrating on
     * {@code out}.
     */
    public static Outcome run(ChaosOptions options, Launcher launcher, PrintStream out)
            throws IOException, InterruptedException {
        return new ChaosRun(options, launcher, out).run();
    }

    private Outcome run() throws IOException, InterruptedException {
        if (options.networkFaults()) {
            Network.requireAvailable(); // before anything starts: a run that cannot cut the network must not pass
        }
        Path directory = options.directory();
        Files.createDirectories(directory.resolve("workers"));
        if (clocks != null) {
            Files.createDirectories(clocks);
        }
        printPlan();
        List<HistoryEvent> history;
        try (NetworkScope scope = new NetworkScope(options.networkFaults() ? Network.create(hostNames()) : null);
             HistoryLog nemesis = HistoryLog.open(directory.resolve("workers").resolve("nemesis.jsonl"),
                "nemesis", originNanos);
             Cluster cluster = cluster(directory.resolve("servers"), scope.network)) {
            network = scope.network;
            if (network != null) {
                out.println(network + ": namespaces " + String.join(", ", network.namespaces()));
            }
            cluster.launch();
            try {
                // the workers' JVMs start while the servers elect (a worker retries until its session opens):
                // start-up, not the workload, was most of a short run
                startWorkers(cluster, nemesis);
                cluster.awaitStarted();
                out.println("servers up: lock " + String.join(",", cluster.lockEndpoints()) + ", store "
                        + cluster.storeEndpoint() + " (" + elapsed() + ")");
                startMembership(cluster, nemesis);
                awaitWorkersReady();
                long startNanos = System.nanoTime();
                for (Fault fault : schedule) {
                    sleepUntil(startNanos, fault.atMillis());
                    inject(fault, cluster, nemesis);
                }
                sleepUntil(startNanos, options.duration().toMillis());
                workers.forEach(WorkerHandle::requestStop);
                for (WorkerHandle worker : workers) {
                    worker.awaitStop(WORKER_STOP_TIMEOUT);
                }
                out.println("workers stopped (" + elapsed() + ")");
            } finally {
                workers.forEach(WorkerHandle::close);
            }
            cluster.awaitStore();
            finalRead(cluster.storeEndpoint(), nemesis);
        }
        history = mergeHistories(directory.resolve("workers"));
        Path historyFile = directory.resolve("history.jsonl");
        HistoryJson.write(historyFile, history);
        CheckResult result = Checker.check(history, options.workload(), options.permits());
        ChaosReports.write(options, schedule, history, result, historyFile);
        ChaosReports.print(out, options, result, historyFile);
        return membership == null ? new Outcome(result, schedule, historyFile, 0, 0)
                : new Outcome(result, schedule, historyFile, membership.plan().completedCount(),
                        membership.plan().refusedCount());
    }

    private Cluster cluster(Path servers, Network runNetwork) {
        List<String> lockJvmOptions = options.unsafeLeaseAck() ? List.of(UNSAFE_LEASE_ACK_OPTION) : List.of();
        return options.replicatedStore()
                ? Cluster.withReplicatedStore(launcher, servers, options.peers(), runNetwork, lockJvmOptions, clocks)
                : new Cluster(launcher, servers, options.peers(), runNetwork, lockJvmOptions, clocks);
    }

    /**
     * Sets up the membership faults, when the run has them, and starts the first spare peer ahead of its add. A
     * spare waits to be added past the run's end, so the last one started is still waiting when the run stops.
     */
    private void startMembership(Cluster cluster, HistoryLog nemesis) {
        if (sparesMax == 0) {
            return;
        }
        MembershipPlan plan = new MembershipPlan(options.seed(), cluster.lockHostNames());
        Duration joinWait = options.duration().plus(Duration.ofMinutes(5));
        membership = new MembershipFaults(plan, cluster, nemesis, out, joinWait, sparesMax);
        membership.prepare();
    }

    /** Closes the network (when there is one) after everything that ran on it. */
    private record NetworkScope(Network network) implements AutoCloseable {
        @Override
        public void close() {
            if (network != null) {
                network.close();
            }
        }
    }

    /** Returns the network host of every process: the lock peers, the store, the workers. */
    private List<String> hostNames() {
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= options.peers() + sparesMax; i++) {
            names.add("n" + i); // the spare peers the membership faults may start, after the founders
        }
        if (!options.replicatedStore()) {
            names.add(Cluster.STORE);
        }
        for (int i = 1; i <= options.workers(); i++) {
            names.add("w" + i);
        }
        return names;
    }

    private void printPlan() {
        out.printf(Locale.ROOT, "fencer chaos: seed %d, %d workers, %s%s, %s, %d peer%s, fencing %s%n",
                options.seed(), options.workers(), options.workload().name().toLowerCase(Locale.ROOT),
                options.workload() == Workload.SEMAPHORE ? " of " + options.permits() + " permits" : "",
                ChaosReports.seconds(options.duration()), options.peers(), options.peers() == 1 ? "" : "s",
                options.fencing() ? "on" : "OFF (control)");
        if (options.replicatedStore()) {
            out.println("store: the peers' replicated store (kill-store kills the group's leader)");
        }
        out.println("fault schedule (replay with --seed " + options.seed() + "):");
        if (schedule.isEmpty()) {
            out.println("  (none)");
        }
        for (Fault fault : schedule) {
            out.println("  " + fault);
        }
        out.flush();
    }

    private void startWorkers(Cluster cluster, HistoryLog nemesis) throws IOException {
        for (int i = 1; i <= options.workers(); i++) {
            String id = "w" + i;
            Path historyFile = options.directory().resolve("workers").resolve(id + ".jsonl");
            int number = i;
            Launcher clocked = clocks == null ? launcher
                    : launcher.withJvmOptions(List.of(Cluster.clockOption(clocks.resolve(id))));
            Launcher workerLauncher = network == null ? clocked : network.launcherOn(id, clocked);
            workers.add(new WorkerHandle(id, historyFile, workerLauncher, options.directory().resolve("logs"),
                    nemesis, incarnation -> workerArguments(cluster, id, historyFile, number, incarnation)));
        }
        for (WorkerHandle worker : workers) {
            worker.start();
        }
    }

    private void awaitWorkersReady() {
        for (WorkerHandle worker : workers) {
            worker.awaitReady();
        }
        out.println(options.workers() + " workers ready (" + elapsed() + ")");
        out.flush();
    }

    private List<String> workerArguments(Cluster cluster, String id, Path historyFile, int number,
            int incarnation) {
        // each worker, and each restart of it, thinks to its own sequence, fixed by the run's seed
        long seed = options.seed() * 31 + number * 1_000_003L + incarnation;
        return WorkerArguments.workerCommand(new WorkerOptions(id, cluster.lockEndpoints(), cluster.storeEndpoint(),
                LOCK, options.workload(), options.thinkMax(), options.ttl(), options.fencing(), historyFile,
                originNanos, seed, options.workload() == Workload.SEMAPHORE ? options.permits() : 1,
                options.replicatedStore()));
    }

    private void inject(Fault fault, Cluster cluster, HistoryLog nemesis) throws IOException, InterruptedException {
        out.println("  fault " + fault);
        out.flush();
        switch (fault.kind()) {
            case PAUSE -> {
                WorkerHandle worker = workers.get(fault.worker() - 1);
                if (!worker.pauseAfterNextRead(PAUSE_ARM_WAIT)) {
                    out.println("    " + worker.id + " read nothing within " + PAUSE_ARM_WAIT.toSeconds()
                            + " s: frozen where it was");
                    out.flush();
                }
                Thread.sleep(fault.durationMillis());
                PauseHold.untilAnotherWrote(worker, workers, PAUSE_HOLD_MAX, out);
                worker.resume();
            }
            case KILL_WORKER -> {
                WorkerHandle worker = workers.get(fault.worker() - 1);
                worker.kill();
                Thread.sleep(fault.durationMillis());
                worker.start();
                nemesis.info(Op.RESTART, worker.id);
            }
            case KILL_STORE -> {
                String leader = cluster.replicatedStore() ? cluster.reportedLockLeader() : null;
                String victim = cluster.killStore();
                recordKill(nemesis, victim, leader);
                Thread.sleep(fault.durationMillis());
                cluster.restartStore(victim);
                nemesis.info(Op.RESTART, victim);
            }
            case KILL_LOCK -> {
                String leader = cluster.replicatedStore() ? cluster.reportedLockLeader() : null;
                String victim = cluster.killLockLeader();
                recordKill(nemesis, victim, leader);
                Thread.sleep(fault.durationMillis());
                cluster.restartLock(victim);
                nemesis.info(Op.RESTART, victim);
            }
            case PARTITION -> NetworkFaults.partition(fault, network, cluster, nemesis, this::lastReader,
                    workers.stream().map(worker -> worker.id).toList());
            case FLAKY -> NetworkFaults.flaky(fault, network, cluster, nemesis);
            case MEMBERSHIP -> membership.change();
            case CLOCK -> {
                skewClock(fault, cluster, nemesis);
                Thread.sleep(fault.durationMillis());
            }
        }
    }

    /**
     * Makes the clock of the fault's target go wrong for the rest of the run: a worker's runs slow by the run's
     * drift; the lock leader's jumps forward by the run's jump and runs fast by the drift. Both are the directions
     * in which a holder can believe in its lease after its session ended on the leader.
     */
    private void skewClock(Fault fault, Cluster cluster, HistoryLog nemesis) throws IOException {
        boolean worker = fault.worker() > 0;
        String name = worker ? workers.get(fault.worker() - 1).id : cluster.leaderHostName();
        long jumpNanos = worker ? 0 : options.clockJump().toNanos();
        double rate = worker ? 1 - options.clockDrift() : 1 + options.clockDrift();
        long totalJumpNanos = clockJumps.merge(name, jumpNanos, Long::sum);
        SkewedTicker.write(clocks.resolve(name), totalJumpNanos, rate);
        nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), Type.INFO, Op.CLOCK)
                .withTarget(worker ? name : "lock-" + name).withValue(String.format(Locale.ROOT,
                        "rate %.4f, jumped %d ms (%d ms in all)", rate, jumpNanos / 1_000_000,
                        totalJumpNanos / 1_000_000)));
    }

    /**
     * Records the kill of {@code victim}; with the replicated store, a victim that said it led just before
     * ({@code leader}) is marked {@link HistoryEvent#STORE_LEADER}: its kill is a failover of the store's leader.
     */
    private static void recordKill(HistoryLog nemesis, String victim, String leader) {
        HistoryEvent kill = HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), Type.INFO, Op.KILL)
                .withTarget(victim);
        nemesis.append(victim.equals(leader) ? kill.withValue(HistoryEvent.STORE_LEADER) : kill);
    }

    /** Returns the worker that last read under a grant: the lock's holder, most likely. */
    private String lastReader() {
        WorkerHandle last = workers.get(0);
        for (WorkerHandle worker : workers) {
            if (worker.lastReadNanos() != 0 && worker.lastReadNanos() - last.lastReadNanos() > 0) {
                last = worker;
            }
        }
        return last.id;
    }

    /**
     * Reads the counter or the set once every worker has stopped, retrying while the store comes back; for the
     * semaphore workload, every slot's counter (each final read's target names its slot).
     */
    private void finalRead(String storeEndpoint, HistoryLog nemesis) {
        if (options.workload() != Workload.SEMAPHORE) {
            finalRead(storeEndpoint, nemesis, LOCK, "");
            return;
        }
        for (int permit = 0; permit < options.permits(); permit++) {
            String slot = PermitSlots.slotName(LOCK, permit);
            finalRead(storeEndpoint, nemesis, slot, slot);
        }
    }

    private void finalRead(String storeEndpoint, HistoryLog nemesis, String scope, String slot) {
        String key = options.workload() == Workload.SET ? Worker.SET_KEY : Worker.COUNTER_KEY;
        long deadline = System.nanoTime() + FINAL_READ_TIMEOUT.toNanos();
        try (FencedStore store = Fencer.store(storeEndpoint)) {
            while (true) {
                try {
                    StoreValue value = store.get(scope, key);
                    String text = value.present() ? value.valueUtf8()
                            : options.workload() == Workload.SET ? "" : "0";
                    nemesis.append(HistoryEvent.of(nemesis.nowMicros(), "final", Type.OK, Op.FINAL_READ)
                            .withToken(value.writtenBy()).withValue(text).withTarget(slot));
                    return;
                } catch (RuntimeException e) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("the final read failed for " + FINAL_READ_TIMEOUT, e);
                    }
                    Worker.pause(200);
                }
            }
        }
    }

    /** Merges the harness's and the workers' histories into one, ordered by time (stable for equal times). */
    static List<HistoryEvent> mergeHistories(Path directory) throws IOException {
        List<HistoryEvent> merged = new ArrayList<>();
        try (var files = Files.list(directory)) {
            for (Path file : files.filter(path -> path.toString().endsWith(".jsonl")).sorted().toList()) {
                merged.addAll(HistoryJson.read(file));
            }
        }
        merged.sort(Comparator.comparingLong(HistoryEvent::timeMicros));
        return merged;
    }

    /**
     * Returns the time since the run began, for the narration: start-up and wind-down are most of a short run's
     * time, and the narration shows how much.
     */
    private String elapsed() {
        return String.format(Locale.ROOT, "%.1f s in", (System.nanoTime() - originNanos) / 1e9);
    }

    private static void sleepUntil(long startNanos, long offsetMillis) throws InterruptedException {
        long remainingNanos = startNanos + offsetMillis * 1_000_000 - System.nanoTime();
        if (remainingNanos > 0) {
            Thread.sleep(remainingNanos / 1_000_000, (int) (remainingNanos % 1_000_000));
        }
    }
}

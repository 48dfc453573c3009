package io.fencer.cli;

import io.fencer.chaos.ChaosOptions;
import io.fencer.chaos.ChaosRun;
import io.fencer.chaos.fault.Fault;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.workload.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer chaos}: real server and worker processes, faults from a seed, a recorded history and a checker;
 * exit 0 when the checker found no violation, {@link Main#EXIT_VIOLATIONS} when it found some.
 */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "chaos", mixinStandardHelpOptions = true,
        description = {"Proves fencing with real processes: pauses, kills, a history and a checker.",
            "Starts a lock server (or --peers of them) and a store server as processes, then --workers "
                + "worker processes sharing one lock; freezes workers past their lease (SIGSTOP), kills the store, the "
                + "lock leader and workers (SIGKILL) on a schedule drawn from --seed; records every operation; checks "
                + "that tokens never decrease in the store, that no acknowledged write or increment is lost.",
            "--no-fencing is the control: the same run with writes that carry no meaningful token, which the "
                + "checker must fail.",
            "Network faults (partition, flaky) put every process on its own network namespace and need root.",
            "The membership fault (--peers 3 or 5) changes the lock group's members with the operator's Peers "
                + "calls, one change at a time: starts a spare peer with --join, adds it as a learner and promotes "
                + "it once caught up; next time removes a voter (a follower, or the leader) and kills it for good. "
                + "A change the group refuses is retried later; completed ones are counted (membership_changes)."})
final class ChaosCommand implements Callable<Integer> {
    @Option(names = "--workers", paramLabel = "N", defaultValue = "5",
            description = "Worker processes (default: ${DEFAULT-VALUE}).")
    int workers;

    @Option(names = "--workload", paramLabel = "KIND", defaultValue = "counter",
            description = "counter, set or semaphore (default: ${DEFAULT-VALUE}).")
    String workload;

    /** The semaphore workload's permits; null when not given (the default, 2). */
    @Option(names = "--permits", paramLabel = "N",
            description = "Semaphore workload: permits of the one semaphore, 1 to workers - 1 (default: 2).")
    Integer permits;

    @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "60s", converter = Durations.Converter.class,
            description = "How long the workload runs (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--seed", paramLabel = "N", description = "Seed of the fault schedule (default: random, printed).")
    Long seed;

    @Option(names = "--faults", paramLabel = "LIST", split = ",",
            defaultValue = "pause,kill-worker,kill-store,kill-lock",
            description = "Faults to inject: pause, kill-worker, kill-store, kill-lock, partition, flaky (these two "
                    + "need root), membership (--peers 3 or 5), clock, or none (default: ${DEFAULT-VALUE}).")
    List<String> faults;

    @Option(names = "--clock-drift", paramLabel = "PERCENT", defaultValue = "0.5%",
            description = "What a clock fault does to a clock's rate: the lock leader's runs this much fast, a "
                    + "worker's this much slow, for the rest of the run; up to 90%% (default: ${DEFAULT-VALUE}, "
                    + "within the 1%% + 5 ms per ttl the leases tolerate).")
    String clockDrift;

    @Option(names = "--clock-jump", paramLabel = "DURATION", defaultValue = "0ms",
            converter = Durations.Converter.class,
            description = "How far a clock fault makes the lock leader's clock jump forward; up to 1m "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration clockJump;

    @Option(names = "--partitions", paramLabel = "LIST", split = ",",
            defaultValue = "leader-isolated,worker-isolated,ring,leader-minority",
            description = "Partitions the partition fault draws from: leader-isolated, worker-isolated, ring, "
                    + "leader-minority (default: ${DEFAULT-VALUE}).")
    List<String> partitions;

    /**
     * Test only: starts every lock peer with {@code -Dfencer.testing.unsafeLeaseAck=true}, which switches the
     * server's lease fix off, so a test can show that the {@code lease-belief} check finds what the fix prevents.
     * Hidden: no user run should ever set it.
     */
    @Option(names = "--unsafe-lease-ack", hidden = true)
    boolean unsafeLeaseAck;

    @Option(names = "--peers", paramLabel = "N", defaultValue = "1",
            description = "Lock service peers: 1, 3 or 5 (default: ${DEFAULT-VALUE}).")
    int peers;

    @Option(names = "--store", paramLabel = "KIND", defaultValue = "separate",
            description = "The workload's store: separate (a fenced store server process, as a single-node"
                    + " deployment runs it) or replicated (the peers' replicated store, --peers 3 or 5; kill-store then"
                    + " kills the group's leader, which leads the store) (default: ${DEFAULT-VALUE}).")
    String store;

    @Option(names = "--think-max", paramLabel = "DURATION", defaultValue = "100ms",
            converter = Durations.Converter.class,
            description = "Longest think between a worker's read and its write (default: ${DEFAULT-VALUE}).")
    Duration thinkMax;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "2s", converter = Durations.Converter.class,
            description = "The workers' lease; pauses last longer (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--fault-interval", paramLabel = "DURATION", defaultValue = "3s",
            converter = Durations.Converter.class,
            description = "Mean gap between faults (default: ${DEFAULT-VALUE}).")
    Duration faultInterval;

    @Option(names = "--no-fencing", description = "The control run: workers write without meaningful tokens.")
    boolean noFencing;

    @Option(names = "--dir", paramLabel = "DIR",
            description = "Where to keep data, logs and the history (default: a new temporary directory).")
    Path directory;

    @Option(names = "--html", paramLabel = "FILE", description = "Write the timeline as a self-contained HTML page.")
    Path html;

    @Option(names = "--svg", paramLabel = "FILE", description = "Write the timeline alone as an SVG picture.")
    Path svg;

    @Option(names = "--summary", paramLabel = "FILE", description = "Write the verdict and counts as JSON.")
    Path summary;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        ChaosOptions options = options();
        ChaosRun.Outcome outcome = ChaosRun.run(options, Launcher.ofCurrentJvm(Main.class.getName()), System.out);
        return outcome.result().valid() ? Main.EXIT_OK : Main.EXIT_VIOLATIONS;
    }

    private ChaosOptions options() throws java.io.IOException {
        Workload kind = switch (workload) {
            case "counter" -> Workload.COUNTER;
            case "set" -> Workload.SET;
            case "semaphore" -> Workload.SEMAPHORE;
            default -> throw new ParameterException(spec.commandLine(),
                    "--workload must be counter, set or semaphore, not '" + workload + "'");
        };
        if (permits != null && kind != Workload.SEMAPHORE) {
            throw new ParameterException(spec.commandLine(), "--permits applies to --workload semaphore only");
        }
        int permitCount = kind != Workload.SEMAPHORE ? 1 : permits != null ? permits : ChaosOptions.PERMITS_DEFAULT;
        ChaosOptions options;
        try {
            options = new ChaosOptions(workers, kind, duration, seed != null ? seed : new SecureRandom().nextLong(),
                    faultKinds(), peers, thinkMax, ttl, faultInterval, !noFencing,
                    directory != null ? directory : Path.of("."), html, svg, summary, partitionKinds(),
                    unsafeLeaseAck, permitCount, clockDrift(), clockJump, replicatedStore());
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        // the temporary directory is made only once the settings are known to be good
        return directory != null ? options : options.withDirectory(Files.createTempDirectory("fencer-chaos-"));
    }

    /** Returns {@code --clock-drift} as a fraction: "0.5%" or "0.005". */
    private double clockDrift() {
        String text = clockDrift.strip();
        try {
            return text.endsWith("%") ? Double.parseDouble(text.substring(0, text.length() - 1).strip()) / 100
                    : Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new ParameterException(spec.commandLine(), "--clock-drift must be a percentage such as 0.5% or a "
                    + "fraction such as 0.005, not '" + clockDrift + "'");
        }
    }

    private boolean replicatedStore() {
        return switch (store.strip()) {
            case "separate" -> false;
            case "replicated" -> true;
            default -> throw new ParameterException(spec.commandLine(),
                    "--store must be separate or replicated, not '" + store + "'");
        };
    }

    private Set<Fault.Partition> partitionKinds() {
        Set<Fault.Partition> kinds = EnumSet.noneOf(Fault.Partition.class);
        for (String name : partitions) {
            try {
                kinds.add(Fault.Partition.ofFlag(name));
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        return kinds;
    }

    private Set<Fault.Kind> faultKinds() {
        Set<Fault.Kind> kinds = EnumSet.noneOf(Fault.Kind.class);
        for (String name : faults) {
            if (name.strip().equals("none")) {
                continue;
            }
            try {
                kinds.add(Fault.Kind.ofFlag(name));
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        return kinds;
    }
}

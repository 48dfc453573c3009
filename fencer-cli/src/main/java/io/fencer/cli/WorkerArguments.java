package io.fencer.cli;

import io.fencer.chaos.WorkerOptions;
import io.fencer.chaos.Workload;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/** The options the harness passes to a worker or demo client process. */
final class WorkerArguments {
    @Option(names = "--id", required = true, description = "The worker's name in the history.")
    String id;

    @Option(names = "--lock-servers", required = true, split = ",", converter = Converters.Endpoint.class,
            description = "The lock service peers.")
    List<String> lockServers;

    @Option(names = "--store", required = true, converter = Converters.Endpoint.class, description = "The store.")
    String store;

    @Option(names = "--lock", required = true, converter = Converters.LockName.class,
            description = "The shared lock, and the store scope.")
    String lock;

    @Option(names = "--workload", defaultValue = "counter", description = "counter or set.")
    String workload;

    @Option(names = "--think-max", defaultValue = "100ms", converter = Durations.Converter.class,
            description = "Longest think between read and write.")
    Duration thinkMax;

    @Option(names = "--ttl", defaultValue = "2s", converter = Durations.Converter.class,
            description = "The session's lease.")
    Duration ttl;

    @Option(names = "--history", required = true, description = "The history file to append to.")
    Path history;

    @Option(names = "--origin-nanos", required = true, description = "The run's origin on the monotonic clock.")
    long originNanos;

    @Option(names = "--seed", defaultValue = "0", description = "Seed of the think times.")
    long seed;

    @Option(names = "--no-fencing", description = "Write without meaningful tokens (the control).")
    boolean noFencing;

    WorkerOptions options() {
        return new WorkerOptions(id, lockServers, store, lock,
                Workload.valueOf(workload.toUpperCase(Locale.ROOT)), thinkMax, ttl, !noFencing, history, originNanos,
                seed);
    }
}

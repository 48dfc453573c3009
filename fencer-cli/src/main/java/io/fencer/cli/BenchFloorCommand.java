package io.fencer.cli;

import io.fencer.load.HandoffFloor;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code fencer bench floor}: the fastest one contended lock can pass from holder to holder on this machine with a
 * durable grant per hand-off, measured with a bare lock server in this process, not with Fencer. Exit 1 when two
 * grants overlapped (none may), nothing was handed off, or the server or a client failed.
 */
@Command(name = "floor", mixinStandardHelpOptions = true,
        description = {"Runs a bare lock server in this process (one thread, one lock, a FIFO line, a log synced "
                + "with one fdatasync before each grant is answered) and --clients threads that take the lock in "
                + "turn over loopback connections, releasing and asking again in one write; reports hand-offs/s and "
                + "microseconds per hand-off. This bounds any lock service on this machine that keeps grants durable "
                + "before answering them (`fencer bench lock --locks 1` measures Fencer's). --hops adds server "
                + "threads to each commit's path, --client-io-thread the client threads of an RPC library; "
                + "--no-sync leaves the disk out."})
final class BenchFloorCommand implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", defaultValue = "fencer-data",
            description = "A directory on the file system to measure: the server's data directory (default: "
                    + "${DEFAULT-VALUE} in the working directory). The run's log file (16 MiB) is removed at the end.")
    Path directory;

    @Option(names = "--clients", paramLabel = "N", defaultValue = "64",
            description = "Client threads, each on its own connection, all on one lock (default: ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--hops", paramLabel = "N", defaultValue = "0",
            description = "Server threads each commit crosses, each woken through a queue, before its sync "
                    + "(default: ${DEFAULT-VALUE}: the thread that read the release syncs and answers).")
    int hops;

    @Option(names = "--no-sync", description = "Write each record without syncing it: the machine without its disk.")
    boolean noSync;

    @Option(names = "--client-io-thread",
            description = "The clients share one I/O thread that reads every grant and wakes the client's thread, "
                    + "which hands its next request back to it, as an RPC library's clients do; by default each "
                    + "client reads and writes its own socket.")
    boolean clientIoThread;

    @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.Converter.class,
            description = "How long to measure (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "5s", converter = Durations.Converter.class,
            description = "How long to run before measuring (default: ${DEFAULT-VALUE}).")
    Duration warmup;

    @Option(names = "--json", description = "Print the summary as one JSON object.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        HandoffFloor.Settings settings = settings();
        HandoffFloor.Result result;
        try {
            result = HandoffFloor.run(settings);
        } catch (IOException e) { // before anything was measured: the directory, its disk, or a socket
            spec.commandLine().getErr().println("fencer: bench floor could not run in "
                    + settings.directory().toAbsolutePath() + ": " + e.getClass().getSimpleName() + ": "
                    + e.getMessage());
            return Main.EXIT_ERROR;
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(json ? toJson(result) : text(result));
        out.flush();
        if (result.violations() > 0) {
            spec.commandLine().getErr().println("fencer: " + result.violations() + " grants carried a token no higher"
                    + " than one granted before: two clients held the lock at once");
            return Main.EXIT_ERROR;
        }
        if (result.error() != null) {
            spec.commandLine().getErr().println("fencer: the floor's run failed: " + result.error());
            return Main.EXIT_ERROR;
        }
        if (result.handOffs() == 0) {
            return BenchCommand.nothingMeasured(spec, "no grant was made", result.settings().duration(), null);
        }
        return Main.EXIT_OK;
    }

    private HandoffFloor.Settings settings() {
        BenchCommand.checkRange(spec, "--clients", clients, 1, HandoffFloor.CLIENTS_MAX);
        BenchCommand.checkRange(spec, "--hops", hops, 0, HandoffFloor.HOPS_MAX);
        BenchCommand.checkDuration(spec, duration);
        return new HandoffFloor.Settings(clients, hops, !noSync, clientIoThread, directory, duration, warmup);
    }

    /** Returns the human summary: settings, rate, time per hand-off, syncs and violations. */
    static String text(HandoffFloor.Result result) {
        HandoffFloor.Settings settings = result.settings();
        return String.format(Locale.ROOT, "fencer bench floor: %d clients on one lock%s, %d extra server thread%s, "
                + "%s, in %s; %s measured after %s warmup%n"
                + "hand-offs:     %d  %.1f/s  (%.1f us each)%n"
                + "log syncs:     %d%n"
                + "violations:    %d",
                settings.clients(), settings.clientIoThread() ? " through one I/O thread" : "", settings.hops(),
                settings.hops() == 1 ? "" : "s",
                settings.sync() ? "a sync per commit" : "no sync", settings.directory().toAbsolutePath(),
                Durations.format(settings.duration()), Durations.format(settings.warmup()),
                result.handOffs(), result.handOffsPerSecond(), result.microsPerHandOff(), result.syncs(),
                result.violations());
    }

    /** Returns the machine-readable summary. */
    static Json toJson(HandoffFloor.Result result) {
        HandoffFloor.Settings settings = result.settings();
        return Json.object()
                .add("clients", settings.clients())
                .add("hops", settings.hops())
                .add("sync", settings.sync())
                .add("clientIoThread", settings.clientIoThread())
                .add("directory", settings.directory().toAbsolutePath().toString())
                .add("durationMillis", settings.duration().toMillis())
                .add("warmupMillis", settings.warmup().toMillis())
                .add("handOffs", result.handOffs())
                .add("handOffsPerSecond", result.handOffsPerSecond())
                .add("microsPerHandOff", result.microsPerHandOff())
                .add("syncs", result.syncs())
                .add("violations", result.violations())
                .add("error", result.error());
    }
}

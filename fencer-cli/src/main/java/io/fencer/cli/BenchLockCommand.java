package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.load.HttpLockCalls;
import io.fencer.load.LockBench;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code fencer bench lock}: acquire → release cycles from many sessions against a running group, with latency
 * percentiles and the fencing check (tokens strictly increasing per lock). Exit 1 when the check fails or no
 * cycle completed.
 */
@Command(name = "lock", mixinStandardHelpOptions = true,
        description = {"Runs acquire -> release cycles from --clients sessions on --locks locks and reports "
                + "cycles/s, grants/s, cycle latency, and whether tokens strictly increased per lock."})
final class BenchLockCommand implements Callable<Integer> {
    @Option(names = "--clients", paramLabel = "N", defaultValue = "64",
            description = "Client threads, each with its own session (default: ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--locks", paramLabel = "N",
            description = "Distinct locks; client i uses bench-<i %% N> (default: one per client).")
    Integer locks;

    @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long to measure (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long to run before measuring (default: ${DEFAULT-VALUE}): on a 2-core machine the JIT"
                    + " of a fresh server and of this load generator takes most of the first 30 s.")
    Duration warmup;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.SessionTtl.class,
            description = "Each session's lease (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--shared", description = "Acquire every lock in shared mode (read-write locks' readers).")
    boolean shared;

    @Option(names = "--semaphore", paramLabel = "N",
            description = "Acquire a permit of semaphore bench-<i %% --locks> of N permits instead of a lock; tokens"
                    + " are checked per permit slot.")
    Integer semaphorePermits;

    @Option(names = "--json", description = "Print the summary as one JSON object.")
    boolean json;

    @Option(names = "--http", arity = "0..1", paramLabel = "URL", fallbackValue = "",
            description = "Run the same cycles over the HTTP port (Connect protocol, JSON bodies; sessions kept alive "
                    + "by Renew every ttl/3) at URL (default: http://HOST:PORT+3 of the first --server).")
    String http;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        LockBench.Settings settings = settings();
        LockBench.Result result;
        if (http != null) {
            try (HttpLockCalls calls = new HttpLockCalls(http.isEmpty() ? httpUrl(client.endpoints.get(0)) : http)) {
                result = LockBench.run(calls, settings);
            }
        } else {
            try (FencerClient fencer = client.connect()) {
                result = LockBench.run(fencer, settings);
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(json ? toJson(result) : text(result));
        out.flush();
        if (!result.tokensIncreasing()) {
            return Main.EXIT_ERROR;
        }
        if (result.cycles() == 0) {
            return BenchCommand.nothingMeasured(spec, "no lock cycle completed", settings.duration(),
                    result.firstError());
        }
        return Main.EXIT_OK;
    }

    /** Returns the URL of the HTTP port beside the gRPC port {@code endpoint} (host:port): its port + 3. */
    static String httpUrl(String endpoint) {
        int colon = endpoint.lastIndexOf(':');
        int port = Integer.parseInt(endpoint.substring(colon + 1));
        return "http://" + endpoint.substring(0, colon) + ":" + (port + 3);
    }

    private LockBench.Settings settings() {
        int lockCount = locks == null ? clients : locks;
        BenchCommand.checkRange(spec, "--clients", clients, 1, LockBench.CLIENTS_MAX);
        BenchCommand.checkRange(spec, "--locks", lockCount, 1, LockBench.LOCKS_MAX);
        BenchCommand.checkDuration(spec, duration);
        if (shared && semaphorePermits != null) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--shared and --semaphore cannot be combined: a semaphore's permits are exclusive");
        }
        if (semaphorePermits != null) {
            BenchCommand.checkRange(spec, "--semaphore", semaphorePermits, 1, LockBench.PERMITS_MAX);
        }
        LockBench.Mode mode = shared ? LockBench.Mode.SHARED
                : semaphorePermits != null ? LockBench.Mode.SEMAPHORE : LockBench.Mode.EXCLUSIVE;
        return new LockBench.Settings(clients, lockCount, duration, warmup, ttl, mode,
                semaphorePermits == null ? 1 : semaphorePermits);
    }

    /** Returns the human summary: settings, throughput, latency, errors and the fencing check. */
    static String text(LockBench.Result result) {
        LockBench.Settings settings = result.settings();
        StringBuilder text = new StringBuilder();
        String what = switch (settings.mode()) {
            case EXCLUSIVE -> "lock";
            case SHARED -> "shared lock";
            case SEMAPHORE -> settings.permits() + "-permit semaphore";
        };
        text.append(String.format(Locale.ROOT, "fencer bench lock: %d clients on %d %s%s, %s measured after %s"
                + " warmup, session ttl %s%n", settings.clients(), settings.locks(), what,
                settings.locks() == 1 ? "" : "s",
                Durations.format(settings.duration()), Durations.format(settings.warmup()),
                Durations.format(settings.ttl())));
        text.append(String.format(Locale.ROOT, "cycles (acquire+release): %d  %.1f/s%n", result.cycles(),
                result.cyclesPerSecond()));
        text.append(String.format(Locale.ROOT, "grants:                   %d  %.1f/s%n", result.grants(),
                result.grantsPerSecond()));
        text.append(String.format(Locale.ROOT, "cycle latency ms:         p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f%n",
                result.cycleMillisP50(), result.cycleMillisP99(), result.cycleMillisP999(), result.cycleMillisMax()));
        text.append("errors:                   ").append(result.errors())
                .append(result.firstError() == null ? "" : " (first: " + result.firstError() + ")")
                .append(System.lineSeparator());
        if (settings.mode() == LockBench.Mode.SHARED) {
            return text.append("tokens: order not checked (shared holders overlap, so their order means nothing)")
                    .toString();
        }
        text.append(settings.mode() == LockBench.Mode.SEMAPHORE ? "per permit slot, " : "");
        text.append("tokens strictly increasing per lock: ").append(result.tokensIncreasing()
                ? "yes (" + result.tokensChecked() + " tokens on " + settings.locks()
                        + (settings.locks() == 1 ? " lock)" : " locks)")
                : "NO: " + result.firstViolation());
        return text.toString();
    }

    /** Returns the machine-readable summary. */
    static Json toJson(LockBench.Result result) {
        LockBench.Settings settings = result.settings();
        return Json.object()
                .add("clients", settings.clients())
                .add("locks", settings.locks())
                .add("durationMillis", settings.duration().toMillis())
                .add("warmupMillis", settings.warmup().toMillis())
                .add("ttlMillis", settings.ttl().toMillis())
                .add("mode", settings.mode().name().toLowerCase(Locale.ROOT))
                .add("permits", settings.permits())
                .add("cycles", result.cycles())
                .add("cyclesPerSecond", result.cyclesPerSecond())
                .add("grants", result.grants())
                .add("grantsPerSecond", result.grantsPerSecond())
                .add("cycleLatencyMillis", Json.object()
                        .add("p50", result.cycleMillisP50())
                        .add("p99", result.cycleMillisP99())
                        .add("p999", result.cycleMillisP999())
                        .add("max", result.cycleMillisMax()))
                .add("errors", result.errors())
                .add("firstError", result.firstError())
                .add("tokensChecked", result.tokensChecked())
                .add("tokensStrictlyIncreasing", result.tokensIncreasing())
                .add("firstViolation", result.firstViolation());
    }
}

package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.load.StoreBench;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code fencer bench store}: fenced writes from many threads into a running store, each scope under the token of
 * a real grant, with acknowledged writes/s and latency percentiles. Exit 1 when a write was refused as stale (none
 * should be) or none was acknowledged.
 */
@Command(name = "store", mixinStandardHelpOptions = true,
        description = {"Acquires the lock of each of --scopes scopes through the lock service (held for the run), "
                + "then --writers threads put random keys with --value-bytes random values under their scope's token; "
                + "reports acknowledged (fsync'd) writes/s, write latency, and stale refusals (must be 0)."})
final class BenchStoreCommand implements Callable<Integer> {
    @Option(names = "--writers", paramLabel = "N", defaultValue = "64",
            description = "Writer threads (default: ${DEFAULT-VALUE}).")
    int writers;

    @Option(names = "--scopes", paramLabel = "N",
            description = "Distinct scopes; writer i writes to bench-store-<i %% N> (default: one per writer).")
    Integer scopes;

    @Option(names = "--value-bytes", paramLabel = "N", defaultValue = "256",
            description = "Bytes per value (default: ${DEFAULT-VALUE}).")
    int valueBytes;

    @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long to measure (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long to run before measuring (default: ${DEFAULT-VALUE}): on a 2-core machine the JIT"
                    + " of a fresh server and of this load generator takes most of the first 30 s.")
    Duration warmup;

    @Option(names = "--store", split = ",", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:7070",
            converter = Converters.Endpoint.class,
            description = "The store's address: a store-server, or a server hosting the store; for the replicated "
                    + "store of a group, its peers comma-separated (default: ${DEFAULT-VALUE}).")
    List<String> store;

    @Option(names = "--json", description = "Print the summary as one JSON object.")
    boolean json;

    /** The lock service that grants the scopes' tokens ({@code --server}). */
    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        StoreBench.Settings settings = settings();
        StoreBench.Result result;
        try (FencerClient lockService = client.connect();
             FencedStore fencedStore = client.storeBuilder(String.join(",", store)).lockService(lockService)
                     .build()) {
            result = StoreBench.run(lockService, fencedStore, settings);
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(json ? toJson(result) : text(result));
        out.flush();
        if (result.staleRefusals() > 0) {
            spec.commandLine().getErr().println("fencer: " + result.staleRefusals() + " writes were refused as stale,"
                    + " though every writer held its scope's current grant; first: " + result.firstStale());
            return Main.EXIT_ERROR;
        }
        if (result.writes() == 0) {
            return BenchCommand.nothingMeasured(spec, "no write was acknowledged", settings.duration(),
                    result.firstError());
        }
        return Main.EXIT_OK;
    }

    private StoreBench.Settings settings() {
        int scopeCount = scopes == null ? writers : scopes;
        BenchCommand.checkRange(spec, "--writers", writers, 1, StoreBench.WRITERS_MAX);
        BenchCommand.checkRange(spec, "--scopes", scopeCount, 1, StoreBench.SCOPES_MAX);
        BenchCommand.checkRange(spec, "--value-bytes", valueBytes, 0, StoreBench.VALUE_BYTES_MAX);
        BenchCommand.checkDuration(spec, duration);
        return new StoreBench.Settings(writers, scopeCount, valueBytes, duration, warmup);
    }

    /** Returns the human summary: settings, throughput, latency, refusals and errors. */
    static String text(StoreBench.Result result) {
        StoreBench.Settings settings = result.settings();
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT, "fencer bench store: %d writers on %d scope%s, %d-byte values, %s"
                + " measured after %s warmup%n", settings.writers(), settings.scopes(),
                settings.scopes() == 1 ? "" : "s", settings.valueBytes(), Durations.format(settings.duration()),
                Durations.format(settings.warmup())));
        text.append(String.format(Locale.ROOT, "acknowledged writes: %d  %.1f/s%n", result.writes(),
                result.writesPerSecond()));
        text.append(String.format(Locale.ROOT, "write latency ms:    p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f%n",
                result.writeMillisP50(), result.writeMillisP99(), result.writeMillisP999(), result.writeMillisMax()));
        text.append("stale refusals:      ").append(result.staleRefusals())
                .append(result.firstStale() == null ? "" : " (first: " + result.firstStale() + ")")
                .append(System.lineSeparator());
        text.append("errors:              ").append(result.errors())
                .append(result.firstError() == null ? "" : " (first: " + result.firstError() + ")");
        return text.toString();
    }

    /** Returns the machine-readable summary. */
    static Json toJson(StoreBench.Result result) {
        StoreBench.Settings settings = result.settings();
        return Json.object()
                .add("writers", settings.writers())
                .add("scopes", settings.scopes())
                .add("valueBytes", settings.valueBytes())
                .add("durationMillis", settings.duration().toMillis())
                .add("warmupMillis", settings.warmup().toMillis())
                .add("writes", result.writes())
                .add("writesPerSecond", result.writesPerSecond())
                .add("writeLatencyMillis", Json.object()
                        .add("p50", result.writeMillisP50())
                        .add("p99", result.writeMillisP99())
                        .add("p999", result.writeMillisP999())
                        .add("max", result.writeMillisMax()))
                .add("staleRefusals", result.staleRefusals())
                .add("firstStale", result.firstStale())
                .add("errors", result.errors())
                .add("firstError", result.firstError());
    }
}

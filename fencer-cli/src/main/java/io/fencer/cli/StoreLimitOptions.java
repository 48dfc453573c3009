package io.fencer.cli;

import io.fencer.store.StoreOptions;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The options of {@code fencer server} and {@code fencer store-server} that set the store's limits beyond
 * {@link StoreOptions#defaults()}.
 */
final class StoreLimitOptions {
    @Option(names = "--unit-bytes-buffered-max", paramLabel = "BYTES",
            description = "Most bytes the store's open units may buffer at once, over all units and callers (each op "
                    + "counts its key, its value and 80 bytes); a UnitWrite past it is refused, the unit kept "
                    + "(default: a quarter of the JVM's heap, -Xmx, at least 4 MiB and at most 1 GiB).")
    Long unitBytesBufferedMax;

    @Option(names = "--request-bytes-queued-max", paramLabel = "BYTES",
            description = "Most bytes of requests the store's workers may hold at once, waiting for a worker or being "
                    + "served, over all callers (each counts its encoded size; a request alone is always taken); a "
                    + "call past it is refused (default: an eighth of the JVM's heap, -Xmx, at least 16 MiB and at "
                    + "most 512 MiB).")
    Long requestBytesQueuedMax;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Returns {@code defaults} with the limits these options set; an option out of range is a usage error. */
    StoreOptions apply(StoreOptions defaults) {
        StoreOptions options = defaults;
        if (unitBytesBufferedMax != null) {
            options = options.withUnitBytesBufferedMax(atLeastOne("--unit-bytes-buffered-max", unitBytesBufferedMax));
        }
        if (requestBytesQueuedMax != null) {
            options = options.withRequestBytesQueuedMax(atLeastOne("--request-bytes-queued-max",
                    requestBytesQueuedMax));
        }
        return options;
    }

    private long atLeastOne(String option, long bytes) {
        if (bytes < 1) {
            throw new ParameterException(command.commandLine(), option + " " + bytes + " must be at least 1 byte");
        }
        return bytes;
    }
}

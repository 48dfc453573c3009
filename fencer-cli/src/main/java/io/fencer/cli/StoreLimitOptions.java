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

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Returns {@code defaults} with the limits these options set; an option out of range is a usage error. */
    StoreOptions apply(StoreOptions defaults) {
        if (unitBytesBufferedMax == null) {
            return defaults;
        }
        if (unitBytesBufferedMax < 1) {
            throw new ParameterException(command.commandLine(), "--unit-bytes-buffered-max " + unitBytesBufferedMax
                    + " must be at least 1 byte");
        }
        return defaults.withUnitBytesBufferedMax(unitBytesBufferedMax);
    }
}

package io.fencer.cli;

import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code fencer bench}: the group of load generators that measure a running group. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Measure a running Fencer group.",
        subcommands = {BenchLockCommand.class, BenchStoreCommand.class})
final class BenchCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose lock or store");
    }

    /** Reports a bench run in which nothing completed (server down, all calls failing) and returns exit 1. */
    static int nothingMeasured(CommandSpec spec, String what, Duration duration, String firstError) {
        spec.commandLine().getErr().println("fencer: " + what + " in the measured " + Durations.format(duration)
                + (firstError == null ? "" : "; first error: " + firstError));
        return Main.EXIT_ERROR;
    }
}

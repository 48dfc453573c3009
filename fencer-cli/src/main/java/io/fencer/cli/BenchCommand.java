package io.fencer.cli;

import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code fencer bench}: the group of load generators that measure a running group. */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure a running Fencer group, or this machine's floor under any lock service.")
final class BenchCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose lock, store, failover or floor");
    }

    /**
     * Checks that option {@code name}'s {@code value} lies in [{@code lowest}, {@code highest}].
     *
     * @throws ParameterException naming the option, its value and the range
     */
    static void checkRange(CommandSpec spec, String name, long value, long lowest, long highest) {
        if (value < lowest || value > highest) {
            throw new ParameterException(spec.commandLine(), name + " " + value + " is outside [" + lowest + ", "
                    + highest + "]");
        }
    }

    /** Checks that {@code --duration} is positive. */
    static void checkDuration(CommandSpec spec, Duration duration) {
        if (duration.isZero()) {
            throw new ParameterException(spec.commandLine(), "--duration must be positive");
        }
    }

    /** Reports a bench run in which nothing completed (server down, all calls failing) and returns exit 1. */
    static int nothingMeasured(CommandSpec spec, String what, Duration duration, String firstError) {
        spec.commandLine().getErr().println("fencer: " + what + " in the measured " + Durations.format(duration)
                + (firstError == null ? "" : "; first error: " + firstError));
        return Main.EXIT_ERROR;
    }
}

package io.fencer.cli;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The exit statuses of {@code lock exec} and {@code sem exec}'s own outcomes, which the caller may choose as with
 * {@code flock -E}: those commands exit with CMD's status otherwise, so a CMD that exits 3 or 4 by itself cannot be
 * told from a lost lease or a lock not granted unless the caller picks codes that CMD does not use.
 */
final class ExecExitCodes {
    @Option(names = "--conflict-exit-code", paramLabel = "N", defaultValue = "" + Main.EXIT_NOT_ACQUIRED,
            converter = Converters.ExitCode.class,
            description = "Exit status, 0 to 255, when not granted within --wait (default: ${DEFAULT-VALUE}); "
                    + "choose one that CMD does not use.")
    int notAcquired;

    @Option(names = "--lost-exit-code", paramLabel = "N", defaultValue = "" + Main.EXIT_LEASE_LOST,
            converter = Converters.ExitCode.class,
            description = "Exit status, 0 to 255, when the lease was in jeopardy or lost and CMD was stopped "
                    + "(default: ${DEFAULT-VALUE}); choose one that CMD does not use.")
    int leaseLost;

    /**
     * Returns the exit status of a lock not granted in time for {@code command}: the one its caller chose when the
     * command takes these options, else {@link Main#EXIT_NOT_ACQUIRED}.
     */
    static int notAcquired(CommandLine command) {
        return command.getMixins().values().stream().filter(ExecExitCodes.class::isInstance)
                .map(codes -> ((ExecExitCodes) codes).notAcquired).findFirst().orElse(Main.EXIT_NOT_ACQUIRED);
    }
}

package io.fencer.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code fencer store}: operating the fenced store: its backup, its restore and its import into a group. */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "store", mixinStandardHelpOptions = true,
        description = {"Back up a running fenced store, restore one from a backup with a fence, and import a "
                + "single-node store into the replicated store of a group.",
            "A restored store must never accept the token of a holder superseded before the restore: restore "
                    + "raises every scope's accepted token to a floor from the lock service."})
final class StoreCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose backup, restore or import");
    }
}

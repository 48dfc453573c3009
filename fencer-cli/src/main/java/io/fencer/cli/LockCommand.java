package io.fencer.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code fencer lock}: the group of lock commands. */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "lock", mixinStandardHelpOptions = true,
        description = "Acquire locks, show their state, watch their events, and revoke a holder's grant.")
final class LockCommand implements Runnable {
    @ParentCommand
    Main main;

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose acquire, exec, status, watch or revoke");
    }
}

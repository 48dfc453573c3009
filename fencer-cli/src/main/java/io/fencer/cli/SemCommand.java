package io.fencer.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code fencer sem}: the group of semaphore commands. */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "sem", mixinStandardHelpOptions = true,
        description = "Run commands under a semaphore's permits and show its state.")
final class SemCommand implements Runnable {
    @ParentCommand
    Main main;

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose exec or status");
    }
}

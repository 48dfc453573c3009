package io.fencer.cli;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The tree of fencer's commands, built whole or only along the path that a command line takes.
 *
 * <p>Picocli builds a command's model by reflection over its fields, converters and mixins, and a model built from
 * {@code @Command(subcommands = ...)} holds every subcommand: about 40 commands, half a second of a short command's
 * start on a small machine. So the groups list their subcommands here instead of in their annotations, and
 * {@link #along} builds in full only the commands that the arguments name; every other subcommand is a stub that
 * carries its name, header and description from its annotation, so that a group's usage lists it exactly as before.
 * A stub is never parsed into: a group is built lazily only when its own options take no value (so the first
 * argument that is not an option must be its subcommand's name) and that argument names one of its subcommands;
 * anything else ({@code help}, an argument file, a misspelt name) builds that group whole, as picocli would.
 */
final class CommandTree {
    /** Each group's subcommands, in the order that its usage lists them. */
    private static final Map<Class<?>, List<Class<?>>> SUBCOMMANDS = Map.of(
            Main.class, List.of(ServerCommand.class, StoreServerCommand.class, LockCommand.class, KvCommand.class,
                    BenchCommand.class, KeygenCommand.class, CertsCommand.class, DemoCommand.class,
                    ChaosCommand.class, SemCommand.class, PeersCommand.class, StatusCommand.class,
                    BackupCommand.class, RestoreCommand.class, StoreCommand.class, HelpCommand.class),
            LockCommand.class, List.of(LockAcquireCommand.class, LockExecCommand.class, LockStatusCommand.class,
                    LockWatchCommand.class, LockRevokeCommand.class),
            KvCommand.class, List.of(KvPutCommand.class, KvGetCommand.class, KvDeleteCommand.class,
                    KvFenceCommand.class),
            BenchCommand.class, List.of(BenchLockCommand.class, BenchStoreCommand.class, BenchFailoverCommand.class,
                    BenchFloorCommand.class),
            ChaosCommand.class, List.of(ChaosCheckCommand.class, ChaosWorkerCommand.class, ChaosClientCommand.class),
            SemCommand.class, List.of(SemExecCommand.class, SemStatusCommand.class),
            PeersCommand.class, List.of(PeersCommand.List.class, PeersCommand.Add.class, PeersCommand.Promote.class,
                    PeersCommand.Remove.class),
            StoreCommand.class, List.of(StoreBackupCommand.class, StoreRestoreCommand.class,
                    StoreImportCommand.class));

    /** {@link #chosenSubcommand}: build every subcommand whole. */
    private static final int WHOLE = -1;
    /** {@link #chosenSubcommand}: the arguments name no subcommand; every one is a stub. */
    private static final int NONE = -2;

    private CommandTree() {
    }

    /** Returns the whole tree under {@code command}: every subcommand built in full (for help and tests). */
    static CommandLine whole(Object command) {
        return build(command, null);
    }

    /**
     * Returns the tree under {@code command} for running {@code args}: the commands that {@code args} name are built
     * in full, their siblings as stubs; parsing {@code args} with it gives what parsing them with {@link #whole}
     * gives.
     */
    static CommandLine along(Object command, String... args) {
        return build(command, List.of(args));
    }

    /** Builds {@code command} with its subcommands; {@code args} are those after its name, or null for all whole. */
    private static CommandLine build(Object command, List<String> args) {
        CommandLine line = new CommandLine(command);
        Class<?> type = command instanceof Class<?> ? (Class<?>) command : command.getClass();
        List<Class<?>> subcommands = SUBCOMMANDS.getOrDefault(type, List.of());
        int chosen = args == null ? WHOLE : chosenSubcommand(line.getCommandSpec(), subcommands, args);
        for (Class<?> subcommand : subcommands) {
            Command annotation = annotation(subcommand);
            if (chosen == WHOLE) {
                line.addSubcommand(annotation.name(), build(subcommand, null));
            } else if (chosen >= 0 && annotation.name().equals(args.get(chosen))) {
                line.addSubcommand(annotation.name(), build(subcommand, args.subList(chosen + 1, args.size())));
            } else {
                line.addSubcommand(annotation.name(), new CommandLine(stub(annotation)));
            }
        }
        return line;
    }

    /**
     * Returns the index in {@code args} of the subcommand they name; {@link #NONE} when every argument is an option
     * (no subcommand runs: {@code --help}, {@code --version}); or {@link #WHOLE} when the group must be built whole:
     * its own options take values or it has positional parameters (so the first argument that is not an option may
     * be a value), or that argument names no subcommand but help (so picocli's own handling, suggestions included,
     * sees the whole group).
     */
    private static int chosenSubcommand(CommandSpec spec, List<Class<?>> subcommands, List<String> args) {
        if (subcommands.isEmpty() || !spec.positionalParameters().isEmpty()) {
            return WHOLE;
        }
        for (OptionSpec option : spec.options()) {
            if (option.arity().max() > 0) {
                return WHOLE;
            }
        }
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (arg.startsWith("-") && !arg.equals("--")) {
                continue;
            }
            for (Class<?> subcommand : subcommands) {
                if (subcommand != HelpCommand.class && annotation(subcommand).name().equals(arg)) {
                    return i;
                }
            }
            return WHOLE;
        }
        return NONE;
    }

    /** Returns a command that only describes {@code annotation}'s command in its group's usage. */
    private static CommandSpec stub(Command annotation) {
        CommandSpec stub = CommandSpec.create().name(annotation.name()).aliases(annotation.aliases());
        stub.usageMessage().header(annotation.header()).description(annotation.description())
                .hidden(annotation.hidden());
        return stub;
    }

    private static Command annotation(Class<?> command) {
        return Objects.requireNonNull(command.getAnnotation(Command.class), command.getName());
    }
}

package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Help.Ansi;

/** The command tree built along a command line: the same usage and parse as the whole tree, for less work. */
class CommandTreeTest {

    @Test
    void along_everyCommandPath_rendersTheUsageOfTheWholeTreeAlongThePath() {
        Map<String, CommandLine> whole = new LinkedHashMap<>();
        collect(CommandTree.whole(new Main()), whole);

        for (Map.Entry<String, CommandLine> command : whole.entrySet()) {
            List<String> path = path(command.getValue());
            CommandLine along = CommandTree.along(new Main(), path.toArray(String[]::new));
            CommandLine current = along;
            CommandLine wholeCurrent = whole.get("fencer");
            assertThat(usage(current)).as("usage of fencer along %s", path).isEqualTo(usage(wholeCurrent));
            for (String name : path) {
                current = current.getSubcommands().get(name);
                wholeCurrent = wholeCurrent.getSubcommands().get(name);
                assertThat(usage(current)).as("usage of %s along %s", name, path).isEqualTo(usage(wholeCurrent));
            }
        }
        assertThat(whole).containsKeys("fencer lock exec", "fencer kv put", "fencer peers add", "fencer chaos check");
    }

    @Test
    void along_lockExec_buildsOnlyThePathInFull() {
        CommandLine along = CommandTree.along(new Main(), "--verbose", "lock", "exec", "orders", "--", "true");

        CommandLine lock = along.getSubcommands().get("lock");
        CommandLine exec = lock.getSubcommands().get("exec");
        assertThat((Object) exec.getCommand()).isInstanceOf(LockExecCommand.class);
        assertThat((Object) along.getSubcommands().get("server").getCommand()).as("a stub").isNull();
        assertThat((Object) lock.getSubcommands().get("status").getCommand()).as("a stub").isNull();
        assertThat((Object) CommandTree.whole(new Main()).getSubcommands().get("server").getCommand())
                .as("control: the whole tree builds it").isInstanceOf(ServerCommand.class);
    }

    @Test
    void along_lockExec_parsesAsTheWholeTreeDoes() {
        String[] args = {"--verbose", "lock", "exec", "orders", "--ttl", "3s", "--server", "127.0.0.1:1", "--",
            "sleep", "1"};

        LockExecCommand along = leaf(CommandTree.along(new Main(), args).parseArgs(args));
        LockExecCommand whole = leaf(CommandTree.whole(new Main()).parseArgs(args));

        assertThat(along.name).isEqualTo(whole.name).isEqualTo("orders");
        assertThat(along.command).isEqualTo(whole.command).containsExactly("sleep", "1");
        assertThat(along.ttl).isEqualTo(whole.ttl);
        assertThat(along.client.endpoints).isEqualTo(whole.client.endpoints);
        assertThat(along.parent.main.verbose).isTrue();
    }

    @Test
    void along_argumentsThatNameNoSubcommand_buildTheWholeGroup() {
        for (String[] args : List.of(new String[] {"help", "lock"}, new String[] {"lokc", "exec"},
                new String[] {"--", "lock"}, new String[] {"@args.txt"}, new String[] {"lock", "exce"})) {
            CommandLine along = CommandTree.along(new Main(), args);
            CommandLine group = args[0].equals("lock") ? along.getSubcommands().get("lock") : along;

            assertThat(group.getSubcommands().values()).as("%s", List.of(args))
                    .allSatisfy(sub -> assertThat((Object) sub.getCommand()).isNotNull());
        }
    }

    @Test
    void along_onlyOptions_buildsNoSubcommand() {
        CommandLine along = CommandTree.along(new Main(), "--version");

        assertThat(along.getSubcommands().values()).allSatisfy(sub -> assertThat((Object) sub.getCommand()).isNull());
        assertThat(usage(along)).isEqualTo(usage(CommandTree.whole(new Main())));
    }

    @Test
    void along_groupWhoseOptionsTakeValues_isBuiltWhole() {
        // "fencer chaos --workers 3 check" must not read "3" as a subcommand's name, so chaos is built whole.
        CommandLine chaos = CommandTree.along(new Main(), "chaos", "--workers", "3").getSubcommands().get("chaos");

        assertThat(chaos.getSubcommands().values())
                .allSatisfy(sub -> assertThat((Object) sub.getCommand()).isNotNull());
    }

    @Test
    void whole_everyCommandClass_isInTheTree() {
        // A command class the tree does not list would be unreachable: the groups list theirs in CommandTree.
        List<Class<?>> commands = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.fencer.cli").stream().filter(type -> type.isAnnotatedWith(Command.class))
                .<Class<?>>map(JavaClass::reflect).toList();
        List<Class<?>> inTree = new ArrayList<>();
        collectTypes(CommandTree.whole(new Main()), inTree);

        assertThat(commands).as("control: the command classes were found").contains(LockExecCommand.class, Main.class)
                .hasSizeGreaterThan(30);
        assertThat(inTree).containsAll(commands);
    }

    private static void collectTypes(CommandLine command, List<Class<?>> into) {
        into.add(command.getCommand().getClass());
        command.getSubcommands().values().forEach(sub -> collectTypes(sub, into));
    }

    private static LockExecCommand leaf(CommandLine.ParseResult parsed) {
        CommandLine.ParseResult result = parsed;
        while (result.hasSubcommand()) {
            result = result.subcommand();
        }
        return result.commandSpec().commandLine().getCommand();
    }

    private static String usage(CommandLine command) {
        return command.getUsageMessage(Ansi.OFF);
    }

    private static List<String> path(CommandLine command) {
        List<String> names = new ArrayList<>();
        for (CommandLine current = command; current.getParent() != null; current = current.getParent()) {
            names.add(0, current.getCommandName());
        }
        return names;
    }

    private static void collect(CommandLine command, Map<String, CommandLine> into) {
        into.put(command.getCommandSpec().qualifiedName(), command);
        for (CommandLine sub : command.getSubcommands().values()) {
            collect(sub, into);
        }
    }
}

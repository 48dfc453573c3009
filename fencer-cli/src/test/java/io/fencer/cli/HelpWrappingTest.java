package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every subcommand's help, rendered at 80 columns, reads cleanly: no token split where picocli wraps a line (a path,
 * a method name, a sequencer), and no phrase split across two elements of a description (picocli starts a new line
 * at each element, and a command list shows the first element only).
 */
class HelpWrappingTest {
    private static final int COLUMNS = 80;
    /**
     * A line whose last token is cut after a dot or a slash: "(default: .", "/fencer.v1.", "<value>[.", "a/", and
     * "e." of an "e.g." cut in two.
     */
    private static final Pattern CUT_TOKEN = Pattern.compile(
            "(^|\\s)(\\.|[ei]\\.|\\S*\\[\\.|[^\\s)\\]]*[/.][^\\s)\\]]*[^.)\\]>]\\.|[^\\s)\\]]+/)$");
    /** A line that ends inside a hyphenated word: "fail-" then "closed" on the next line. */
    private static final Pattern CUT_HYPHEN = Pattern.compile("\\p{Alpha}-$");

    @Test
    void usage_everySubcommandAt80Columns_splitsNoToken() {
        List<String> cuts = new ArrayList<>();
        for (Map.Entry<String, CommandLine> command : commands().entrySet()) {
            List<String> lines = command.getValue().getUsageMessage().lines().toList();
            for (int i = 0; i + 1 < lines.size(); i++) {
                String line = lines.get(i).stripTrailing();
                String next = lines.get(i + 1).strip();
                if (next.isEmpty()) {
                    continue;
                }
                if (CUT_TOKEN.matcher(line).find() || CUT_HYPHEN.matcher(line).find()) {
                    cuts.add(command.getKey() + ": '" + line.strip() + "' / '" + next + "'");
                }
            }
        }
        assertThat(cuts).as("lines that end inside a token").isEmpty();
    }

    @Test
    void usage_everySubcommand_noDescriptionPhraseSplitAcrossLines() {
        List<String> splits = new ArrayList<>();
        for (Map.Entry<String, CommandLine> command : commands().entrySet()) {
            String[] description = command.getValue().getCommandSpec().usageMessage().description();
            for (int i = 0; i + 1 < description.length; i++) {
                String element = description[i].strip();
                String next = description[i + 1].strip();
                if (!element.isEmpty() && !next.isEmpty() && (Character.isLowerCase(next.charAt(0))
                        || element.endsWith(",") || !endsSentence(element))) {
                    splits.add(command.getKey() + ": '" + element + "' / '" + next + "'");
                }
            }
        }
        assertThat(splits).as("descriptions whose phrase runs on into the next element").isEmpty();
    }

    @Test
    void usage_theControl_findsACutPathAndASplitPhrase() {
        assertThat(CUT_TOKEN.matcher("   (default: .").find()).isTrue();
        assertThat(CUT_TOKEN.matcher("   Store in the Connect protocol (POST /fencer.v1.").find()).isTrue();
        assertThat(CUT_TOKEN.matcher("   The grant's sequencer, fencer1.<lock>.<value>[.").find()).isTrue();
        assertThat(CUT_TOKEN.matcher("   whose lease ended.").find()).as("a sentence's end").isFalse();
        assertThat(CUT_TOKEN.matcher("   (default: port + 3, e.").find()).isTrue();
        assertThat(CUT_TOKEN.matcher("   the command fails after 1 s.").find()).as("a unit").isFalse();
        assertThat(CUT_TOKEN.matcher("   signature fencer1.<lock>.<value>.<kid>.<mac>.").find()).isFalse();
        assertThat(CUT_TOKEN.matcher("   (default: 10s).").find()).isFalse();
        assertThat(CUT_TOKEN.matcher("   comma-separated (default: 127.0.0.1:7070).").find()).isFalse();
        assertThat(CUT_TOKEN.matcher("   [--peers=ID=HOST:PORT[:RAFTPORT]...]]...").find()).as("a synopsis").isFalse();
        assertThat(endsSentence("exit 5 when the scope has")).isFalse();
    }

    private static boolean endsSentence(String element) {
        char last = element.charAt(element.length() - 1);
        return last == '.' || last == ':' || last == ')' || last == '!' || last == '?';
    }

    /** Returns every subcommand but the hidden ones, by qualified name, each rendering help at 80 columns. */
    private static Map<String, CommandLine> commands() {
        Map<String, CommandLine> commands = new java.util.LinkedHashMap<>();
        collect(Main.newCommandLine(new Main()), commands);
        assertThat(commands).hasSizeGreaterThan(20);
        return commands;
    }

    private static void collect(CommandLine command, Map<String, CommandLine> into) {
        command.setUsageHelpWidth(COLUMNS);
        command.setUsageHelpLongOptionsMaxWidth(20);
        into.put(command.getCommandSpec().qualifiedName(), command);
        for (CommandLine sub : command.getSubcommands().values()) {
            if (!sub.getCommandSpec().usageMessage().hidden()
                    && !into.containsKey(sub.getCommandSpec().qualifiedName())) {
                collect(sub, into);
            }
        }
    }
}

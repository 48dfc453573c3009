package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.process.Launcher;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.testing.FencerExtension;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command in the C locale, whose character set is ASCII, as on many servers and in containers: a real server in
 * this JVM and the command as a process of its own with LANG and LC_ALL set, each run beside a control in a UTF-8
 * locale. The JVM decodes the command line in the locale's set, so a name typed in UTF-8 reaches it mangled there.
 */
class LocaleProcessTest {
    private static final String NAME = "café";
    private static final Map<String, String> C_LOCALE = Map.of("LANG", "C", "LC_ALL", "C");
    private static final Map<String, String> UTF8_LOCALE = Map.of("LANG", "C.UTF-8", "LC_ALL", "C.UTF-8");

    @RegisterExtension
    static final FencerExtension FENCER = FencerExtension.server();
    @TempDir
    static Path directory;
    private static FencerClient client;

    @BeforeAll
    static void connect() {
        client = Fencer.connect(FENCER.endpoints());
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.close();
        }
    }

    /**
     * Regression: in the C locale {@code lock exec café} locked {@code caf\uFFFD\uFFFD}, another lock than the same
     * command's in a UTF-8 locale, so two machines running it did not exclude each other.
     */
    @Test
    void lockExec_nonAsciiNameInTheCLocale_isRefusedAndLocksNothing() throws Exception {
        List<String> command = List.of("lock", "exec", NAME, "--server", FENCER.endpoints(), "--", "sh", "-c",
                "printf '%s %s' \"$FENCER_LOCK\" \"$FENCER_TOKEN_VALUE\"");

        Run before = run(UTF8_LOCALE, command);
        Run c = run(C_LOCALE, command);
        Run after = run(UTF8_LOCALE, command);

        // The control: in a UTF-8 locale the name arrives whole and names the lock.
        assertThat(before.exit()).as(before.err()).isZero();
        assertThat(before.out()).startsWith(NAME + " ");
        assertThat(c.exit()).as(c.out()).isEqualTo(Main.EXIT_USAGE);
        assertThat(c.err()).contains("argument 3 of 9").contains("ANSI_X3.4-1968").contains("LANG=C.UTF-8")
                .doesNotContain("caf");
        assertThat(c.out()).as("the command did not run").isEmpty();
        // Tokens count every grant of the group: none was issued between the two runs, to any name.
        assertThat(token(after)).as("the token after the C locale's run").isEqualTo(token(before) + 1);
        assertThat(client.list("caf", 10)).as("locks held or waited for").isEmpty();
    }

    private static long token(Run run) {
        assertThat(run.exit()).as(run.err()).isZero();
        return Long.parseLong(run.out().substring(run.out().indexOf(' ') + 1));
    }

    /** Regression: in the C locale a lock named elsewhere printed as {@code caf?}, in the table and in JSON. */
    @Test
    void lockStatus_inTheCLocale_writesNamesInUtf8() throws Exception {
        try (Session session = client.openSession(Duration.ofSeconds(30));
                Grant grant = session.lock(NAME + "-held").acquire(Duration.ofSeconds(30))) {
            List<String> command = List.of("lock", "status", "--json", "--server", FENCER.endpoints());

            Run c = run(C_LOCALE, command);
            Run utf8 = run(UTF8_LOCALE, command);

            assertThat(c.exit()).as(c.err()).isZero();
            assertThat(c.out()).contains("\"lock\":\"" + NAME + "-held\"").isEqualTo(utf8.out());
            assertThat(grant.token().lock()).isEqualTo(NAME + "-held");
        }
    }

    /**
     * Regression: the server's log lines began {@code 2569-12-07T…} in a Thai locale (its Buddhist calendar), and with
     * Arabic-Indic digits in an Arabic one: slf4j-simple formats its timestamps in the default locale.
     */
    @Test
    void server_inThaiAndArabicLocales_logsGregorianTimestampsInAsciiDigits() throws Exception {
        String year = Integer.toString(LocalDate.now().getYear());
        for (String options : List.of("-Duser.language=th -Duser.country=TH", "-Duser.language=ar -Duser.country=EG")) {
            List<String> lines = serverLogStart(options);

            // The control: the locale reached the server's JVM.
            assertThat(lines.get(0)).isEqualTo("Picked up JAVA_TOOL_OPTIONS: " + options);
            assertThat(lines.get(1)).as(options).matches(year + "-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                    + "\\.[0-9]{3}(Z|[+-][0-9]{2}:[0-9]{2}) \\[.*");
        }
    }

    /**
     * Starts {@code fencer server} on free ports with {@code JAVA_TOOL_OPTIONS} set to {@code options}, and returns
     * the first line of its standard error and its first log line; stops it.
     */
    private static List<String> serverLogStart(String options) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(Launcher.ofCurrentJvm(Main.class.getName()).commandPrefix());
        command.addAll(List.of("server", "--data", directory.resolve("server-" + System.nanoTime()).toString(),
                "--port", "0"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        builder.environment().put("JAVA_TOOL_OPTIONS", options);
        Process process = builder.start();
        try (BufferedReader err = new BufferedReader(new InputStreamReader(process.getErrorStream(),
                StandardCharsets.UTF_8))) {
            List<String> lines = new ArrayList<>();
            lines.add(err.readLine());
            // The JVM may warn first (Java 24 and later: sun.misc.Unsafe, called by Netty): the first log line is the
            // first with a level, which slf4j-simple puts in brackets after the thread.
            for (String line = err.readLine(); line != null && lines.size() < 2; line = err.readLine()) {
                if (line.contains("] [INFO] ")) {
                    lines.add(line);
                }
            }
            assertThat(lines).as("the server's first line and first log line").hasSize(2);
            return lines;
        } finally {
            process.destroy();
            assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the server stopped").isTrue();
        }
    }

    /** A run of the command: its exit status, and its output and errors read as UTF-8. */
    private record Run(int exit, String out, String err) {}

    private static Run run(Map<String, String> locale, List<String> arguments) throws IOException,
            InterruptedException {
        List<String> command = new ArrayList<>(Launcher.ofCurrentJvm(Main.class.getName()).commandPrefix());
        command.addAll(arguments);
        Path err = directory.resolve("err-" + System.nanoTime() + ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(err.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("LC_"));
        builder.environment().putAll(locale);
        Process process = builder.start();
        byte[] out = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the command ended").isTrue();
        return new Run(process.exitValue(), new String(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }
}

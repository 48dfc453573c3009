package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.process.Launcher;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.testing.FencerExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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

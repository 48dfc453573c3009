package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.LockStatus;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.Ticker;
import io.fencer.load.LockBench;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.testing.FencerTestServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command run in process against a real server in the same JVM (real Ratis, real fsync, real gRPC), on free
 * ports. The server's clock can be pushed ahead to expire sessions, the way a paused holder loses its lease.
 */
class CommandEndToEndTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);
    /** Added to the server's clock; pushing it past a ttl expires every session whose keepalives it then judges. */
    private static final AtomicLong SKEW_NANOS = new AtomicLong();

    @TempDir
    static Path dataDir;

    /** The server signs its grants, so commands must hand resources the sequencer exactly as granted. */
    private static final TokenKeys KEYS = TokenKeys.generate("k1");
    private static FencerTestServer server;
    private static FencerClient fencer;
    private static String endpoint;

    @BeforeAll
    static void startServer() throws Exception {
        Ticker skewed = () -> System.nanoTime() + SKEW_NANOS.get();
        server = FencerTestServer.builder(dataDir).ticker(skewed).config(config -> config.withTokenKeys(KEYS)).start();
        endpoint = server.endpoint();
        fencer = Fencer.connect(endpoint);
    }

    @AfterAll
    static void stopServer() {
        if (fencer != null) {
            fencer.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockStatus_heldLock_showsHolderTokenAndIdentityAsJsonAndTable() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant grant = session.lock("status-orders").acquire(Duration.ofSeconds(30))) {
            FencingToken token = grant.token();

            CommandRun one = CommandRun.run("lock", "status", "status-orders", "--json", "--server", endpoint);
            CommandRun all = CommandRun.run("lock", "status", "--json", "--server", endpoint);
            CommandRun table = CommandRun.run("lock", "status", "--server", endpoint);

            assertThat(one.exitCode()).as(one.err()).isZero();
            assertThat(one.out().strip()).startsWith("{").endsWith("}").contains(
                    "\"lock\":\"status-orders\"", "\"holder\":\"" + token + "\"",
                    "\"holderSequencer\":\"" + token.sequencer() + "\"", "\"holderToken\":" + token.value(),
                    "\"holderIdentity\":\"anonymous\"", "\"waiterSessionIds\":[]",
                    "\"lastToken\":" + token.value(), "\"delayed\":false");
            assertThat(all.exitCode()).as(all.err()).isZero();
            assertThat(all.out().strip()).startsWith("[").endsWith("]").contains("\"holder\":\"" + token + "\"");
            assertThat(table.exitCode()).as(table.err()).isZero();
            assertThat(table.out()).contains("LOCK", "HOLDER", "LAST TOKEN").containsPattern(
                    "status-orders\\s+" + Pattern.quote(token.toString()) + "\\s+anonymous\\s+0\\s+"
                            + token.value() + "\\s+no");
        }
    }

    @Test
    void json_lockStatusAndStatus_writeTheFormatVersionFirstInEveryTopLevelObject() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant grant = session.lock("format-orders").acquire(Duration.ofSeconds(30))) {
            CommandRun one = CommandRun.run("lock", "status", "format-orders", "--json", "--server", endpoint);
            CommandRun all = CommandRun.run("lock", "status", "--json", "--server", endpoint);
            CommandRun status = CommandRun.run("status", "--json", "--server", endpoint);

            assertThat(List.of(one, all, status)).allSatisfy(run -> assertThat(run.exitCode()).as(run.err()).isZero());
            JsonArray locks = JsonParser.parseString(all.out()).getAsJsonArray();
            assertThat(locks).isNotEmpty();
            List<JsonObject> objects = new ArrayList<>(List.of(JsonParser.parseString(one.out()).getAsJsonObject(),
                    JsonParser.parseString(status.out()).getAsJsonObject()));
            locks.forEach(lock -> objects.add(lock.getAsJsonObject()));
            assertThat(objects).allSatisfy(object -> {
                assertThat(object.keySet().iterator().next()).as(object.toString()).isEqualTo("format");
                assertThat(object.get("format").getAsInt()).isEqualTo(1);
            });
        }
    }

    @Test
    void lockStatus_afterAName_listsOnlyTheLocksPastIt() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant first = session.lock("status-after/a").acquire(Duration.ofSeconds(30));
             Grant second = session.lock("status-after/b").acquire(Duration.ofSeconds(30))) {
            CommandRun after = CommandRun.run("lock", "status", "--after", "status-after/a", "--json", "--server",
                    endpoint);
            CommandRun tooLong = CommandRun.run("lock", "status", "--after", "x".repeat(300), "--server", endpoint);

            assertThat(after.exitCode()).as(after.err()).isZero();
            assertThat(after.out()).contains("\"lock\":\"status-after/b\"").doesNotContain("status-after/a");
            assertThat(tooLong.exitCode()).isEqualTo(2);
            assertThat(tooLong.err()).contains("--after").contains("300");
        }
    }

    @Test
    void benchLock_shortRun_completesCyclesWithStrictlyIncreasingTokens() {
        CommandRun run = CommandRun.run("bench", "lock", "--duration", "2s", "--warmup", "0s", "--clients", "4",
                "--json", "--server", endpoint);

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("\"tokensStrictlyIncreasing\":true", "\"firstViolation\":null",
                "\"clients\":4", "\"locks\":4");
        assertThat(jsonLong(run.out(), "cycles")).isPositive();
        assertThat(jsonLong(run.out(), "tokensChecked")).isGreaterThanOrEqualTo(jsonLong(run.out(), "cycles"));
    }

    @Test
    void lockBench_clientsContendingForOneLock_tokensStrictlyIncrease() throws Exception {
        LockBench.Result result = LockBench.run(fencer, new LockBench.Settings(4, 1, Duration.ofSeconds(2),
                Duration.ZERO, Duration.ofSeconds(10)));

        assertThat(result.cycles()).isPositive();
        assertThat(result.tokensIncreasing()).as(result.firstViolation()).isTrue();
        assertThat(result.errors()).as(result.firstError()).isZero();
        assertThat(result.cycleMillisMax()).isGreaterThanOrEqualTo(result.cycleMillisP50());
        assertThat(BenchLockCommand.text(result)).contains("tokens strictly increasing per lock: yes");
    }

    @Test
    void lockAcquire_untilStopRequested_printsTokenHoldsThenReleasesAndExitsZero() throws Exception {
        CompletableFuture<String> stop = new CompletableFuture<>();
        BackgroundRun run = BackgroundRun.start(stop, "lock", "acquire", "acquire-me", "--server", endpoint);

        await().atMost(GENEROUS).until(() -> run.out().contains("\n"));
        String[] printed = run.out().strip().split(" ");
        FencingToken token = Sequencer.parse(printed[1], KEYS); // signed, as granted
        assertThat(printed[0]).isEqualTo(token.toString()).startsWith("acquire-me#");
        assertThat(fencer.describe("acquire-me").holder()).isEqualTo(token);

        stop.complete("INT");

        assertThat(run.exitCode().get(GENEROUS.toSeconds(), TimeUnit.SECONDS)).as(run.err()).isZero();
        assertThat(fencer.describe("acquire-me").holder()).isNull();
    }

    @Test
    void lockAcquire_heldByAnother_exitsFourAfterTheWait() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant grant = session.lock("busy").acquire(Duration.ofSeconds(30))) {
            CommandRun run = CommandRun.run("lock", "acquire", "busy", "--wait", "500ms", "--server", endpoint);

            assertThat(run.exitCode()).isEqualTo(Main.EXIT_NOT_ACQUIRED);
            assertThat(run.err()).startsWith("fencer: ").contains("busy", "500 ms").doesNotContain("\tat ");
            assertThat(run.out()).isEmpty();
            assertThat(fencer.describe("busy").holder()).isEqualTo(grant.token());
        }
    }

    @Test
    void lockExecAndSemExec_notAcquiredWithConflictExitCode_exitWithTheChosenCodeWithoutRunningTheCommand(
            @TempDir Path directory) {
        Path ran = directory.resolve("ran");
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant lock = session.lock("exec-busy").acquire(Duration.ofSeconds(30));
             Grant permit = session.semaphore("exec-busy-sem", 1).acquire(Duration.ofSeconds(30))) {
            CommandRun chosen = CommandRun.run("lock", "exec", "exec-busy", "--wait", "300ms",
                    "--conflict-exit-code", "75", "--server", endpoint, "--", "touch", ran.toString());
            CommandRun semaphore = CommandRun.run("sem", "exec", "exec-busy-sem", "--permits", "1", "--wait", "300ms",
                    "--conflict-exit-code", "0", "--server", endpoint, "--", "touch", ran.toString());
            CommandRun byDefault = CommandRun.run("lock", "exec", "exec-busy", "--wait", "300ms", "--server",
                    endpoint, "--", "touch", ran.toString());

            assertThat(chosen.exitCode()).as(chosen.err()).isEqualTo(75);
            assertThat(chosen.err()).startsWith("fencer: ").contains("exec-busy").doesNotContain("\tat ");
            assertThat(semaphore.exitCode()).as(semaphore.err()).isZero();
            assertThat(semaphore.err()).startsWith("fencer: ").contains("exec-busy-sem");
            assertThat(byDefault.exitCode()).as(byDefault.err()).isEqualTo(Main.EXIT_NOT_ACQUIRED);
            assertThat(ran).as("the command never ran").doesNotExist();
            assertThat(fencer.describe("exec-busy").holder()).isEqualTo(lock.token());
        }
    }

    @Test
    void lockExec_commandExitsWithTheDefaultCodes_passesThemThroughUnderChosenCodes() {
        CommandRun three = CommandRun.run("lock", "exec", "exec-three", "--lost-exit-code", "70",
                "--conflict-exit-code", "75", "--server", endpoint, "--", "sh", "-c", "exit 3");
        CommandRun four = CommandRun.run("lock", "exec", "exec-three", "--lost-exit-code", "70",
                "--conflict-exit-code", "75", "--server", endpoint, "--", "sh", "-c", "exit 4");

        assertThat(three.exitCode()).as(three.err()).isEqualTo(3);
        assertThat(four.exitCode()).as(four.err()).isEqualTo(4);
        assertThat(three.err() + four.err()).doesNotContain("lease");
        assertThat(fencer.describe("exec-three").holder()).as("released once the command ended").isNull();
    }

    @Test
    void lockExec_command_seesItsTokenAndItsStatusPassesThrough(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("token.txt");

        CommandRun run = CommandRun.run("lock", "exec", "exec-env", "--server", endpoint, "--", "sh", "-c",
                "echo \"$FENCER_TOKEN $FENCER_TOKEN_VALUE $FENCER_LOCK\" > '" + file + "'; exit 5");

        assertThat(run.exitCode()).as(run.err()).isEqualTo(5);
        String[] seen = Files.readString(file, StandardCharsets.UTF_8).strip().split(" ");
        // Regression: FENCER_TOKEN once held the unsigned form, which stores requiring signatures refuse.
        FencingToken token = Sequencer.parse(seen[0], KEYS);
        assertThat(token.lock()).isEqualTo("exec-env");
        assertThat(seen[1]).isEqualTo(Long.toString(token.value()));
        assertThat(seen[2]).isEqualTo("exec-env");
        LockStatus after = fencer.describe("exec-env");
        assertThat(after.holder()).as("released when the command ended").isNull();
        assertThat(after.lastToken()).isEqualTo(token.value());
    }

    @Test
    void lockExec_commandNotFound_exitsOneWithMessageAndStackTraceOnlyWhenVerbose() {
        CommandRun quiet = CommandRun.run("lock", "exec", "exec-missing", "--server", endpoint, "--",
                "/nonexistent/fencer-test-command");
        CommandRun verbose = CommandRun.run("lock", "exec", "exec-missing", "--verbose", "--server", endpoint, "--",
                "/nonexistent/fencer-test-command");

        assertThat(quiet.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(quiet.err()).startsWith("fencer: cannot run /nonexistent/fencer-test-command")
                .doesNotContain("\tat ");
        assertThat(verbose.exitCode()).isEqualTo(Main.EXIT_ERROR);
        assertThat(verbose.err()).contains("\tat ");
        assertThat(fencer.describe("exec-missing").holder()).isNull();
    }

    @Test
    void lockAcquireAndExec_sessionExpiresOnTheServer_reportLeaseLostAndExitThree() throws Exception {
        BackgroundRun holder = BackgroundRun.start(new CompletableFuture<>(), "lock", "acquire", "lose-me",
                "--ttl", "2s", "--server", endpoint);
        BackgroundRun exec = BackgroundRun.start(new CompletableFuture<>(), "lock", "exec", "lose-me-too",
                "--ttl", "2s", "--kill-after", "1s", "--server", endpoint, "--", "sleep", "60");
        await().atMost(GENEROUS).until(() -> holder.out().contains("lose-me#")
                && fencer.describe("lose-me-too").holder() != null);
        FencingToken execToken = fencer.describe("lose-me-too").holder();

        SKEW_NANOS.addAndGet(Duration.ofSeconds(5).toNanos()); // the server now judges both sessions silent for 5 s

        assertThat(holder.exitCode().get(GENEROUS.toSeconds(), TimeUnit.SECONDS)).as(holder.err())
                .isEqualTo(Main.EXIT_LEASE_LOST);
        assertThat(holder.err()).contains("fencer: lease on lose-me#").contains(" lost: ");
        assertThat(exec.exitCode().get(GENEROUS.toSeconds(), TimeUnit.SECONDS)).as(exec.err())
                .isEqualTo(Main.EXIT_LEASE_LOST);
        assertThat(exec.err()).contains("fencer: lease on " + execToken + " lost: ").contains("; stopping sleep");
    }

    @Test
    void lockExec_sessionExpiresWithLostExitCode_exitsWithTheChosenCode() throws Exception {
        BackgroundRun exec = BackgroundRun.start(new CompletableFuture<>(), "lock", "exec", "lose-me-chosen",
                "--ttl", "2s", "--kill-after", "1s", "--lost-exit-code", "70", "--server", endpoint, "--",
                "sleep", "60");
        await().atMost(GENEROUS).until(() -> fencer.describe("lose-me-chosen").holder() != null
                || exec.exitCode().isDone());

        SKEW_NANOS.addAndGet(Duration.ofSeconds(5).toNanos()); // the server now judges the session silent for 5 s

        assertThat(exec.exitCode().get(GENEROUS.toSeconds(), TimeUnit.SECONDS)).as(exec.err()).isEqualTo(70);
        assertThat(exec.err()).contains("fencer: lease on lose-me-chosen#").contains(" lost: ");
    }

    // Regression: fencer backup left FILE.tmp behind when the file could not be put in place.
    @Test
    void backup_outCannotBeReplaced_failsLeavingNoTemporaryFileAndTheTargetAsItWas(@TempDir Path directory)
            throws Exception {
        Path out = directory.resolve("fencer.fbk");
        Files.createDirectory(out); // a non-empty directory: the rename onto it fails
        Files.writeString(out.resolve("kept"), "as it was");

        CommandRun run = CommandRun.run("backup", "--out", out.toString(), "--server", endpoint);

        assertThat(run.exitCode()).as(run.out()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).startsWith("fencer: ").contains("fencer.fbk");
        try (java.util.stream.Stream<Path> left = Files.list(directory)) {
            assertThat(left).as("nothing beside the target").containsExactly(out);
        }
        assertThat(Files.readString(out.resolve("kept"))).isEqualTo("as it was");
    }

    private static long jsonLong(String json, String name) {
        Matcher matcher = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertThat(matcher.find()).as("%s in %s", name, json).isTrue();
        return Long.parseLong(matcher.group(1));
    }

    /** A command run on its own thread, whose output can be read while it runs. */
    record BackgroundRun(StringWriter outWriter, StringWriter errWriter,
            CompletableFuture<Integer> exitCode) {
        static BackgroundRun start(CompletableFuture<String> stop, String... args) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CompletableFuture<Integer> exitCode = new CompletableFuture<>();
            Thread thread = new Thread(() -> exitCode.complete(Main.execute(new Main(() -> stop),
                    new PrintWriter(out, true), new PrintWriter(err, true), args)), "fencer-command");
            thread.setDaemon(true);
            thread.start();
            return new BackgroundRun(out, err, exitCode);
        }

        String out() {
            return outWriter.toString();
        }

        String err() {
            return errWriter.toString();
        }
    }
}

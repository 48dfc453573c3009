package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The README's command-line and HTTP quick starts run as a person would paste them, line by line, with real
 * processes: a README change that breaks one of them breaks the build.
 *
 * <p>What the runner does for the person (and nothing else): {@code ./fencer} is this build's command (a script
 * running this JVM's class path); the README's ports (7070 and its neighbours, 7170, 7270) are moved to free ones,
 * through {@code FENCER_SERVER} and {@code FENCER_STORE} for commands that name none and {@code --port} for a server
 * that names none; {@code /tmp/} is a directory of the test's own. A {@code ./fencer server} line runs in the background, and
 * the next client line waits until every server started printed "serving on" (a server that creates the group
 * secret file is waited for until the file exists, as a person starts the next peer after the first). A line whose
 * comment says {@code holds until Ctrl-C} gets SIGINT once it printed its first line, and must exit 0; a comment
 * {@code exit N} expects N, any other line 0; a comment {@code prints "X"} expects its output to start with X.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class ReadmeExamplesProcessTest {
    private static final Duration LINE_TIMEOUT = Duration.ofSeconds(90);
    private static final Pattern COMMENT = Pattern.compile("^(.*?)\\s+#\\s(.*)$");
    private static final Pattern EXIT = Pattern.compile("exit (\\d+)");
    private static final Pattern PRINTS = Pattern.compile("prints \"([^\"]+)\"");
    private static final Pattern README_PORT = Pattern.compile("\\b7([0-2])7([0-3])\\b");

    @TempDir
    Path dir;
    private final List<Process> servers = new ArrayList<>();
    private int base;

    @AfterEach
    void stopServers() {
        for (Process server : servers) {
            server.descendants().forEach(ProcessHandle::destroyForcibly);
            server.destroyForcibly();
        }
    }

    @Test
    void commandLineQuickStart_firstBlock_runsAsWritten() throws Exception {
        List<String> blocks = Readme.blocks("Quick start: the command line", "sh");
        assertThat(blocks).as("the quick start's blocks: one peer, three peers").hasSize(2);

        List<String> ran = runLines(blocks.get(0));

        assertThat(ran).as("every line ran").hasSize((int) blocks.get(0).strip().lines().count());
        assertThat(ran).as("the control: the block is the quick start").anyMatch(line -> line.contains("exit 5"));
    }

    @Test
    void commandLineQuickStart_threePeers_runsAsWritten() throws Exception {
        String block = Readme.blocks("Quick start: the command line", "sh").get(1);

        List<String> ran = runLines(block);

        assertThat(ran).hasSize((int) block.strip().lines().count());
        assertThat(servers).as("three peers").hasSize(3);
    }

    @Test
    void httpQuickStart_runsAsWrittenAndAnswersAsShown() throws Exception {
        String block = Readme.blocks("Quick start: HTTP", "sh").get(0);
        base = freeBase();
        startServer("./fencer server --data /tmp/fencer");
        awaitServers();

        Result result = run("bash", "-euo", "pipefail", "-c", ports(block));

        assertThat(result.exitCode()).as(result.output()).isZero();
        List<String> shown = block.lines().filter(line -> line.startsWith("# {")).toList();
        assertThat(shown).as("the answers the README shows").hasSizeGreaterThanOrEqualTo(3);
        for (String answer : shown) {
            String firstField = answer.substring(2, answer.indexOf(':') + 1);
            assertThat(result.output()).as("the answer shown as %s", answer).contains(firstField);
        }
        assertThat(result.output()).contains("\"acquired\":true", "\"opsApplied\":1");
    }

    /** Runs {@code block} line by line as the class comment says; returns the lines run. */
    private List<String> runLines(String block) throws Exception {
        base = freeBase();
        List<String> ran = new ArrayList<>();
        for (String line : block.strip().lines().toList()) {
            Matcher commented = COMMENT.matcher(line);
            String command = commented.matches() ? commented.group(1).strip() : line.strip();
            String comment = commented.matches() ? commented.group(2) : "";
            if (command.endsWith("&")) {
                command = command.substring(0, command.length() - 1).strip();
            }
            if (command.startsWith("./fencer server")) {
                startServer(command);
            } else {
                awaitServers();
                runClientLine(command, comment);
            }
            ran.add(line);
        }
        return ran;
    }

    private void runClientLine(String command, String comment) throws Exception {
        Matcher prints = PRINTS.matcher(comment);
        if (comment.contains("holds until Ctrl-C")) {
            Process process = start(ports(command), dir.resolve("holder.log"));
            String first = new String(process.getInputStream().readNBytes(
                    prints.find() ? prints.group(1).length() : 1), StandardCharsets.UTF_8);
            prints.reset();
            if (prints.find()) {
                assertThat(first).as(command).isEqualTo(prints.group(1));
            }
            new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).start().waitFor();
            assertThat(process.waitFor(LINE_TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as(command).isTrue();
            assertThat(process.exitValue()).as("%s after Ctrl-C: %s", command,
                    Files.readString(dir.resolve("holder.log"))).isZero();
            return;
        }
        Result result = run("bash", "-c", "exec " + ports(command));
        Matcher exit = EXIT.matcher(comment);
        int expected = exit.find() ? Integer.parseInt(exit.group(1)) : 0;
        assertThat(result.exitCode()).as("%s%n%s", command, result.output()).isEqualTo(expected);
        if (prints.find()) {
            assertThat(result.output()).as(command).startsWith(prints.group(1));
        }
    }

    private void startServer(String command) throws Exception {
        String moved = ports(command);
        if (!moved.contains("--port")) {
            moved += " --port " + base;
        }
        Path log = dir.resolve("server-" + servers.size() + ".log");
        servers.add(start(moved, log));
        Matcher secret = Pattern.compile("--raft-secret-file (\\S+)").matcher(moved);
        if (secret.find()) {
            Path file = dir.resolve(secret.group(1));
            await(() -> Files.exists(file), "the group secret " + file + "; " + Files.readString(log));
        }
    }

    private void awaitServers() throws Exception {
        for (int i = 0; i < servers.size(); i++) {
            Path log = dir.resolve("server-" + i + ".log");
            await(() -> Files.readString(log).contains("serving on"), "server " + i + " serving; see " + log);
        }
    }

    /** Returns {@code text} with the README's ports moved to this run's and {@code /tmp/} to the test's directory. */
    private String ports(String text) {
        Matcher port = README_PORT.matcher(text.replace("/tmp/", dir + "/tmp/"));
        StringBuilder moved = new StringBuilder();
        while (port.find()) {
            int peer = Integer.parseInt(port.group(1));
            int offset = Integer.parseInt(port.group(2));
            port.appendReplacement(moved, Integer.toString(base + 100 * peer + offset));
        }
        port.appendTail(moved);
        return moved.toString();
    }

    private Process start(String command, Path log) throws IOException {
        Files.createDirectories(dir.resolve("tmp"));
        // SIGINT back to its default first: a suite started in the background of a shell without job control
        // ignores SIGINT, its children inherit that, and a JVM that starts with SIGINT ignored never sees the Ctrl-C
        // the README's holders wait for (found when a run of the suite so started waited out both holders).
        ProcessBuilder builder = new ProcessBuilder("env", "--default-signal=INT", "bash", "-c", "exec " + command)
                .directory(dir.toFile()).redirectError(log.toFile());
        environment(builder.environment());
        if (command.startsWith("./fencer server")) {
            builder.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        }
        return builder.start();
    }

    private Result run(String... command) throws Exception {
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        environment(builder.environment());
        Process process = builder.start();
        byte[] output = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(LINE_TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as(String.join(" ", command))
                .isTrue();
        return new Result(process.exitValue(), new String(output, StandardCharsets.UTF_8));
    }

    /** The environment of every line: the README's default address moved, and {@code ./fencer} this build. */
    private void environment(Map<String, String> environment) throws IOException {
        environment.put("FENCER_SERVER", "127.0.0.1:" + base);
        environment.put("FENCER_STORE", "127.0.0.1:" + base);
        Path script = dir.resolve("fencer");
        if (!Files.exists(script)) {
            Files.writeString(script, "#!/bin/sh\nexec '" + ChildJvm.java() + "' '" + String.join("' '", ChildJvm.options())
                    + "' -cp '" + ChildJvm.classPath() + "' io.fencer.cli.Main \"$@\"\n");
            Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    /** Returns a port P such that P to P + 3, P + 100 to P + 103 and P + 200 to P + 203 were free a moment ago. */
    private static int freeBase() throws IOException {
        for (int attempt = 0; attempt < 100; attempt++) {
            int candidate = 20_000 + ThreadLocalRandom.current().nextInt(10_000);
            if (allFree(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError("no free block of ports in 100 attempts");
    }

    private static boolean allFree(int candidate) {
        for (int peer = 0; peer < 3; peer++) {
            for (int offset = 0; offset < 4; offset++) {
                try (ServerSocket socket = new ServerSocket(candidate + 100 * peer + offset, 1,
                        InetAddress.getLoopbackAddress())) {
                    socket.setReuseAddress(true);
                } catch (IOException taken) {
                    return false;
                }
            }
        }
        return true;
    }

    @FunctionalInterface
    private interface Check {
        boolean holds() throws Exception;
    }

    private static void await(Check check, String what) throws Exception {
        long deadline = System.nanoTime() + LINE_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (check.holds()) {
                return;
            }
            FencerProcess.pause(100);
        }
        throw new AssertionError("not within " + LINE_TIMEOUT + ": " + what);
    }

    private record Result(int exitCode, String output) {}
}

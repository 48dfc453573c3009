package io.fencer.it;

import io.fencer.testing.FreePorts;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A real OS process running the {@code fencer} command (a server or a client), started with this JVM's class path,
 * so tests can pause it (SIGSTOP), resume it (SIGCONT) and kill it (SIGKILL) like an operator or a GC pause would.
 */
final class FencerProcess implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final String name;
    private final Process process;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Path log;

    private FencerProcess(String name, List<String> arguments, Path log) throws IOException {
        this(name, List.of(), ChildJvm.classPath(), ChildJvm.options(), arguments, log);
    }

    private FencerProcess(String name, List<String> prefix, String classPath, List<String> jvmOptions,
            List<String> arguments, Path log) throws IOException {
        this.name = name;
        this.log = log;
        List<String> command = new ArrayList<>(prefix);
        command.add(ChildJvm.java());
        command.add("-ea");
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", classPath, "io.fencer.cli.Main"));
        command.addAll(arguments);
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(log.toFile());
        process = builder.start();
        Thread reader = new Thread(this::readOutput, "stdout-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts {@code fencer ARGS...} as a process named {@code name}; its stderr goes to {@code dir/name.log}. */
    static FencerProcess start(String name, Path dir, List<String> arguments) throws IOException {
        Files.createDirectories(dir);
        return new FencerProcess(name, arguments, dir.resolve(name + ".log"));
    }

    /**
     * As {@link #start}, with the command run by {@code prefix} (e.g. {@code ip netns exec NAMESPACE}, to start the
     * process on a host of a test network).
     */
    static FencerProcess start(String name, Path dir, List<String> prefix, List<String> arguments)
            throws IOException {
        Files.createDirectories(dir);
        return new FencerProcess(name, prefix, ChildJvm.classPath(), ChildJvm.options(), arguments,
                dir.resolve(name + ".log"));
    }

    /** Starts a lock server on {@code ports} with {@code data}, and waits until it reports a known leader. */
    static FencerProcess server(String name, Path data, Ports ports, String... extra) throws IOException {
        return start(name, data.getParent(), serverArguments(data, ports, extra));
    }

    /** As {@link #server}, running the release in the jar {@code releaseJar} instead of this build's classes. */
    static FencerProcess serverOfRelease(Path releaseJar, String name, Path data, Ports ports, String... extra)
            throws IOException {
        Files.createDirectories(data.getParent());
        // the quick-start options without the archive: it holds this build's classes, not the release's
        return new FencerProcess(name, List.of(), releaseJar.toString(), ChildJvm.QUICK_START,
                serverArguments(data, ports, extra), data.getParent().resolve(name + ".log"));
    }

    private static List<String> serverArguments(Path data, Ports ports, String... extra) {
        List<String> arguments = new ArrayList<>(List.of("server", "--data", data.toString(),
                "--port", Integer.toString(ports.client()), "--admin-port", Integer.toString(ports.admin()),
                "--raft-port", Integer.toString(ports.raft())));
        arguments.addAll(httpOffUnlessAsked(extra));
        return arguments;
    }

    /**
     * Starts a store server ({@code fencer store-server}) on the client and admin ports of {@code ports} with
     * {@code data}; the caller waits for {@link #awaitHealthy(int)} on the admin port.
     */
    static FencerProcess storeServer(String name, Path data, Ports ports, String... extra) throws IOException {
        List<String> arguments = new ArrayList<>(List.of("store-server", "--data", data.toString(),
                "--port", Integer.toString(ports.client()), "--admin-port", Integer.toString(ports.admin())));
        arguments.addAll(httpOffUnlessAsked(extra));
        return start(name, data.getParent(), arguments);
    }

    /**
     * Returns {@code extra} with the HTTP port off unless it names one: its default, the client port + 3, is not
     * among the free ports a test picked and could be another process's.
     */
    private static List<String> httpOffUnlessAsked(String... extra) {
        List<String> arguments = new ArrayList<>(List.of(extra));
        if (arguments.stream().noneMatch(argument -> argument.startsWith("--http-port"))) {
            arguments.addAll(List.of("--http-port", "0"));
        }
        return arguments;
    }

    private void readOutput() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                lines.add(line);
            }
        } catch (IOException e) {
            // the process died; its lines so far stay readable
        }
    }

    /** Waits until the admin endpoint answers /healthz with 200 (a leader is known). */
    void awaitHealthy(int adminPort) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited with " + process.exitValue() + "; log:\n" + logText());
            }
            if (healthStatus(adminPort) == 200) {
                return;
            }
            pause(100);
        }
        throw new AssertionError(name + " not healthy within " + START_TIMEOUT + "; log:\n" + logText());
    }

    /** Returns the body of /healthz, or empty when it does not answer. */
    static String health(int adminPort) {
        return adminBody(adminPort, "/healthz");
    }

    /** Returns the body of /healthz at {@code host:adminPort} (a host of a test network), or empty. */
    static String health(String host, int adminPort) {
        return adminBody(host, adminPort, "/healthz");
    }

    /** Returns the body of /metrics (Prometheus text), or empty when it does not answer. */
    static String metrics(int adminPort) {
        return adminBody(adminPort, "/metrics");
    }

    /** Returns the value of the Prometheus line of {@code series} (no labels) on the admin port; fails without one. */
    static double metric(int adminPort, String series) {
        for (String line : metrics(adminPort).split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        throw new AssertionError("no metric " + series + " on admin port " + adminPort);
    }

    private static String adminBody(int adminPort, String path) {
        return adminBody("127.0.0.1", adminPort, path);
    }

    private static String adminBody(String host, int adminPort, String path) {
        try {
            HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                    URI.create("http://" + host + ":" + adminPort + path)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return response.body();
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    private static int healthStatus(int adminPort) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + "/healthz"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** Waits for the first stdout line and returns it. */
    String awaitLine(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (lines.isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(name + " printed nothing within " + timeout + "; log:\n" + logText());
            }
            if (!process.isAlive() && lines.isEmpty()) {
                pause(200); // let the reader drain what the process wrote before exiting
                if (lines.isEmpty()) {
                    throw new AssertionError(name + " exited with " + process.exitValue() + "; log:\n" + logText());
                }
            }
            pause(20);
        }
        return lines.get(0);
    }

    /** Returns the standard output lines printed so far. */
    List<String> lines() {
        return List.copyOf(lines);
    }

    long pid() {
        return process.pid();
    }

    /** Freezes the process (SIGSTOP), as a long GC pause or a descheduled VM would. */
    void pause() {
        signal("STOP");
    }

    /** A command run to its end: its exit status, its standard output's lines joined, and its log (standard error). */
    record Finished(int exit, String out, String err) {}

    /** Waits for the process to exit, at most {@code timeout}, and returns its status and output. */
    Finished finish(Duration timeout) {
        int exit = awaitExit(timeout);
        return new Finished(exit, String.join("\n", lines()), logText());
    }

    /** Resumes a frozen process (SIGCONT). */
    void resume() {
        signal("CONT");
    }

    /** Asks the process to stop (SIGTERM), as an operator's upgrade does, and waits for it to exit. */
    int terminate(Duration timeout) {
        signal("TERM");
        return awaitExit(timeout);
    }

    /** Kills the process at once (SIGKILL): no shutdown hook, no flush. */
    void kill9() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(30));
    }

    /**
     * Sends SIGKILL without waiting for the exit: a process with a thread blocked on a frozen file system exits only
     * once the file system thaws ({@link #awaitExit} then).
     */
    void sendKill() {
        process.destroyForcibly();
    }

    /** Waits for the process to exit and returns its status. */
    int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError(name + " still running after " + timeout + "; log:\n" + logText());
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Whether the whole of the process's stderr so far contains {@code text} ({@link #logText} keeps its end). */
    boolean logContains(String text) {
        try {
            return Files.exists(log) && Files.readString(log).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    String logText() {
        try {
            String text = Files.exists(log) ? Files.readString(log) : "";
            return text.length() > 8000 ? "..." + text.substring(text.length() - 8000) : text;
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    /** Sends {@code signal} (a name such as {@code HUP}) to the process, as {@code kill -SIGNAL PID} would. */
    void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new AssertionError("kill -" + signal + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new AssertionError("kill -" + signal + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            signal("CONT"); // a frozen process cannot die of SIGTERM
            process.destroyForcibly();
            awaitExit(Duration.ofSeconds(30));
        }
    }

    /** The three ports of one server: gRPC clients, admin HTTP, Raft. */
    record Ports(int client, int admin, int raft) {
        /** Returns three ports free a moment ago, below the ephemeral range (an outgoing connection cannot take them). */
        static Ports free() {
            int[] ports = FreePorts.choose(3);
            return new Ports(ports[0], ports[1], ports[2]);
        }

        String endpoint() {
            return "127.0.0.1:" + client;
        }
    }
}

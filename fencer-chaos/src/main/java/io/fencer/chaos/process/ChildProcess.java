package io.fencer.chaos.process;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A real OS process of the harness (a server, a worker, a demo client) that it can freeze (SIGSTOP), resume
 * (SIGCONT) and kill (SIGKILL), like a GC pause, a descheduled VM or a crash would. Its standard error goes to a
 * log file; its standard output lines go to a listener and to a queue the harness can wait on.
 */
public final class ChildProcess implements AutoCloseable {
    private static final Duration SIGNAL_TIMEOUT = Duration.ofSeconds(10);

    private final String name;
    private final Process process;
    private final Path log;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Consumer<String> listener;

    private ChildProcess(String name, Process process, Path log, Consumer<String> listener) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.listener = listener;
        Thread reader = new Thread(this::readOutput, "stdout-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Starts {@code launcher}'s command with {@code arguments} as process {@code name}; standard error is appended
     * to {@code logDirectory/name.log}, and each standard output line is passed to {@code listener} (on the
     * reader's thread) before it is queued.
     */
    public static ChildProcess start(String name, Launcher launcher, List<String> arguments, Path logDirectory,
            Consumer<String> listener) throws IOException {
        Files.createDirectories(logDirectory);
        Path log = logDirectory.resolve(name + ".log");
        Process process = new ProcessBuilder(launcher.command(arguments))
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new ChildProcess(name, process, log, listener);
    }

    private void readOutput() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                listener.accept(line);
                lines.add(line);
            }
        } catch (IOException e) {
            // the process died; the lines so far stay queued
        }
    }

    public String name() {
        return name;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Waits for the next standard output line.
     *
     * @throws IllegalStateException naming the process and its log's tail when none comes within {@code timeout}
     */
    public String awaitLine(Duration timeout) {
        try {
            String line = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (line == null) {
                throw new IllegalStateException(name + (process.isAlive() ? " printed nothing within " + timeout
                        : " exited with status " + process.exitValue()) + "; its log ends:\n" + logTail());
            }
            return line;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + name, e);
        }
    }

    /** Sends one line to the process's standard input. */
    public void send(String line) {
        try {
            OutputStream in = process.getOutputStream();
            in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write to " + name, e);
        }
    }

    /** Closes the process's standard input (the workers' signal to stop). */
    void closeInput() {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // already gone
        }
    }

    /** Freezes the process (SIGSTOP). */
    public void pause() {
        signal("STOP");
    }

    /** Resumes a frozen process (SIGCONT). */
    public void resume() {
        signal("CONT");
    }

    /** Kills the process at once (SIGKILL: no shutdown hook, no flush) and waits until it is gone. */
    void kill() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(30));
    }

    /** Waits for the process to exit; returns its status, or -1 when it is still running after {@code timeout}. */
    int awaitExit(Duration timeout) {
        try {
            return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** Returns the last few KiB of the process's log. */
    String logTail() {
        try {
            String text = Files.exists(log) ? Files.readString(log) : "";
            return text.length() > 4000 ? "..." + text.substring(text.length() - 4000) : text;
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                    .redirectErrorStream(true).start();
            if (!kill.waitFor(SIGNAL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " (" + name + ") failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("kill -" + signal + " " + process.pid() + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling " + name, e);
        }
    }

    /** Kills the process if it still runs (resuming it first: a frozen process cannot act on anything). */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                signal("CONT");
            } catch (RuntimeException e) {
                // it died meanwhile
            }
            process.destroyForcibly();
            awaitExit(Duration.ofSeconds(30));
        }
    }
}

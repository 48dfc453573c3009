package io.fencer.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A holder in a JVM of its own, started from the test class path: the test writes commands to its standard input
 * and reads its answers, one a line, from its standard output, and can freeze it (SIGSTOP) as a long GC pause would,
 * resume it (SIGCONT) or kill it (SIGKILL). For tests of resources that must refuse a paused holder: its main class
 * reads commands and prints answers, and its standard error goes to {@code dir/name.log}.
 */
public final class HolderProcess implements AutoCloseable {
    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Path log;

    private HolderProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread reader = new Thread(this::readLines, "holder-stdout-" + process.pid());
        reader.setDaemon(true);
        reader.start();
    }

    public static HolderProcess start(Path dir, String name, Class<?> main, String... args) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                main.getName()));
        command.addAll(List.of(args));
        Path log = dir.resolve(name + ".log");
        try {
            return new HolderProcess(new ProcessBuilder(command).redirectError(log.toFile()).start(), log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void readLines() {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) {
                lines.add(line);
            }
        } catch (IOException e) {
            // the process died; awaitLine reports it
        }
    }

    public void send(String command) {
        try {
            stdin.write(command + "\n");
            stdin.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("holder " + process.pid() + " no longer reads: " + logText(), e);
        }
    }

    /** Returns the next line that starts with {@code prefix}, skipping others; fails after {@code timeout}. */
    public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("no line starting '" + prefix + "' from holder within " + timeout
                        + " (alive " + process.isAlive() + "); its log: " + logText());
            }
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    public void pause() {
        signal("STOP");
    }

    public void resume() {
        signal("CONT");
    }

    public void kill9() throws InterruptedException {
        signal("KILL");
        process.waitFor(30, TimeUnit.SECONDS);
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new AssertionError("kill -" + signal + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    public String logText() {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            signal("CONT");
            process.destroyForcibly();
        }
    }
}

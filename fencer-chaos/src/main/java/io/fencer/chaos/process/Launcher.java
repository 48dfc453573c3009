package io.fencer.chaos.process;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How to start a {@code fencer} subcommand as a new OS process: the java binary, JVM options, the class path and
 * the main class of the distribution this process runs from. The harness starts servers, workers and clients
 * with it, so they are the same build as the harness.
 *
 * @param commandPrefix everything before the subcommand, e.g. {@code [java, -Xmx256m, -cp, CP, io.fencer.cli.Main]}
 */
public record Launcher(List<String> commandPrefix) {
    /** JVM options for child processes: small heaps and quick start-up, so a 2-core machine runs a dozen. */
    static final List<String> CHILD_JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData");

    public Launcher {
        commandPrefix = List.copyOf(commandPrefix);
        if (commandPrefix.isEmpty()) {
            throw new IllegalArgumentException("empty launcher command");
        }
    }

    /**
     * Returns the launcher of {@code mainClass} with this JVM's java binary and class path (made absolute, so
     * children may run in any directory).
     */
    public static Launcher ofCurrentJvm(String mainClass) {
        return ofCurrentJvm(mainClass, CHILD_JVM_OPTIONS);
    }

    /**
     * Returns the launcher of {@code mainClass} with this JVM's java binary and class path and the JVM options
     * {@code jvmOptions} instead of the harness's quick-start ones (a bench's servers run with the full JIT).
     */
    public static Launcher ofCurrentJvm(String mainClass, List<String> jvmOptions) {
        Objects.requireNonNull(mainClass, "mainClass");
        List<String> prefix = new ArrayList<>();
        prefix.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        prefix.addAll(jvmOptions);
        prefix.add("-cp");
        prefix.add(absoluteClassPath(System.getProperty("java.class.path")));
        prefix.add(mainClass);
        return new Launcher(prefix);
    }

    /**
     * Returns this launcher with {@code options} added to the JVM's options, right after the java binary (so this
     * launcher must not be wrapped in another command yet).
     */
    public Launcher withJvmOptions(List<String> options) {
        List<String> prefix = new ArrayList<>(commandPrefix);
        prefix.addAll(1, options);
        return new Launcher(prefix);
    }

    /** Returns the full command for {@code arguments}. */
    List<String> command(List<String> arguments) {
        List<String> command = new ArrayList<>(commandPrefix);
        command.addAll(arguments);
        return command;
    }

    private static String absoluteClassPath(String classPath) {
        List<String> entries = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                entries.add(Path.of(entry).toAbsolutePath().toString());
            }
        }
        return String.join(File.pathSeparator, entries);
    }
}

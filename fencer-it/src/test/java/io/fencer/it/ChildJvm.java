package io.fencer.it;

import io.fencer.chaos.process.Launcher;
import io.fencer.cli.Main;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * How these tests start a {@code fencer} process of this build: {@link #classPath()}, the quick-start JVM options
 * and a class-data-sharing archive of the classes a server and a client command load ({@link #options()}). A run
 * starts some 240 such processes on two cores, and each spent most of its start reading, parsing and verifying the
 * same 4,000–7,000 classes from the jars: with the archive mapped, a server's start costs about 1.1 s of CPU instead
 * of 1.9 s, a client command 0.6 s instead of 0.9 s, and the module's tests took 5:56 instead of 7:04 (7:07 of CPU
 * instead of 9:41), measured on 2026-12-07.
 *
 * <p>The archive is made once, by the first test that starts a process (the others wait for it): a throwaway
 * server and a {@code lock exec} running {@code kv put} record the classes they load, and {@code java -Xshare:dump}
 * archives them, as the {@code fencer} launcher does for its client commands. It is kept under {@code target/cds},
 * named by a digest of the Java runtime and of every class-path entry's path, size and time, so a rebuilt jar
 * gets a new one. A static archive rather than {@code -XX:ArchiveClassesAtExit}: Java 17 leaves picocli's classes
 * (Java 5 class files) out of a dynamic one. Without an archive (training failed, or another Java) the processes
 * start as before: a JVM that cannot map it runs without it, which changes only how fast it starts.
 */
final class ChildJvm {
    /** Small heaps and a quick start, so a 2-core machine runs a dozen at once. */
    static final List<String> QUICK_START = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(90);
    private static final Pattern SERVING = Pattern.compile("serving on (127\\.0\\.0\\.1:\\d+) ");
    private static final Pattern CLASS_ID = Pattern.compile(" id: \\d+$");
    private static Optional<Path> archive;

    private ChildJvm() {}

    /** The JVM options of a process started from this JVM's class path: {@link #QUICK_START} and the archive. */
    static List<String> options() {
        List<String> options = new ArrayList<>(QUICK_START);
        // the JVM's own warnings (an archive it cannot map) go to the log, never to the output a test reads
        archive().ifPresent(path -> options.addAll(List.of("-XX:SharedArchiveFile=" + path, "-Xlog:disable",
                "-Xlog:all=warning:stderr")));
        return options;
    }

    /** The chaos harness's launcher of {@code fencer} with {@link #options()} and {@link #classPath()}. */
    static Launcher launcher() {
        List<String> prefix = new ArrayList<>(List.of(java()));
        prefix.addAll(options());
        prefix.addAll(List.of("-cp", classPath(), Main.class.getName()));
        return new Launcher(prefix);
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Returns the archive for this JVM's class path, making it first if there is none; empty if it cannot. */
    static synchronized Optional<Path> archive() {
        if (archive == null) {
            archive = make();
        }
        return archive;
    }

    private static Optional<Path> make() {
        Path dir = Path.of("target", "cds").toAbsolutePath();
        Path work = null;
        try {
            Files.createDirectories(dir);
            Path target = dir.resolve("fencer-it-" + digest(classPath()) + ".jsa");
            if (Files.isRegularFile(target)) {
                return Optional.of(target);
            }
            work = Files.createTempDirectory(dir, "training");
            Path made = train(work, target);
            removeOthers(dir, made);
            return Optional.of(made);
        } catch (IOException | RuntimeException e) {
            System.err.println("fencer-it: no class-data archive, processes start without one: " + e);
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } finally {
            deleteQuietly(work);
        }
    }

    /** Trains, dumps and checks the archive in {@code work}, then moves it to {@code target} in one step. */
    private static Path train(Path work, Path target) throws IOException, InterruptedException {
        Process server = start(work, "server", List.of("server", "--data", work.resolve("data").toString(),
                "--port", "0", "--admin-port", "0", "--http-port", "0", "--raft-port", "0"));
        try {
            String endpoint = servingEndpoint(server);
            List<String> put = new ArrayList<>(command(work, "put"));
            put.addAll(List.of("kv", "put", "cds-training", "k", "v", "--store", endpoint));
            List<String> exec = new ArrayList<>(List.of("lock", "exec", "cds-training", "--server", endpoint, "--",
                    "sh", "-c", "exec \"$@\" --token \"$FENCER_TOKEN\"", "sh"));
            exec.addAll(put);
            run(start(work, "exec", exec), work.resolve("exec.log"));
        } finally {
            server.destroy();
            server.waitFor(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        // One list, each line once. Java 19 and later number each class of a list from the list's own start
        // ("name id: N"), so two lists give one number to two classes and the dump refuses the merge; the numbers
        // serve only classes of other loaders than the JDK's, which these lists do not hold, so they are dropped.
        Set<String> classes = new LinkedHashSet<>();
        try (Stream<Path> lists = Files.list(work)) {
            for (Path list : lists.filter(path -> path.toString().endsWith(".classes")).sorted().toList()) {
                Files.readAllLines(list).forEach(line -> classes.add(CLASS_ID.matcher(line).replaceFirst("")));
            }
        }
        Path list = Files.write(work.resolve("all.list"), classes);
        Path dumped = work.resolve("archive.jsa");
        run(java(work, "dump", jarClassPath(), List.of("-Xshare:dump", "-XX:SharedClassListFile=" + list,
                "-XX:SharedArchiveFile=" + dumped)), work.resolve("dump.log"));
        // -Xshare:on fails rather than running without when a JVM cannot map the archive: never keep one that the
        // processes, with their class path, could not
        run(java(work, "check", classPath(), List.of("-Xshare:on", "-XX:SharedArchiveFile=" + dumped,
                Main.class.getName(), "--version")), work.resolve("check.log"));
        return Files.move(dumped, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** {@code java QUICK_START -XX:DumpLoadedClassList=WORK/NAME.classes -cp CP fencer}: a command recording. */
    private static List<String> command(Path work, String name) {
        return javaCommand(List.of("-XX:DumpLoadedClassList=" + work.resolve(name + ".classes"),
                Main.class.getName()));
    }

    private static List<String> javaCommand(List<String> tail) {
        return javaCommand(jarClassPath(), tail);
    }

    private static List<String> javaCommand(String classPath, List<String> tail) {
        List<String> command = new ArrayList<>(List.of(java()));
        command.addAll(QUICK_START);
        command.addAll(List.of("-cp", classPath));
        command.addAll(tail);
        return command;
    }

    private static Process start(Path work, String name, List<String> arguments) throws IOException {
        List<String> command = new ArrayList<>(command(work, name));
        command.addAll(arguments);
        return new ProcessBuilder(command).redirectError(work.resolve(name + ".log").toFile()).start();
    }

    private static Process java(Path work, String name, String classPath, List<String> tail) throws IOException {
        return new ProcessBuilder(javaCommand(classPath, tail)).redirectErrorStream(true)
                .redirectOutput(work.resolve(name + ".log").toFile()).start();
    }

    private static String servingEndpoint(Process server) throws IOException {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line = out.readLine(); // the server's first line says where it serves, or it died
            Matcher matcher = SERVING.matcher(line == null ? "" : line);
            if (!matcher.find()) {
                throw new IOException("the training server did not say where it serves: " + line);
            }
            return matcher.group(1);
        }
    }

    /** Waits for a training step to succeed; {@code log} is its output, quoted when it does not. */
    private static void run(Process process, Path log) throws IOException, InterruptedException {
        boolean ended = process.waitFor(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        if (!ended) {
            process.destroyForcibly();
        }
        if (!ended || process.exitValue() != 0) {
            String text = Files.exists(log) ? Files.readString(log) : "";
            throw new IOException("the training step logged to " + log.getFileName()
                    + (ended ? " exited with " + process.exitValue() : " did not end within " + STEP_TIMEOUT)
                    + "; its output ends:\n" + text.substring(Math.max(0, text.length() - 2000)));
        }
    }

    /**
     * This JVM's class path with its jars first and its directories (test classes) last, each entry absolute: the
     * archive is dumped with the jars alone ({@link #jarClassPath()}), and a JVM maps it when its class path begins
     * with the dump's (Java 25 refuses a non-empty directory among the dump's entries, Java 17 one before its last
     * jar). No class these processes load is in two entries.
     */
    static String classPath() {
        return String.join(File.pathSeparator, entries(true));
    }

    /** The jars of this JVM's class path, in order, absolute: the class path the archive is trained and dumped with. */
    private static String jarClassPath() {
        return String.join(File.pathSeparator, entries(false));
    }

    private static List<String> entries(boolean withDirectories) {
        List<String> jars = new ArrayList<>();
        List<String> directories = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                Path path = Path.of(entry).toAbsolutePath();
                (Files.isDirectory(path) ? directories : jars).add(path.toString());
            }
        }
        if (withDirectories) {
            jars.addAll(directories);
        }
        return jars;
    }

    /** A digest of the runtime and of each class-path entry's path, size and time: what a JVM checks on mapping. */
    private static String digest(String classPath) throws IOException {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            StringBuilder facts = new StringBuilder(System.getProperty("java.home"))
                    .append('\n').append(System.getProperty("java.vm.version"));
            for (String entry : classPath.split(File.pathSeparator)) {
                Path path = Path.of(entry);
                facts.append('\n').append(entry);
                if (Files.isRegularFile(path)) {
                    facts.append(' ').append(Files.size(path)).append(' ').append(Files.getLastModifiedTime(path));
                }
            }
            return HexFormat.of().formatHex(sha.digest(facts.toString().getBytes(StandardCharsets.UTF_8)), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void removeOthers(Path dir, Path keep) throws IOException {
        try (Stream<Path> archives = Files.list(dir)) {
            for (Path old : archives.filter(path -> path.toString().endsWith(".jsa") && !path.equals(keep)).toList()) {
                Files.deleteIfExists(old);
            }
        }
    }

    private static void deleteQuietly(Path dir) {
        if (dir == null) {
            return;
        }
        try {
            Trees.delete(dir);
        } catch (IOException | UncheckedIOException e) {
            System.err.println("fencer-it: could not remove " + dir + ": " + e);
        }
    }
}

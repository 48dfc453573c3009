package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The {@code fencer} launcher starts client commands from a class-data-sharing archive of their classes, made once per
 * jar and Java build: the second start maps the command's classes instead of loading them from the 140 MB jar.
 * Runs the repository's script on the jar the build packaged (the full suite packages it before these tests).
 */
@ResourceLock(TestResources.LAUNCHER_ARCHIVE)
class LauncherProcessTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    private static final Path JAR = ROOT.resolve("fencer-cli/target/fencer.jar");

    @Test
    void fencer_secondStart_loadsTheCommandsClassesFromTheSharedArchive() throws Exception {
        assertThat(JAR).as("the packaged jar (./mvnw -B verify packages it before this module's tests)").exists();
        run(List.of("--version"), "");
        List<Path> archives = archives();
        assertThat(archives).as("the archive the first start made beside the jar").isNotEmpty();

        String loads = run(List.of("--version"), "-Xlog:class+load=info:stdout");

        List<String> main = loads.lines().filter(line -> line.contains(" io.fencer.cli.Main ")).toList();
        assertThat(main).as("how io.fencer.cli.Main was loaded").singleElement()
                .satisfies(line -> assertThat(line).contains("shared objects file"));
        assertThat(loads).as("the command still ran").contains("fencer ");
    }

    @Test
    void fencer_cdsOff_loadsFromTheJar() throws Exception {
        assertThat(JAR).exists();

        String loads = runWith("off", List.of("--version"), "-Xlog:class+load=info:stdout");

        List<String> main = loads.lines().filter(line -> line.contains(" io.fencer.cli.Main ")).toList();
        assertThat(main).as("the control: without the archive, from the jar").singleElement()
                .satisfies(line -> assertThat(line).doesNotContain("shared objects file"));
    }

    @Test
    void fencer_damagedArchive_isIgnoredAndTheCommandRuns() throws Exception {
        Path archive = currentArchive();
        byte[] whole = Files.readAllBytes(archive);
        byte[] damaged = whole.clone();
        for (int i = whole.length / 3; i < whole.length / 3 + 1_000_000; i++) {
            damaged[i] = (byte) (i * 31);
        }
        try {
            replace(archive, damaged);

            String loads = run(List.of("--version"), "-Xlog:class+load=info:stdout");

            assertThat(loads).as("the command ran").contains("fencer ", "Java ");
            List<String> main = loads.lines().filter(line -> line.contains(" io.fencer.cli.Main ")).toList();
            assertThat(main).as("the control: the JVM refused the damaged archive and loaded from the jar")
                    .singleElement().satisfies(line -> assertThat(line).doesNotContain("shared objects file"));
        } finally {
            replace(archive, whole);
        }
    }

    @Test
    void fencer_cutArchive_isRemadeRatherThanMapped() throws Exception {
        Path archive = currentArchive();
        byte[] whole = Files.readAllBytes(archive);
        replace(archive, java.util.Arrays.copyOf(whole, whole.length / 2));

        String output = run(List.of("--version"), "");

        assertThat(output).as("the command ran").contains("fencer ", "Java ");
        assertThat(output).as("the control: the cut archive was found and a new one made")
                .contains("making the class-data archive");
        Path remade = currentArchive();
        assertThat(Files.size(remade)).as("the new archive is whole: its size is the one in its name")
                .isEqualTo(Long.parseLong(remade.getFileName().toString().replaceAll(".*-(\\d+)\\.jsa$", "$1")));
    }

    /**
     * Regression: Java 19 and later number the classes of each class list from the list's own start, so the merged
     * list of the training's commands was refused ("Duplicated ID"), no archive was made, and every client command
     * trained again: 9 s each on Java 25 instead of 0.3 s. Also: a training that fails is not tried again for that
     * build and Java (one whose temporary directory cannot be made fails here).
     */
    @Test
    void fencer_onTheNewestJava_makesItsArchiveOnceAndATrainingThatFailsIsNotRepeated() throws Exception {
        Path java = newestJava().orElse(null);
        Assumptions.assumeTrue(java != null, "no Java 19 or later under /usr/lib/jvm");
        String home = java.toRealPath().toString().replaceAll("[^A-Za-z0-9]", "_");
        removeArchivesOf(home);
        try {
            Map<String, String> noTemp = Map.of("TMPDIR", "/nonexistent/fencer-test");
            String failed = runWith("on", List.of("--version"), "", java, noTemp);
            String again = runWith("on", List.of("--version"), "", java, noTemp);
            removeArchivesOf(home);
            String made = runWith("on", List.of("--version"), "", java, Map.of());
            String loads = runWith("on", List.of("--version"), "-Xlog:class+load=info:stdout", java, Map.of());

            assertThat(failed).contains("could not make the class-data archive", "Java ");
            assertThat(again).as("not tried again").doesNotContain("making the class-data archive")
                    .contains("Java ");
            assertThat(made).contains("making the class-data archive").doesNotContain("could not make");
            assertThat(loads.lines().filter(line -> line.contains(" io.fencer.cli.Main ")).toList())
                    .as("how io.fencer.cli.Main was loaded on " + java).singleElement()
                    .satisfies(line -> assertThat(line).contains("shared objects file"));
        } finally {
            removeArchivesOf(home);
        }
    }

    /** The newest JDK under /usr/lib/jvm of version 19 or later, by its release file; empty if none. */
    private static java.util.Optional<Path> newestJava() throws IOException {
        Path jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return java.util.Optional.empty();
        }
        try (Stream<Path> homes = Files.list(jvms)) {
            return homes.filter(home -> Files.isExecutable(home.resolve("bin/java")) && major(home) >= 19)
                    .max(java.util.Comparator.comparingInt(LauncherProcessTest::major));
        }
    }

    private static int major(Path home) {
        try {
            for (String line : Files.readAllLines(home.resolve("release"))) {
                if (line.startsWith("JAVA_VERSION=")) {
                    return Integer.parseInt(line.replaceAll("JAVA_VERSION=\"?(\\d+).*", "$1"));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // no release file, or an unreadable one: not a JDK this test can use
        }
        return 0;
    }

    private static void removeArchivesOf(String home) throws IOException {
        try (Stream<Path> files = Files.list(JAR.getParent())) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("fencer-cds-")
                    && f.getFileName().toString().contains("-" + home + "-")).toList()) {
                Files.deleteIfExists(file);
            }
        }
    }

    /**
     * Servers compile their hot paths sooner (a fresh peer served a lone client at two thirds of its speed for its
     * first fifteen to thirty seconds); client commands keep their own setting, and other commands the JVM's default.
     */
    @Test
    void fencer_serverCommands_compileHotCodeSooner() throws Exception {
        assertThat(JAR).exists();

        assertThat(scaling("server")).as("server").isEqualTo("0.500000");
        assertThat(scaling("store-server")).as("store-server").isEqualTo("0.500000");
        assertThat(scaling("lock")).as("a client command: its own setting").isEqualTo("3.000000");
        assertThat(scaling("bench")).as("the control: a bench keeps the JVM's default").isEqualTo("1.000000");
    }

    /** Returns the compile-threshold scaling the launcher gives {@code command} (as {@code command --help}). */
    private static String scaling(String command) throws Exception {
        String flags = run(List.of(command, "--help"), "-XX:+PrintFlagsFinal");
        return flags.lines().filter(line -> line.contains(" CompileThresholdScaling ")).findFirst()
                .map(line -> line.replaceAll(".*=\\s*(\\S+).*", "$1"))
                .orElseThrow(() -> new AssertionError("no CompileThresholdScaling in\n" + flags));
    }

    /**
     * Returns the archive of this jar and this test's Java, making it first when there is none. Its name carries
     * the Java's home, as the launcher spells it (every character but letters and digits as '_').
     */
    private static Path currentArchive() throws Exception {
        run(List.of("--version"), "");
        String home = Path.of(System.getProperty("java.home")).toRealPath().toString()
                .replaceAll("[^A-Za-z0-9]", "_");
        return archives().stream().filter(file -> file.getFileName().toString().contains("-" + home + "-"))
                .reduce((first, second) -> second).orElseThrow(() -> new AssertionError("no archive for " + home));
    }

    /**
     * Replaces {@code archive} with {@code content} by a rename: a JVM of another test that maps the old file
     * meanwhile keeps reading it whole, as the launcher's own renames guarantee.
     */
    private static void replace(Path archive, byte[] content) throws IOException {
        Path next = archive.resolveSibling(archive.getFileName() + ".test.tmp");
        Files.write(next, content);
        Files.move(next, archive, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static List<Path> archives() throws IOException {
        try (Stream<Path> files = Files.list(JAR.getParent())) {
            return files.filter(file -> file.getFileName().toString().matches("fencer-cds-.*\\.jsa")).toList();
        }
    }

    private static String run(List<String> arguments, String javaOptions) throws Exception {
        return runWith("on", arguments, javaOptions);
    }

    private static String runWith(String cds, List<String> arguments, String javaOptions) throws Exception {
        return runWith(cds, arguments, javaOptions, Path.of(System.getProperty("java.home")), Map.of());
    }

    private static String runWith(String cds, List<String> arguments, String javaOptions, Path javaHome,
            Map<String, String> environment) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(ROOT.resolve("fencer").toString()));
        command.addAll(arguments);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("FENCER_CDS", cds);
        builder.environment().put("FENCER_JAVA_OPTS", javaOptions);
        builder.environment().put("JAVA_HOME", javaHome.toString());
        builder.environment().putAll(environment);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        return output;
    }
}

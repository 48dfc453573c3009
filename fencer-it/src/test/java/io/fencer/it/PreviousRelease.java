package io.fencer.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The jar of a previous release, built from its git tag in this repository and cached under {@code target/}: the
 * first call builds it (minutes), later calls find it.
 */
final class PreviousRelease {
    private PreviousRelease() {}

    /** Returns the shaded jar of {@code tag}, building it first when it is not cached. */
    static synchronized Path jar(String tag) throws IOException, InterruptedException {
        Path root = repositoryRoot();
        Path cache = root.resolve("fencer-it").resolve("target").resolve("previous-release").resolve(tag);
        Path jar = cache.resolve("fencer.jar");
        if (Files.isRegularFile(jar)) {
            return jar;
        }
        Path sources = cache.resolve("sources");
        if (Files.exists(sources)) {
            run(root, List.of("rm", "-rf", sources.toString()));
        }
        Files.createDirectories(sources);
        run(root, List.of("bash", "-c", "git -C '" + root + "' archive '" + tag + "' | tar -x -C '" + sources + "'"));
        run(sources, List.of(root.resolve("mvnw").toString(), "-B", "-q", "-o", "package", "-DskipTests",
                "-Djacoco.skip=true", "-pl", "fencer-cli", "-am"));
        Files.copy(sources.resolve("fencer-cli").resolve("target").resolve("fencer.jar"), jar);
        return jar;
    }

    private static Path repositoryRoot() {
        Path here = Path.of("").toAbsolutePath();
        return Files.exists(here.resolve("mvnw")) ? here : here.getParent();
    }

    private static void run(Path directory, List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).directory(directory.toFile()).inheritIO().start();
        if (!process.waitFor(20, TimeUnit.MINUTES) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException("building the previous release failed: " + command + " in " + directory
                    + " (is the tag in this clone? git fetch --tags)");
        }
    }
}

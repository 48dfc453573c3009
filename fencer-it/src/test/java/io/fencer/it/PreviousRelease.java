package io.fencer.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The jar of a previous release, built from its commit in this repository and cached under {@code target/}: the
 * first call builds it (minutes; its dependencies come from Maven Central as this build's do, since they need not be
 * the releases this build downloaded), later calls find it.
 */
final class PreviousRelease {
    private PreviousRelease() {}

    /** Returns the shaded jar of the release at {@code commit}, building it first when it is not cached. */
    static synchronized Path jar(String commit) throws IOException, InterruptedException {
        Path root = repositoryRoot();
        Path cache = root.resolve("fencer-it").resolve("target").resolve("previous-release").resolve(commit);
        Path jar = cache.resolve("fencer.jar");
        if (Files.isRegularFile(jar)) {
            return jar;
        }
        Path sources = cache.resolve("sources");
        if (Files.exists(sources)) {
            run(root, List.of("rm", "-rf", sources.toString()));
        }
        Files.createDirectories(sources);
        run(root, List.of("bash", "-c", "git -C '" + root + "' archive '" + commit + "' | tar -x -C '" + sources + "'"));
        run(sources, List.of(root.resolve("mvnw").toString(), "-B", "-q", "package", "-DskipTests",
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
                    + " (is the commit in this clone?)");
        }
    }
}

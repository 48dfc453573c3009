package io.fencer.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** The host commands of the tests that mount file systems (mount, mkfs, fsfreeze): run one, and who runs them. */
final class HostCommands {
    private HostCommands() {}

    /** This process's user id, as /proc tells it ("0" for root). */
    static String uid() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(line -> line.startsWith("Uid:"))
                .map(line -> line.split("\\s+")[1]).findFirst().orElse("unknown");
    }

    /** Runs a command; returns null when it succeeded, else what it printed. */
    static String run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            return String.join(" ", command) + " did not finish in 30 s";
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        return process.exitValue() == 0 ? null : String.join(" ", command) + ": exit " + process.exitValue() + ": "
                + output;
    }
}

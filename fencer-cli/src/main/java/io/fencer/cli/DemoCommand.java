package io.fencer.cli;

import io.fencer.chaos.Demo;
import io.fencer.chaos.process.Launcher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code fencer demo}: the paused-client scenario with real processes, with and without fencing. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Shows a paused client refused by fencing, and its lost update without it.",
            "Starts a lock server, a store server and two clients as processes and narrates the "
                + "scenario: A acquires, A is frozen (SIGSTOP) past its lease, B acquires the next token and writes, "
                + "A wakes and writes with its old token -- refused by the store. Then the same with fencing off, "
                + "where A's stale write silently overwrites B's. Exit 0 when both halves showed what they should."})
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "2s", converter = Durations.DemoTtl.class,
            description = "The clients' lease (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--html", paramLabel = "FILE", description = "Write the timeline as a self-contained HTML page.")
    Path html;

    @Option(names = "--dir", paramLabel = "DIR",
            description = "Where to keep data, logs and histories (default: a new temporary directory).")
    Path directory;

    @Override
    public Integer call() throws Exception {
        Path dir = directory != null ? directory : Files.createTempDirectory("fencer-demo-");
        Demo.Outcome outcome = Demo.run(Launcher.ofCurrentJvm(Main.class.getName()), dir, System.out, ttl, html);
        return outcome.asExpected() ? Main.EXIT_OK : Main.EXIT_ERROR;
    }
}

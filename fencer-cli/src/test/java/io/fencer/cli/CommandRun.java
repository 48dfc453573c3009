package io.fencer.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** The outcome of running the {@code fencer} command in process: its exit code and what it wrote. */
record CommandRun(int exitCode, String out, String err) {

    /** Runs {@code args} with stop requests that never come. */
    static CommandRun run(String... args) {
        return run(new CompletableFuture<>(), args);
    }

    /** Runs {@code args}; commands that hold locks stop when {@code stopRequested} completes. */
    static CommandRun run(CompletionStage<String> stopRequested, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exitCode = Main.execute(new Main(() -> stopRequested), new PrintWriter(out, true),
                new PrintWriter(err, true), args);
        return new CommandRun(exitCode, out.toString(), err.toString());
    }
}

package io.fencer.cli;

import io.fencer.chaos.Worker;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code fencer chaos worker}: one worker process of a chaos run, started by the harness (hidden). */
@Command(name = "worker", hidden = true, description = "A chaos worker; the harness starts it.")
final class ChaosWorkerCommand implements Callable<Integer> {
    @Mixin
    WorkerArguments arguments;

    @Override
    public Integer call() throws Exception {
        return Worker.run(arguments.options());
    }
}

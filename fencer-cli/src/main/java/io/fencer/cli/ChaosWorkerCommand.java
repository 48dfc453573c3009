package io.fencer.cli;

import io.fencer.chaos.workload.Worker;
import io.fencer.chaos.workload.WorkerArguments;
import io.fencer.chaos.workload.WorkerOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/** {@code fencer chaos worker}: one worker process of a chaos run, started by the harness (hidden). */
@Command(name = "worker", hidden = true, description = "A chaos worker; the harness starts it.")
final class ChaosWorkerCommand implements Callable<Integer> {
    /** Everything after {@code chaos worker}: {@link WorkerArguments} wrote it and reads it back. */
    @Unmatched
    List<String> arguments = new ArrayList<>();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        return Worker.run(options());
    }

    /** Returns the worker's options; arguments {@link WorkerArguments} cannot read are a usage error. */
    WorkerOptions options() {
        return options(spec, arguments);
    }

    /** Returns the options in {@code arguments}, as {@link WorkerArguments} wrote them for {@code chaos worker}. */
    static WorkerOptions options(CommandSpec spec, List<String> arguments) {
        try {
            return WorkerArguments.parse(arguments);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }
}

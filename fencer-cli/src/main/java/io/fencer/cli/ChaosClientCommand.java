package io.fencer.cli;

import io.fencer.chaos.workload.ScriptedClient;
import io.fencer.chaos.workload.WorkerArguments;
import io.fencer.chaos.workload.WorkerOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/** {@code fencer chaos client}: a client process driven on standard input, for the demo (hidden). */
@Command(name = "client", hidden = true, description = "A scripted demo client; the demo starts it.")
final class ChaosClientCommand implements Callable<Integer> {
    /** Everything after {@code chaos client}: {@link WorkerArguments} wrote it and reads it back. */
    @Unmatched
    List<String> arguments = new ArrayList<>();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        return ScriptedClient.run(options());
    }

    /** Returns the client's options; arguments {@link WorkerArguments} cannot read are a usage error. */
    WorkerOptions options() {
        return ChaosWorkerCommand.options(spec, arguments);
    }
}

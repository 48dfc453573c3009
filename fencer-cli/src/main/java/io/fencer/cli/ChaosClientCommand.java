package io.fencer.cli;

import io.fencer.chaos.ScriptedClient;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code fencer chaos client}: a client process driven on standard input, for the demo (hidden). */
@Command(name = "client", hidden = true, description = "A scripted demo client; the demo starts it.")
final class ChaosClientCommand implements Callable<Integer> {
    @Mixin
    WorkerArguments arguments;

    @Override
    public Integer call() throws Exception {
        return ScriptedClient.run(arguments.options());
    }
}

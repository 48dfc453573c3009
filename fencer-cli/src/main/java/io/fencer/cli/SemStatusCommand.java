package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.SemaphoreStatus;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code fencer sem status NAME}: a semaphore's permits, each slot's holder, its waiters; a table or JSON. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Shows a semaphore: its permits, each slot's holder and token, and how many wait.")
final class SemStatusCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The semaphore to describe.")
    String name;

    @Option(names = "--json", description = "Print JSON.")
    boolean json;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (FencerClient fencer = client.connect()) {
            SemaphoreStatus status = fencer.describeSemaphore(name);
            if (json) {
                out.println(Json.object().add("semaphore", status.semaphore()).add("permits", status.permits())
                        .add("held", status.held()).addLongs("waiterSessionIds", status.waiterSessionIds())
                        .toString());
            } else if (status.permits() == 0) {
                out.println("semaphore " + name + " is not in use (no permit held or waited for)");
            } else {
                out.println("semaphore " + name + ": " + status.held() + " of " + status.permits()
                        + " permits held, " + status.waiterSessionIds().size() + " waiting");
                out.println(LockStatusCommand.table(status.slots()));
            }
        }
        out.flush();
        return Main.EXIT_OK;
    }
}

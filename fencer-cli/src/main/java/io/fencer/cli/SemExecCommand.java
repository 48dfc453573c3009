package io.fencer.cli;

import io.fencer.cli.exec.GrantExec;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.FencerClient;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fencer sem exec NAME --permits N -- CMD ARGS...}: runs a command while holding one of a semaphore's N
 * permits, with the fail-closed rules of {@code fencer lock exec}; the permit's slot token is in its environment.
 */
@Command(name = "exec", mixinStandardHelpOptions = true,
        description = {"Acquires one of the N permits of semaphore NAME and runs CMD with FENCER_LOCK (the permit's "
                + "slot lock, NAME/permit-I), FENCER_TOKEN (its sequencer), FENCER_TOKEN_VALUE and FENCER_PERMIT (the "
                + "slot index I, 0 to N-1) in its environment; each slot has its own token counter, so a resource "
                + "partitioned by slot fences each partition as for a lock. Releases the permit when CMD ends and "
                + "exits with CMD's status. At most N commands run at once; waiters get permits in arrival order.",
            "",
            "Fails closed exactly as 'fencer lock exec' (see its help): CMD runs in its own process group, stopped "
                + "before the local lease can end; exit 3 (or --lost-exit-code) when the lease was in jeopardy or "
                + "lost, 4 (or --conflict-exit-code) when no permit was granted within --wait."})
final class SemExecCommand implements Callable<Integer> {
    /** The most permits a semaphore has: the client's own bound. */
    static final int PERMITS_MAX = 1_000;

    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The semaphore's name.")
    String name;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "CMD",
            description = "The command and its arguments; put them after --.")
    List<String> command;

    @Option(names = "--permits", paramLabel = "N", required = true,
            description = "The semaphore's permit count, 1 to 1000; the same for every user while it is in use.")
    int permits;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.SessionTtl.class,
            description = "Session lease; a holder silent this long loses its permit (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Wait.class,
            description = "How long to wait in line; exit 4 (or --conflict-exit-code) when not granted by then "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration wait;

    @Option(names = "--kill-after", paramLabel = "DURATION", defaultValue = "5s",
            converter = Durations.Converter.class,
            description = "After SIGTERM, how long CMD's group may take to exit before SIGKILL (default: "
                    + "${DEFAULT-VALUE}); capped at a third of --ttl and by the local lease left.")
    Duration killAfter;

    @Mixin
    ExecExitCodes exitCodes;

    @Mixin
    ClientOptions client;

    @ParentCommand
    SemCommand parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException, IOException {
        // Checked here, before any connection: the client's own check would fail the run as an error, not usage.
        BenchCommand.checkRange(spec, "--permits", permits, 1, PERMITS_MAX);
        CompletionStage<String> stopRequested = parent.main.stopSignals();
        GrantExec exec = new GrantExec(ttl, killAfter, false, command, exitCodes.leaseLost,
                spec.commandLine().getErr());
        FencerClient fencer = client.connect(); // the run closes it: after a lost lease, without waiting
        return exec.run(fencer, stopRequested, session -> session.semaphore(name, permits).acquire(wait),
                grant -> Map.of("FENCER_PERMIT", Integer.toString(((FencedSemaphore.PermitGrant) grant).permit())));
    }
}

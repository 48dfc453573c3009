package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
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
 * {@code fencer lock exec NAME -- CMD ARGS...}: runs a command while holding a lock, like {@code flock(1)}, and
 * hands it the fencing token in its environment.
 */
@Command(name = "exec", mixinStandardHelpOptions = true,
        description = {"Acquires a lock and runs CMD with FENCER_LOCK, FENCER_TOKEN (the sequencer) and",
            "FENCER_TOKEN_VALUE in its environment; releases the lock when CMD ends and exits with CMD's status.",
            "If the lease is lost meanwhile, CMD gets SIGTERM, then SIGKILL after --kill-after, and fencer exits 3."})
final class LockExecCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The lock's name.")
    String name;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "CMD",
            description = "The command and its arguments; put them after --.")
    List<String> command;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.Converter.class,
            description = "Session lease; a holder silent this long loses the lock (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long to wait in line; exit 4 when not granted by then (default: ${DEFAULT-VALUE}).")
    Duration wait;

    @Option(names = "--kill-after", paramLabel = "DURATION", defaultValue = "5s",
            converter = Durations.Converter.class,
            description = "After SIGTERM, how long CMD may take to exit before SIGKILL (default: ${DEFAULT-VALUE}).")
    Duration killAfter;

    @Mixin
    ClientOptions client;

    @ParentCommand
    LockCommand parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException, IOException {
        CompletionStage<String> stopRequested = parent.main.stopSignals();
        try (FencerClient fencer = client.connect(); Session session = fencer.openSession(ttl)) {
            Grant grant = Acquisition.acquire(session.lock(name), wait, stopRequested);
            if (grant == null) {
                return StopSignals.exitCode(stopRequested.toCompletableFuture().getNow("INT"));
            }
            try (grant) {
                Process process = start(grant);
                ChildSupervisor supervisor = new ChildSupervisor(process, command.get(0), grant.token(), killAfter,
                        spec.commandLine().getErr());
                return supervisor.supervise(session.lost().thenApply(SessionLoss::detail), stopRequested);
            }
        }
    }

    private Process start(Grant grant) throws IOException {
        try {
            return ChildSupervisor.processBuilder(command, grant.token(), grant.sequencer()).inheritIO().start();
        } catch (IOException e) {
            throw new IOException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
        }
    }
}

package io.fencer.cli;

import io.fencer.cli.exec.Acquisition;
import io.fencer.cli.exec.StopSignals;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.FencingToken;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fencer lock acquire NAME}: acquires a lock and holds it until interrupted, printing its token.
 *
 * <p>Stdout carries one line, {@code <display> <sequencer>} (e.g. {@code orders#32 fencer1.b3JkZXJz.32}), flushed as
 * soon as the lock is granted, so a script can read the token and pass the sequencer to the resource it writes.
 */
@Command(name = "acquire", mixinStandardHelpOptions = true,
        description = {"Acquires a lock, prints its token and holds it until SIGINT/SIGTERM (then releases, exit 0) "
                + "or until the lease is lost (exit 3)."})
final class LockAcquireCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The lock's name.")
    String name;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.SessionTtl.class,
            description = "Session lease; a holder silent this long loses the lock (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Wait.class,
            description = "How long to wait in line; exit 4 when not granted by then (default: ${DEFAULT-VALUE}).")
    Duration wait;

    @Mixin
    ClientOptions client;

    @ParentCommand
    LockCommand parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        CompletionStage<String> stopRequested = parent.main.stopSignals();
        try (FencerClient fencer = client.connect(); Session session = fencer.openSession(ttl)) {
            Grant grant = Acquisition.acquire(session.lock(name), wait, stopRequested);
            if (grant == null) {
                return StopSignals.exitCode(stopRequested.toCompletableFuture().getNow("INT"));
            }
            try (grant) {
                return hold(grant, session, stopRequested);
            }
        }
    }

    private int hold(Grant grant, Session session, CompletionStage<String> stopRequested)
            throws InterruptedException {
        FencingToken token = grant.token();
        PrintWriter out = spec.commandLine().getOut();
        // The sequencer as the service sent it: signed when the service signs, so resources that require
        // signatures accept it.
        out.println(token + " " + grant.sequencer());
        out.flush();
        CompletableFuture<SessionLoss> lost = session.lost().toCompletableFuture();
        try {
            CompletableFuture.anyOf(lost, stopRequested.toCompletableFuture()).get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("session loss and stop stages never fail", e);
        }
        if (!lost.isDone()) { // when both happened, the loss is what the caller must learn
            return Main.EXIT_OK;
        }
        PrintWriter err = spec.commandLine().getErr();
        err.println("fencer: lease on " + token + " lost: " + lost.join().detail());
        err.flush();
        return Main.EXIT_LEASE_LOST;
    }
}

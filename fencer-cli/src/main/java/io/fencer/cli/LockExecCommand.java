package io.fencer.cli;

import io.fencer.client.FencedLock;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencerException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
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
 * hands it the fencing token in its environment. The command runs in its own process group, which is stopped
 * before the local lease can end (see {@link ChildSupervisor}).
 */
@Command(name = "exec", mixinStandardHelpOptions = true,
        description = {"Acquires a lock and runs CMD with FENCER_LOCK, FENCER_TOKEN (the sequencer) and "
                + "FENCER_TOKEN_VALUE (and FENCER_TOKEN_MODE, exclusive or shared) in its environment; releases the "
                + "lock when CMD ends and exits with CMD's status.",
            "",
            "Fails closed. CMD runs in its own session and process group (through setsid(1), Linux only; it has no "
                + "controlling terminal). The local lease counts from the send time of the last acknowledged "
                + "keepalive, for --ttl less 1%% + 5 ms. When the lease is in jeopardy (no keepalive acknowledged "
                + "for 2/3 of --ttl) or lost, or less of it is left than --kill-after + 150 ms, the whole group "
                + "gets SIGTERM, then SIGKILL after --kill-after or once 150 ms of the local lease are left, "
                + "whichever is first; fencer says why on stderr and exits 3. When CMD exits by itself, what it "
                + "left running in its group is stopped the same way before the lock is released.",
            "",
            "Guaranteed while fencer itself runs in time: no process of the group runs when the local lease ends, "
                + "even one that ignores SIGTERM or whose parent died. Not guaranteed: a descendant that calls "
                + "setsid or setpgid itself leaves the group and is not tracked (that needs cgroups); a paused "
                + "fencer or machine acts late, and a fencer killed with SIGKILL cannot act at all. Writes must "
                + "carry FENCER_TOKEN to a resource that checks it."})
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
            description = "After SIGTERM, how long CMD's group may take to exit before SIGKILL (default: "
                    + "${DEFAULT-VALUE}); capped at a third of --ttl and by the local lease left.")
    Duration killAfter;

    @Option(names = "--shared",
            description = "Hold the lock in shared mode (a reader of a read-write lock): CMD runs beside other "
                    + "shared holders and never beside an exclusive one; FENCER_TOKEN is then a shared-mode token, "
                    + "which resources accept for fenced reads and refuse for writes (MODE_MISMATCH).")
    boolean shared;

    /** For the test that shows what the process group buys; hidden, since it gives up the guarantee. */
    @Option(names = "--signal-child-only", hidden = true,
            description = "For tests: run CMD as a plain child and signal it alone, as before process groups.")
    boolean signalChildOnly;

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
            FencedLock lock = session.lock(name);
            Grant grant = Acquisition.acquire(() -> shared ? lock.acquireShared(wait) : lock.acquire(wait),
                    stopRequested);
            if (grant == null) {
                return StopSignals.exitCode(stopRequested.toCompletableFuture().getNow("INT"));
            }
            int status;
            try {
                status = run(session, grant, stopRequested);
            } catch (Throwable e) {
                closeAfterFailure(grant, e);
                throw e;
            }
            return release(grant, status);
        }
    }

    private int run(Session session, Grant grant, CompletionStage<String> stopRequested)
            throws IOException, InterruptedException {
        // At jeopardy a third of the ttl is left: a longer grace could not end before the local lease does.
        Duration killAfterCapped = killAfter.compareTo(session.ttl().dividedBy(3)) < 0 ? killAfter
                : session.ttl().dividedBy(3);
        ProcessGroup group = start(grant);
        ChildSupervisor supervisor = new ChildSupervisor(group, command.get(0), grant.token(), killAfterCapped,
                spec.commandLine().getErr());
        return supervisor.supervise(lease(session), stopRequested);
    }

    /** Returns what the supervisor watches: the first of jeopardy and loss, and the local lease left. */
    private static ChildSupervisor.Lease lease(Session session) {
        // Jeopardy also completes (first) when the session ends: then say how it ended.
        CompletionStage<String> endangered = session.jeopardy().thenCompose(left -> session.isAlive()
                ? CompletableFuture.completedFuture("in jeopardy: no keepalive acknowledged for 2/3 of the "
                        + session.ttl().toMillis() + " ms ttl")
                : session.lost().thenApply(loss -> "lost: " + loss.detail()));
        return new ChildSupervisor.Lease(endangered, session::leaseRemaining);
    }

    private ProcessGroup start(Grant grant) throws IOException {
        ProcessBuilder builder = ChildSupervisor.processBuilder(command, grant.token(), grant.sequencer())
                .inheritIO();
        try {
            return signalChildOnly ? ProcessGroup.directChildOnly(builder) : ProcessGroup.start(builder);
        } catch (IOException e) {
            throw new IOException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
        }
    }

    /**
     * Releases the lock after the command; after a lost lease the service may be unreachable (that may be why it
     * was lost), so a failure then is reported and the exit status stays 3: the service frees the lock when the
     * session expires.
     */
    private int release(Grant grant, int status) {
        if (status != ChildSupervisor.EXIT_LEASE_LOST) {
            grant.close();
            return status;
        }
        try {
            grant.close();
        } catch (FencerException e) {
            spec.commandLine().getErr().println("fencer: could not release " + grant.token() + ": " + e.getMessage()
                    + "; the service frees it when the session expires");
        }
        return status;
    }

    private static void closeAfterFailure(Grant grant, Throwable failure) {
        try {
            grant.close();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}

package io.fencer.cli.exec;

import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The run of {@code fencer lock exec} and {@code fencer sem exec}: open a session, acquire a grant (interruptible
 * by SIGINT or SIGTERM), run the command with the grant's token in its environment in its own process group under
 * the {@link ChildSupervisor}'s fail-closed rules, then release the grant and exit with the command's status.
 *
 * @param ttl the session lease
 * @param killAfter how long the group may take to exit after SIGTERM (capped at a third of the ttl)
 * @param signalChildOnly for tests: run the command as a plain child and signal it alone
 * @param command the command and its arguments
 * @param leaseLostExitCode the exit status when the lease was in jeopardy or lost and the command was stopped
 * @param err where fencer says why it stopped the command
 */
public record GrantExec(Duration ttl, Duration killAfter, boolean signalChildOnly, List<String> command,
        int leaseLostExitCode, PrintWriter err) {

    /**
     * How long fencer waits for the release and the session's close after it stopped the command because the lease
     * was in jeopardy or lost: the service may not answer (that may be why), and the session's expiry frees the
     * grant anyway, so fencer exits 3 at once rather than spend the client's call timeout on each.
     */
    static final Duration RELEASE_AFTER_LOSS_MAX = Duration.ofMillis(500);

    /**
     * Runs the command under the grant {@code acquire} makes through the session, with {@code environment} (of
     * the grant) added to the child's environment; returns the command's exit status, or
     * {@link #leaseLostExitCode} when the command was stopped because the lease was in jeopardy or lost. Closes
     * {@code fencer}: after a lost lease it does so in the background, so that the exit does not wait on a service
     * that does not answer.
     */
    public int run(FencerClient fencer, CompletionStage<String> stopRequested, Function<Session, Grant> acquire,
            Function<Grant, Map<String, String>> environment) throws InterruptedException, IOException {
        Session session;
        try {
            session = fencer.openSession(ttl);
        } catch (RuntimeException e) {
            fencer.close();
            throw e;
        }
        Ended ended;
        Grant grant = null;
        try {
            grant = Acquisition.acquire(() -> acquire.apply(session), stopRequested);
            if (grant == null) {
                return closeAll(fencer, session, null,
                        StopSignals.exitCode(stopRequested.toCompletableFuture().getNow("INT")));
            }
            ended = supervise(session, grant, environment.apply(grant), stopRequested);
        } catch (Throwable e) {
            closeAfterFailure(grant, e);
            try {
                closeAll(fencer, session, null, 0);
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        if (!ended.leaseLost()) {
            return closeAll(fencer, session, grant, ended.status());
        }
        releaseAfterLoss(fencer, session, grant);
        return leaseLostExitCode;
    }

    /** How supervision ended: the command's status, and whether it was stopped because the lease was endangered. */
    private record Ended(int status, boolean leaseLost) {
    }

    /** Releases {@code grant} when not null, closes the session and the client, and returns {@code status}. */
    private static int closeAll(FencerClient fencer, Session session, Grant grant, int status) {
        try (fencer; session) {
            if (grant != null) {
                grant.release(); // waits (not close()): a release that fails is reported, and the exit follows it
            }
        }
        return status;
    }

    /**
     * Releases the grant, closes the session and the client on a daemon thread, and waits at most
     * {@link #RELEASE_AFTER_LOSS_MAX} for them: best effort, since the service frees the grant when the session
     * expires. What is left undone when the wait ends is dropped with the process.
     */
    private void releaseAfterLoss(FencerClient fencer, Session session, Grant grant) throws InterruptedException {
        AtomicBoolean released = new AtomicBoolean();
        Thread releaser = new Thread(() -> {
            try (fencer; session) {
                grant.release();
                released.set(true);
            } catch (RuntimeException e) {
                err.println("fencer: could not release " + grant.token() + ": " + e.getMessage()
                        + "; the service frees it when the session expires");
                err.flush();
            }
        }, "fencer-release");
        releaser.setDaemon(true);
        releaser.start();
        releaser.join(RELEASE_AFTER_LOSS_MAX.toMillis());
        if (releaser.isAlive() && !released.get()) {
            err.println("fencer: could not release " + grant.token() + " within "
                    + RELEASE_AFTER_LOSS_MAX.toMillis() + " ms; the service frees it when the session expires");
            err.flush();
        }
    }

    private Ended supervise(Session session, Grant grant, Map<String, String> environment,
            CompletionStage<String> stopRequested) throws IOException, InterruptedException {
        // At jeopardy a third of the ttl is left: a longer grace could not end before the local lease does.
        Duration killAfterCapped = killAfter.compareTo(session.ttl().dividedBy(3)) < 0 ? killAfter
                : session.ttl().dividedBy(3);
        ProcessGroup group = start(grant, environment);
        // A second stop signal halts the JVM: the group, in a session of its own, must not outlive fencer unlocked.
        try (StopSignals.Registration killFirst = StopSignals.beforeHalt(group::kill)) {
            ChildSupervisor supervisor = new ChildSupervisor(group, command.get(0), grant.token(), killAfterCapped,
                    err);
            int status = supervisor.supervise(lease(session), stopRequested);
            return new Ended(status, supervisor.leaseEndangered());
        }
    }

    /** Returns what the supervisor watches: the first of jeopardy and loss, and the local lease left. */
    private static ChildSupervisor.Lease lease(Session session) {
        // Jeopardy also completes (first) when the session ends: then say how it ended.
        CompletionStage<String> endangered = session.jeopardy().thenCompose(left -> session.isAlive()
                ? CompletableFuture.completedFuture("in jeopardy: no keepalive acknowledged for 2/3 of the "
                        + session.ttl().toMillis() + " ms ttl")
                : session.ended().thenApply(loss -> "lost: " + loss.detail()));
        return new ChildSupervisor.Lease(endangered, session::leaseRemaining);
    }

    private ProcessGroup start(Grant grant, Map<String, String> environment) throws IOException {
        ProcessBuilder builder = ChildSupervisor.processBuilder(command, grant.token(), grant.sequencer())
                .inheritIO();
        builder.environment().putAll(environment);
        try {
            return signalChildOnly ? ProcessGroup.directChildOnly(builder) : ProcessGroup.start(builder);
        } catch (IOException e) {
            throw new IOException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
        }
    }

    private static void closeAfterFailure(Grant grant, Throwable failure) {
        if (grant == null) {
            return;
        }
        try {
            grant.release();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}

package io.fencer.cli;

import io.fencer.core.FencingToken;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

/**
 * The supervisor of the child process that {@code fencer lock exec} runs while holding a lock: it passes the
 * child's exit status through, and stops the child when the lease is lost.
 *
 * <p>Stopping is the best a lock holder can do, not a guarantee: the child may already have written after the
 * service granted the lock to someone else. That is why the child gets the token in {@code FENCER_TOKEN} and must
 * hand it to the resource, which refuses it once a newer grant exists.
 */
final class ChildSupervisor {
    /** The exit status of {@code fencer lock exec} when the lease was lost while the child ran. */
    static final int EXIT_LEASE_LOST = 3;
    /** How long to wait for a child to disappear after SIGKILL before giving up on it. */
    private static final Duration KILL_WAIT_MAX = Duration.ofSeconds(30);

    private final Process process;
    private final String commandName;
    private final FencingToken token;
    private final Duration killAfter;
    private final PrintWriter err;

    /** The ways supervision ends. */
    private enum Outcome { EXITED, LEASE_LOST, STOP_REQUESTED }

    /**
     * Supervises {@code process}, started from {@code commandName} under {@code token}.
     *
     * @param killAfter how long the child may take to exit after SIGTERM before it gets SIGKILL
     * @param err where the lease-loss message goes
     */
    ChildSupervisor(Process process, String commandName, FencingToken token, Duration killAfter, PrintWriter err) {
        this.process = Objects.requireNonNull(process, "process");
        this.commandName = Objects.requireNonNull(commandName, "commandName");
        this.token = Objects.requireNonNull(token, "token");
        this.killAfter = Objects.requireNonNull(killAfter, "killAfter");
        this.err = Objects.requireNonNull(err, "err");
        if (killAfter.isNegative()) {
            throw new IllegalArgumentException("killAfter must not be negative: " + killAfter);
        }
    }

    /**
     * Returns a process builder for {@code command} with the caller's environment plus {@code FENCER_LOCK},
     * {@code FENCER_TOKEN} (the sequencer to hand to resources) and {@code FENCER_TOKEN_VALUE}. The caller chooses
     * the child's stdio (the command inherits its own). {@code sequencer} is the grant's wire form exactly as the
     * service sent it (signed when the service signs), so resources that require signatures accept it.
     */
    static ProcessBuilder processBuilder(List<String> command, FencingToken token, String sequencer) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("command must not be empty");
        }
        ProcessBuilder builder = new ProcessBuilder(command);
        Map<String, String> environment = builder.environment();
        environment.put("FENCER_LOCK", token.lock());
        environment.put("FENCER_TOKEN", sequencer);
        environment.put("FENCER_TOKEN_VALUE", Long.toString(token.value()));
        return builder;
    }

    /**
     * Waits until the child exits, the lease is lost, or a stop is requested, whichever comes first.
     *
     * @param leaseLost completes with a sentence saying why, when the session holding the lock is lost
     * @param stopRequested completes when the user asks fencer to stop (SIGINT, SIGTERM)
     * @return the child's exit status when it exited by itself or on request; {@link #EXIT_LEASE_LOST} when the
     *     lease was lost (the child is then stopped, SIGTERM first and SIGKILL after {@code killAfter})
     */
    int supervise(CompletionStage<String> leaseLost, CompletionStage<?> stopRequested) throws InterruptedException {
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        AtomicReference<String> lossDetail = new AtomicReference<>();
        process.onExit().thenRun(() -> outcome.complete(Outcome.EXITED));
        leaseLost.whenComplete((detail, failure) -> {
            lossDetail.set(failure != null ? String.valueOf(failure.getMessage()) : detail);
            outcome.complete(Outcome.LEASE_LOST);
        });
        stopRequested.whenComplete((signal, failure) -> outcome.complete(Outcome.STOP_REQUESTED));
        switch (await(outcome)) {
            case EXITED:
                return process.exitValue();
            case LEASE_LOST:
                err.println("fencer: lease on " + token + " lost: " + lossDetail.get() + "; stopping " + commandName);
                err.flush();
                stop();
                return EXIT_LEASE_LOST;
            case STOP_REQUESTED:
                return stop();
            default:
                throw new IllegalStateException("outcome not handled");
        }
    }

    /**
     * Stops the child and its descendants: SIGTERM, then SIGKILL for whatever still runs after {@code killAfter}.
     * Descendants are included because a shell child that dies leaves its own children running otherwise.
     *
     * @return the child's exit status (128 + signal when a signal ended it), or -1 when it outlived even SIGKILL
     */
    int stop() throws InterruptedException {
        List<ProcessHandle> descendants = process.descendants().collect(Collectors.toList());
        long deadlineNanos = System.nanoTime() + killAfter.toNanos();
        process.destroy();
        descendants.forEach(ProcessHandle::destroy);
        awaitExit(process.toHandle(), deadlineNanos);
        for (ProcessHandle descendant : descendants) {
            awaitExit(descendant, deadlineNanos);
        }
        if (process.isAlive()) {
            process.destroyForcibly();
        }
        descendants.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
        if (!process.waitFor(KILL_WAIT_MAX.toMillis(), TimeUnit.MILLISECONDS)) {
            err.println("fencer: " + commandName + " (pid " + process.pid() + ") still runs after SIGKILL");
            err.flush();
            return -1;
        }
        return process.exitValue();
    }

    private static void awaitExit(ProcessHandle handle, long deadlineNanos) throws InterruptedException {
        long remainingNanos = deadlineNanos - System.nanoTime();
        if (remainingNanos <= 0 || !handle.isAlive()) {
            return;
        }
        try {
            handle.onExit().get(remainingNanos, TimeUnit.NANOSECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // still alive at the deadline: the caller sends SIGKILL
        }
    }

    private static Outcome await(CompletableFuture<Outcome> outcome) throws InterruptedException {
        try {
            return outcome.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the outcome future is only ever completed normally", e);
        }
    }
}

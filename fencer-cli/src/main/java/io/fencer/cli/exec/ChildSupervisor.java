package io.fencer.cli.exec;

import io.fencer.core.FencingToken;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * The supervisor of the command that {@code fencer lock exec} runs while holding a lock: it passes the command's
 * exit status through, and stops the command's whole {@link ProcessGroup} before the local lease can end.
 *
 * <p>It stops the group as soon as the lease is in jeopardy or lost, or when the local lease left is no more than
 * {@code killAfter} plus {@link #KILL_MARGIN}: SIGTERM to the group, then SIGKILL to the group after
 * {@code killAfter} or when only {@link #KILL_MARGIN} of the local lease is left, whichever comes first. So on a
 * machine that runs fencer in time, nothing of the group runs when the local lease ends. When the command exits by
 * itself, what it left running in its group is stopped the same way before the lock is released.
 *
 * <p>Stopping is the best a lock holder can do, not a guarantee: a paused fencer (or machine) acts late, the child
 * may already have written after the service granted the lock to someone else, and a descendant that left the
 * group escapes. That is why the child gets the token in {@code FENCER_TOKEN} and must hand it to the resource,
 * which refuses it once a newer grant exists.
 */
final class ChildSupervisor {
    /** The exit status of {@code fencer lock exec} when the lease was in jeopardy or lost while the child ran. */
    static final int EXIT_LEASE_LOST = 3;
    /**
     * How much of the local lease is left, at the latest, when SIGKILL goes to the group: time to start the kill
     * command, for the kernel to end the members, and for the polls below to notice.
     */
    static final Duration KILL_MARGIN = Duration.ofMillis(150);
    /** How long to wait for the group to disappear after SIGKILL before giving up on it. */
    private static final Duration KILL_WAIT_MAX = Duration.ofSeconds(30);
    /** How long the message waits, after the stop, for the reason of a loss that ended the lease. */
    private static final Duration LOSS_REASON_WAIT = Duration.ofSeconds(1);
    /** How often the lease left and the group's members are read while waiting. */
    private static final long POLL_MILLIS = 10;

    /**
     * What the supervisor watches of the lease that holds the lock.
     *
     * @param endangered completes, with a phrase saying why ({@code "lost: ..."}, {@code "in jeopardy: ..."}), when
     *     the command must stop
     * @param remaining the local lease left; zero once lost
     */
    record Lease(CompletionStage<String> endangered, Supplier<Duration> remaining) {
        Lease {
            Objects.requireNonNull(endangered, "endangered");
            Objects.requireNonNull(remaining, "remaining");
        }
    }

    private final ProcessGroup group;
    private final Process process;
    private final String commandName;
    private final FencingToken token;
    private final Duration killAfter;
    private final PrintWriter err;
    /** Set when supervision ended because the lease was endangered: the status alone cannot say, CMD may exit 3. */
    private volatile boolean leaseEndangered;

    /** The ways supervision ends. */
    private enum Outcome { EXITED, LEASE_ENDANGERED, STOP_REQUESTED }

    /**
     * Supervises {@code group}, started from {@code commandName} under {@code token}.
     *
     * @param killAfter how long the group may take to exit after SIGTERM before it gets SIGKILL, at most
     * @param err where the lease-loss message goes
     */
    ChildSupervisor(ProcessGroup group, String commandName, FencingToken token, Duration killAfter,
            PrintWriter err) {
        this.group = Objects.requireNonNull(group, "group");
        this.process = group.leader();
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
     * {@code FENCER_TOKEN} (the sequencer to hand to resources), {@code FENCER_TOKEN_VALUE} and
     * {@code FENCER_TOKEN_MODE} ({@code exclusive} or {@code shared}). The caller chooses the child's stdio (the
     * command inherits its own). {@code sequencer} is the grant's wire form exactly as the service sent it (signed
     * when the service signs), so resources that require signatures accept it.
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
        environment.put("FENCER_TOKEN_MODE", token.mode().text());
        return builder;
    }

    /** Returns "the local lease ends in N ms, at INSTANT" for {@code remaining} from now, by the wall clock. */
    static String leaseEnds(Duration remaining) {
        return "the local lease ends in " + remaining.toMillis() + " ms, at "
                + Instant.now().plus(remaining).truncatedTo(ChronoUnit.MILLIS);
    }

    /**
     * Waits until the child exits, the lease is endangered, or a stop is requested, whichever comes first.
     *
     * @param lease the lease holding the lock
     * @param stopRequested completes when the user asks fencer to stop (SIGINT, SIGTERM)
     * @return the child's exit status when it exited by itself or on request; {@link #EXIT_LEASE_LOST} when the
     *     lease was endangered (the group is then stopped, SIGTERM first and SIGKILL in time)
     */
    int supervise(Lease lease, CompletionStage<?> stopRequested) throws InterruptedException {
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        AtomicReference<String> danger = new AtomicReference<>();
        process.onExit().thenRun(() -> outcome.complete(Outcome.EXITED));
        lease.endangered().whenComplete((detail, failure) -> {
            danger.compareAndSet(null, failure != null ? "lost: " + failure.getMessage() : detail);
            outcome.complete(Outcome.LEASE_ENDANGERED);
        });
        stopRequested.whenComplete((signal, failure) -> outcome.complete(Outcome.STOP_REQUESTED));
        switch (await(outcome, lease, danger)) {
            case EXITED:
                return exited(lease);
            case LEASE_ENDANGERED:
                leaseEndangered = true;
                endangered(lease, danger);
                return EXIT_LEASE_LOST;
            case STOP_REQUESTED:
                return stop(lease);
            default:
                throw new IllegalStateException("outcome not handled");
        }
    }

    /** Returns true when {@link #supervise} stopped the group because the lease was in jeopardy or lost. */
    boolean leaseEndangered() {
        return leaseEndangered;
    }

    /** Waits for the outcome, reading the lease left meanwhile: running low endangers it too. */
    private Outcome await(CompletableFuture<Outcome> outcome, Lease lease, AtomicReference<String> danger)
            throws InterruptedException {
        Duration stopWhenLeft = killAfter.plus(KILL_MARGIN);
        while (true) {
            try {
                return outcome.get(POLL_MILLIS, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                Duration left = lease.remaining().get();
                if (left.compareTo(stopWhenLeft) <= 0) {
                    if (!left.isZero()) { // at zero the session is lost, and its stage says how
                        danger.compareAndSet(null, "in jeopardy: " + left.toMillis() + " ms of the local lease "
                                + "left, no more than --kill-after (" + killAfter.toMillis() + " ms) + "
                                + KILL_MARGIN.toMillis() + " ms");
                    }
                    outcome.complete(Outcome.LEASE_ENDANGERED);
                }
            } catch (ExecutionException e) {
                throw new IllegalStateException("the outcome future is only ever completed normally", e);
            }
        }
    }

    /**
     * Says why on stderr and stops the group. While some local lease is left the message comes first, with when
     * the lease ends; once none is left the stop comes first, and the message waits (briefly) for the loss's reason.
     */
    private void endangered(Lease lease, AtomicReference<String> danger) throws InterruptedException {
        Duration remaining = lease.remaining().get();
        if (danger.get() != null && !remaining.isZero()) {
            err.println("fencer: lease on " + token + " " + danger.get() + "; " + leaseEnds(remaining)
                    + "; stopping " + commandName);
            err.flush();
            stop(lease);
            return;
        }
        stop(lease);
        String why = danger.get();
        if (why == null) {
            try {
                why = lease.endangered().toCompletableFuture().get(LOSS_REASON_WAIT.toMillis(),
                        TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                why = "lost: the local lease has ended";
            }
        }
        err.println("fencer: lease on " + token + " " + why + "; stopping " + commandName);
        err.flush();
    }

    /** Returns the child's status after stopping what it left running in its group, before the lock is released. */
    private int exited(Lease lease) throws InterruptedException {
        int status = process.exitValue();
        List<Long> left = group.livingMembers();
        if (!left.isEmpty()) {
            err.println("fencer: " + commandName + " exited with " + status + " and left " + left.size()
                    + " process(es) running in its " + group + "; stopping them before releasing the lock");
            err.flush();
            stop(lease);
        }
        return status;
    }

    /**
     * Stops the group: SIGTERM, then SIGKILL once {@code killAfter} has passed or only {@link #KILL_MARGIN} of the
     * local lease is left, unless every member exited before.
     *
     * @return the child's exit status (128 + signal when a signal ended it), or -1 when the group outlived SIGKILL
     */
    private int stop(Lease lease) throws InterruptedException {
        long terminatedNanos = System.nanoTime();
        group.terminate();
        while (!group.livingMembers().isEmpty() && System.nanoTime() - terminatedNanos < killAfter.toNanos()
                && lease.remaining().get().compareTo(KILL_MARGIN) > 0) {
            Thread.sleep(POLL_MILLIS);
        }
        return kill();
    }

    private int kill() throws InterruptedException {
        long deadlineNanos = System.nanoTime() + KILL_WAIT_MAX.toNanos();
        List<Long> living = group.livingMembers();
        if (!living.isEmpty()) {
            group.kill();
        }
        while (!(living = group.livingMembers()).isEmpty()) {
            if (System.nanoTime() - deadlineNanos > 0) {
                err.println("fencer: " + commandName + " (" + group + ") still runs after SIGKILL: pids " + living);
                err.flush();
                return -1;
            }
            // A member forked while the group's SIGKILL went out: kill it by its pid.
            living.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
            Thread.sleep(POLL_MILLIS);
        }
        if (!process.waitFor(KILL_WAIT_MAX.toMillis(), TimeUnit.MILLISECONDS)) {
            err.println("fencer: " + commandName + " (pid " + process.pid() + ") still runs after SIGKILL");
            err.flush();
            return -1;
        }
        return process.exitValue();
    }
}

package io.fencer.spring.shedlock;

import io.fencer.core.FencingToken;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/**
 * The Fencer-locked job running on the current thread: what a {@code @SchedulerLock} job asks for its token.
 *
 * <pre>{@code
 * @Scheduled(cron = "0 * * * * *")
 * @SchedulerLock(name = "nightly-report", lockAtMostFor = "PT30S")
 * public void nightlyReport() {
 *     FencingToken token = FencedJobs.currentToken();   // pass it with every write
 *     ...
 * }
 * }</pre>
 *
 * <p>{@link FencerLockProvider} sets it on the thread that takes the lock, which is the thread that runs the job, and
 * clears it when the job ends. Jobs nested in jobs see the innermost. A job that hands work to other threads passes
 * them its {@link FencedJob}.
 */
public final class FencedJobs {
    private static final ThreadLocal<Deque<FencedJob>> RUNNING = new ThreadLocal<>();

    private FencedJobs() {}

    /** Returns the Fencer-locked job running on this thread, if any. */
    public static Optional<FencedJob> current() {
        Deque<FencedJob> running = RUNNING.get();
        return running == null ? Optional.empty() : Optional.ofNullable(running.peekFirst());
    }

    /**
     * Returns the token of the Fencer-locked job running on this thread.
     *
     * @throws IllegalStateException when none runs here: the job is not under {@code @SchedulerLock}, ShedLock's
     *     lock provider is not {@link FencerLockProvider}, or this is another thread than the job's
     */
    public static FencingToken currentToken() {
        return current().orElseThrow(() -> new IllegalStateException("no Fencer-locked job runs on thread "
                + Thread.currentThread().getName() + ": the token exists only inside a @SchedulerLock job whose "
                + "LockProvider is FencerLockProvider")).token();
    }

    static void started(FencedJob job) {
        Deque<FencedJob> running = RUNNING.get();
        if (running == null) {
            running = new ArrayDeque<>();
            RUNNING.set(running);
        }
        running.addFirst(job);
    }

    static void ended(FencedJob job) {
        Deque<FencedJob> running = RUNNING.get();
        if (running == null) {
            return;
        }
        running.remove(job);
        if (running.isEmpty()) {
            RUNNING.remove();
        }
    }
}

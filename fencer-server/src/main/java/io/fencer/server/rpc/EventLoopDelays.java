package io.fencer.server.rpc;

import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import java.util.Objects;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Runs a short delay's task on the gRPC event loop that asked for it, so that arming and cancelling it wake no other
 * thread.
 *
 * <p>Why: the proposer arms an expiry for every command that lingers for company, which on a contended lock is every
 * hand-off, and company nearly always comes first. On a shared {@link ScheduledExecutorService} each arming that
 * becomes the earliest deadline wakes its thread to wait anew, and each expiry that was not cancelled wakes it again:
 * two context switches a hand-off on a 2-core server whose hand-off is a chain of them. An event loop keeps its
 * deadlines in its own queue and sleeps in its selector until the earliest, so a task it schedules for itself, and
 * cancels on itself, costs no other thread anything. Measured on a 2-core VM with one peer (a fresh server per run,
 * 15 s of warm-up, 10 s windows, three alternated A/B pairs): 64 clients on one lock 2,397 / 2,656 / 2,538 against
 * 2,352 / 2,358 / 2,251 grants/s, with 2.8-3.1 against 3.1-3.3 s of server CPU in 5 s; one client 3,151 / 3,079 /
 * 3,074 against 2,680 / 2,713 / 2,728 cycles/s.
 *
 * <p>A loop runs its due tasks between rounds of reading and writing its connections, so a task may run later by what
 * the loop is busy with, as everything else the loop does; a linger's expiry only bounds how long a lone command waits
 * for company, and a busy loop is bringing company anyway.
 *
 * <p>A caller that is not on one of gRPC's event loops (the state machine's thread, the HTTP port, a test) gets the
 * fallback scheduler instead. A loop's task can be cancelled only from that loop: from another thread the cancel would
 * hand the loop a task and wake it, which is what this avoids, so it does nothing and the task runs, late and harmless.
 * A loop that is shutting down would drop its scheduled tasks, so its callers get the fallback too; one that begins to
 * shut down after the task was scheduled drops it, and then its server is closing and the proposer fails what waits.
 */
public final class EventLoopDelays {
    private EventLoopDelays() {}

    /**
     * Runs {@code task} once, {@code delayNanos} from now: on the calling thread's gRPC event loop when it runs on one,
     * else on {@code fallback}. Returns what cancels it, at best: a task may still run after its cancel.
     *
     * @throws java.util.concurrent.RejectedExecutionException if the executor chosen no longer takes tasks
     */
    public static Runnable delay(ScheduledExecutorService fallback, Runnable task, long delayNanos) {
        Objects.requireNonNull(fallback, "fallback");
        Objects.requireNonNull(task, "task");
        EventExecutor loop = ThreadExecutorMap.currentExecutor();
        if (loop == null || loop.isShuttingDown()) { // a loop that stops would drop the task: the fallback runs it
            Future<?> scheduled = fallback.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
            return () -> scheduled.cancel(false);
        }
        Future<?> scheduled = loop.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        return () -> {
            if (loop.inEventLoop()) {
                scheduled.cancel(false);
            }
        };
    }
}

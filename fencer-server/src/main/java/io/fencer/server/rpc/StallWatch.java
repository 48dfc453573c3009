package io.fencer.server.rpc;

import io.fencer.core.LimitExceededException;
import io.grpc.stub.ServerCallStreamObserver;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Ends a server stream whose client stopped taking what it sends: a backup holds a place among the backups in flight
 * and its file or snapshot until it ends, and gRPC's flow control holds it back, without an end, for as long as its
 * client keeps the connection open and reads nothing. Once per timeout it looks whether a message went out since
 * its last look; when none did and the stream still cannot take one, it fails the stream with
 * {@link LimitExceededException} naming {@code limit}. So a stalled stream ends between one and two timeouts after
 * its last message. A stream that waits on the server (not on its client) is ready, and is never ended.
 *
 * <p>One look at a time: each look schedules the next on the timers, so {@link #seen} is read and written by one
 * thread at a time, in order.
 */
public final class StallWatch {
    private final ServerCallStreamObserver<?> call;
    private final ScheduledExecutorService timers;
    private final Duration timeout;
    private final String limit;
    private final Consumer<LimitExceededException> onStall;
    private final AtomicLong sent = new AtomicLong();
    private long seen = -1;
    private volatile boolean stopped;
    private volatile ScheduledFuture<?> next;

    private StallWatch(ServerCallStreamObserver<?> call, ScheduledExecutorService timers, Duration timeout,
            String limit, Consumer<LimitExceededException> onStall) {
        this.call = call;
        this.timers = timers;
        this.timeout = timeout;
        this.limit = limit;
        this.onStall = onStall;
    }

    /**
     * Starts watching {@code call}; {@code onStall} is run once, on a timer's thread, with the error to end it with.
     * Tell it of each message sent ({@link #sent}) and stop it when the stream ends however it ends.
     *
     * @param limit the name of the limit in the error (an option's, as the error catalogue names limits)
     */
    public static StallWatch start(ServerCallStreamObserver<?> call, ScheduledExecutorService timers,
            Duration timeout, String limit, Consumer<LimitExceededException> onStall) {
        StallWatch watch = new StallWatch(call, timers, timeout, limit, onStall);
        watch.schedule();
        return watch;
    }

    /** Counts a message sent to the client. */
    public void sent() {
        sent.incrementAndGet();
    }

    /** Stops watching: the stream ended. */
    public void stop() {
        stopped = true;
        ScheduledFuture<?> scheduled = next;
        if (scheduled != null) {
            scheduled.cancel(false);
        }
    }

    private void schedule() {
        if (stopped) {
            return;
        }
        try {
            next = timers.schedule(this::look, timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            stopped = true; // the server is closing: its streams end with it
        }
    }

    private void look() {
        if (stopped) {
            return;
        }
        long now = sent.get();
        if (now != seen || call.isReady() || call.isCancelled()) {
            seen = now;
            schedule();
            return;
        }
        stopped = true;
        onStall.accept(new LimitExceededException(limit, timeout.toMillis(), "the client took nothing of this "
                + "stream for " + timeout.toMillis() + " ms (" + limit + "), so the server ended it; read the "
                + "stream as it comes, or raise the limit for a slow link"));
    }
}

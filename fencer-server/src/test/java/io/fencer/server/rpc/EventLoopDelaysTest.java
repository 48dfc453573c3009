package io.fencer.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultEventExecutor;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class EventLoopDelaysTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final long SHORT_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /** A single-threaded executor of gRPC's shaded Netty, as each of the client port's event loops is. */
    private final DefaultEventExecutor loop = new DefaultEventExecutor();
    private final ScheduledThreadPoolExecutor fallback = new ScheduledThreadPoolExecutor(1);
    private final AtomicInteger runs = new AtomicInteger();
    private final AtomicReference<Thread> ranOn = new AtomicReference<>();
    private final Runnable task = () -> {
        ranOn.set(Thread.currentThread());
        runs.incrementAndGet();
    };

    @AfterEach
    void stop() throws Exception {
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
        fallback.shutdownNow();
    }

    @Test
    void delay_onAnEventLoop_runsTheTaskOnThatLoopAndLeavesTheFallbackAlone() throws Exception {
        Thread loopThread = loop.submit(() -> Thread.currentThread()).get();

        loop.submit(() -> EventLoopDelays.delay(fallback, task, SHORT_NANOS)).get();

        await().atMost(WAIT).until(() -> runs.get() == 1);
        assertThat(ranOn.get()).isSameAs(loopThread);
        assertThat(fallback.getTaskCount()).as("tasks given to the fallback").isZero();
    }

    @Test
    void delay_onAnEventLoop_cancelledOnThatLoop_neverRuns() throws Exception {
        long delayNanos = TimeUnit.MILLISECONDS.toNanos(50);
        loop.submit(() -> EventLoopDelays.delay(fallback, task, delayNanos).run()).get();

        Thread.sleep(4 * TimeUnit.NANOSECONDS.toMillis(delayNanos)); // past the deadline: a task left would have run
        assertThat(runs).hasValue(0);
    }

    @Test
    void delay_onAnEventLoop_cancelledFromAnotherThread_runsLateAndLeavesTheLoopAsleep() throws Exception {
        Runnable cancel = loop.submit(() -> EventLoopDelays.delay(fallback, task, SHORT_NANOS)).get();

        cancel.run(); // from the test's thread: handing the loop a removal would wake it, so the task stays

        await().atMost(WAIT).until(() -> runs.get() == 1);
        assertThat(loop.pendingTasks()).as("tasks handed to the loop").isZero();
    }

    @Test
    void delay_offAnEventLoop_runsOnTheFallback() {
        Runnable cancel = EventLoopDelays.delay(fallback, task, SHORT_NANOS);

        await().atMost(WAIT).until(() -> runs.get() == 1);
        assertThat(ranOn.get().getName()).startsWith("pool-");
        assertThat(fallback.getTaskCount()).isEqualTo(1);
        cancel.run(); // after the run: nothing to cancel, nothing thrown
    }

    @Test
    void delay_offAnEventLoop_cancelled_neverRuns() throws Exception {
        long delayNanos = TimeUnit.MILLISECONDS.toNanos(50);
        EventLoopDelays.delay(fallback, task, delayNanos).run();

        Thread.sleep(4 * TimeUnit.NANOSECONDS.toMillis(delayNanos));
        assertThat(runs).hasValue(0);
    }

    @Test
    void delay_onAStoppedFallback_throwsSoTheCallerNeedNotWait() {
        ScheduledExecutorService stopped = Executors.newSingleThreadScheduledExecutor();
        stopped.shutdown();

        assertThatThrownBy(() -> EventLoopDelays.delay(stopped, task, SHORT_NANOS))
                .isInstanceOf(RejectedExecutionException.class);
        assertThat(runs).hasValue(0);
    }

    @Test
    void delay_onALoopShuttingDown_runsOnTheFallback() throws Exception {
        CompletableFuture<Thread> loopThread = new CompletableFuture<>();
        loop.execute(() -> {
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS); // the loop would drop what it schedules from now on
            loopThread.complete(Thread.currentThread());
            EventLoopDelays.delay(fallback, task, SHORT_NANOS);
        });

        await().atMost(WAIT).until(() -> runs.get() == 1);
        assertThat(ranOn.get()).isNotSameAs(loopThread.get());
        assertThat(fallback.getTaskCount()).isEqualTo(1);
    }
}

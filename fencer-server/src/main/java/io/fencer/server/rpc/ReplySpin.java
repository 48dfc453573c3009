package io.fencer.server.rpc;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.SelectStrategy;
import io.grpc.netty.shaded.io.netty.channel.SelectStrategyFactory;
import io.grpc.netty.shaded.io.netty.util.IntSupplier;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.concurrent.SingleThreadEventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The wait of a client port's event loop for work it expects soon: the answer to a lone call it took, or the next
 * call of a client it just answered. For at most the spin it polls its sockets and its task queue instead of sleeping,
 * so that the work finds it awake.
 *
 * <p>Why: a command crosses several threads (the event loop, Ratis's log worker, its commit and apply threads, the
 * event loop again), and on a virtual machine whose idle CPUs halt at once, each hand-off that lands on a halted CPU
 * costs tens of microseconds to wake it. A loop that stays awake keeps its CPU from halting, and the hand-offs in
 * between then land on a running CPU. Measured with one peer and one client on a 2-core VM: cycle p50 0.53-0.61 ms
 * against 0.75-0.78 without.
 *
 * <p>Spinning costs a CPU, so a loop spins only when it pays: while one to {@value #CALLS_MAX} of its unary or
 * pipelined calls are in flight (a lone client; a busy loop has work anyway, and the other threads need the CPU),
 * or within the spin after its last answer; for at most the spin per wait; only while such waits have lately ended
 * within the spin (a group that commits over the network, or a client that calls now and then, answers or calls too
 * late to be waited for, so the loop sleeps); and only while fewer than {@link #SPINNERS_MAX} loops of this process
 * spin. So the cost is bounded by that many CPUs while lone clients call back to back, and is nothing otherwise.
 * Thread-safe.
 */
public final class ReplySpin implements SelectStrategyFactory {
    /** The most calls in flight on one loop at which it still spins. */
    static final int CALLS_MAX = 2;
    /** The most loops of this process that spin at once: a quarter of the CPUs, at least one. */
    static final int SPINNERS_MAX = Math.max(1, Runtime.getRuntime().availableProcessors() / 4);
    /** The weight of one wait in the average: about the last eight waits count. */
    private static final double WAIT_WEIGHT = 1.0 / 8;
    /** A wait counts in the average as at most this many spins: one long idle period must not stop spinning long. */
    private static final int WAIT_SAMPLE_SPINS_MAX = 4;
    private static final ThreadLocal<Loop> CURRENT = new ThreadLocal<>();
    private static final AtomicInteger SPINNERS = new AtomicInteger();

    private final long spinNanos;
    private final List<Loop> loops = new CopyOnWriteArrayList<>();
    private final LongAdder spinsFound = new LongAdder();
    private final LongAdder spinsExpired = new LongAdder();

    /** A policy whose loops spin at most {@code spin} per wait; ZERO = never. */
    public ReplySpin(Duration spin) {
        if (spin.isNegative()) {
            throw new IllegalArgumentException("spin " + spin + " must not be negative");
        }
        this.spinNanos = spin.toNanos();
    }

    @Override
    public SelectStrategy newSelectStrategy() {
        Loop loop = new Loop(this);
        loops.add(loop);
        return loop;
    }

    /**
     * Returns the interceptor that counts each unary call in flight on the loop that took it; without it, a loop
     * counts only pipelined calls (see {@link PipelineStream}).
     */
    public static ServerInterceptor interceptor() {
        return new CallCounter();
    }

    /**
     * Exports this policy's counters to {@code registry}: the spins that found their work and those that ran out
     * (each cost its loop the whole spin of a CPU), and the calls its loops count in flight.
     */
    public void register(MeterRegistry registry) {
        FunctionCounter.builder("fencer.reply.spins", spinsFound, LongAdder::sum).tag("outcome", "found")
                .description("Waits of a client port's event loop that polled and found their work").register(registry);
        FunctionCounter.builder("fencer.reply.spins", spinsExpired, LongAdder::sum).tag("outcome", "expired")
                .description("Waits of a client port's event loop that polled for the whole reply spin, then slept")
                .register(registry);
        Gauge.builder("fencer.reply.spin.calls", this, ReplySpin::callsInFlight)
                .description("Calls the client port's event loops count in flight").register(registry);
    }

    /** Returns the calls in flight on this policy's loops (tests, metrics). */
    public int callsInFlight() {
        return loops.stream().mapToInt(loop -> loop.callsInFlight.get()).sum();
    }

    /** Returns how many spins found their work before they ran out (tests, metrics). */
    public long spinsFound() {
        return spinsFound.sum();
    }

    /** Returns how many spins ran out and let their loop sleep (tests, metrics). */
    public long spinsExpired() {
        return spinsExpired.sum();
    }

    /** One event loop's select strategy and its count of calls in flight. */
    static final class Loop implements SelectStrategy {
        private final ReplySpin policy;
        private final AtomicInteger callsInFlight = new AtomicInteger();
        /** When the last call of this loop was answered. */
        private volatile long lastAnswerNanos;
        private SingleThreadEventExecutor executor; // the loop's own thread only, as are the fields below
        private boolean bound;
        /** When this loop last began to wait for work it expected; 0 = it was not waiting. */
        private long waitStartNanos;
        private double waitNanosAverage;

        Loop(ReplySpin policy) {
            this.policy = policy;
            // "Long ago", whatever the sign of nanoTime's origin: no answer is recent before the first one.
            this.lastAnswerNanos = System.nanoTime() - Long.MAX_VALUE / 2;
        }

        /** Returns the loop of the calling thread, or null when it is no loop of a policy. */
        static Loop current() {
            return CURRENT.get();
        }

        void started() {
            callsInFlight.incrementAndGet();
        }

        void ended() {
            lastAnswerNanos = System.nanoTime();
            int left = callsInFlight.decrementAndGet();
            assert left >= 0 : "calls in flight on a loop: " + left;
        }

        @Override
        public int calculateStrategy(IntSupplier selectSupplier, boolean hasTasks) throws Exception {
            if (!bound) {
                bind();
            }
            long now = System.nanoTime();
            if (waitStartNanos != 0) {
                observeWait(now - waitStartNanos);
                waitStartNanos = 0;
            }
            if (hasTasks) {
                return selectSupplier.get(); // Netty's default: poll, then run the tasks
            }
            if (!expectsWork(now)) {
                return SelectStrategy.SELECT;
            }
            waitStartNanos = now;
            if (waitNanosAverage > policy.spinNanos || executor == null || !takeSpinner()) {
                return SelectStrategy.SELECT;
            }
            try {
                return spin(selectSupplier, now + policy.spinNanos);
            } finally {
                SPINNERS.decrementAndGet();
            }
        }

        /**
         * Polls the sockets and the task queue until either has work or {@code deadlineNanos} passes. Tasks must be
         * looked at here: Netty does not wake a loop for a task while it is not blocked in its selector.
         */
        private int spin(IntSupplier selectSupplier, long deadlineNanos) throws Exception {
            do {
                int ready = selectSupplier.get();
                if (ready > 0) {
                    policy.spinsFound.increment();
                    return ready;
                }
                if (executor.pendingTasks() > 0) {
                    policy.spinsFound.increment();
                    return 0; // no socket is ready; the loop runs its tasks
                }
                Thread.onSpinWait();
            } while (System.nanoTime() - deadlineNanos < 0);
            policy.spinsExpired.increment();
            return SelectStrategy.SELECT;
        }

        /**
         * Returns whether work is due soon: the answer to a lone call in flight, or the next call of a client just
         * answered (one that keeps its calls coming sends the next within its round trip).
         */
        private boolean expectsWork(long now) {
            int calls = callsInFlight.get();
            return calls > 0 ? calls <= CALLS_MAX : now - lastAnswerNanos < policy.spinNanos;
        }

        private static boolean takeSpinner() {
            while (true) {
                int spinning = SPINNERS.get();
                if (spinning >= SPINNERS_MAX) {
                    return false;
                }
                if (SPINNERS.compareAndSet(spinning, spinning + 1)) {
                    return true;
                }
            }
        }

        /** Runs once, on the loop's thread: the loop's calls find it there, its spin looks at its task queue. */
        private void bind() {
            bound = true;
            CURRENT.set(this);
            EventExecutor current = ThreadExecutorMap.currentExecutor();
            if (current instanceof SingleThreadEventExecutor single) {
                executor = single; // otherwise (another Netty) the loop never spins: it cannot see its tasks
            }
        }

        private void observeWait(long waitNanos) {
            double sample = Math.min(waitNanos, (double) WAIT_SAMPLE_SPINS_MAX * policy.spinNanos);
            waitNanosAverage += WAIT_WEIGHT * (sample - waitNanosAverage);
        }
    }

    /**
     * Counts a unary call in flight on the loop that took it, from its start to its close, its completion or its
     * cancellation, whichever comes first.
     */
    private static final class CallCounter implements ServerInterceptor {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                ServerCallHandler<Q, R> next) {
            Loop loop = Loop.current();
            if (loop == null || call.getMethodDescriptor().getType() != MethodType.UNARY) {
                return next.startCall(call, headers); // a stream's calls are counted by the stream
            }
            loop.started();
            AtomicBoolean ended = new AtomicBoolean();
            Runnable end = () -> {
                if (ended.compareAndSet(false, true)) {
                    loop.ended();
                }
            };
            ServerCall<Q, R> counted = new SimpleForwardingServerCall<>(call) {
                @Override
                public void close(Status status, Metadata trailers) {
                    try {
                        super.close(status, trailers);
                    } finally {
                        end.run(); // after the answer is queued to the loop, so a spinning loop finds it
                    }
                }
            };
            ServerCall.Listener<Q> listener;
            try {
                listener = next.startCall(counted, headers);
            } catch (RuntimeException e) {
                end.run();
                throw e;
            }
            return new SimpleForwardingServerCallListener<>(listener) {
                @Override
                public void onComplete() {
                    try {
                        super.onComplete();
                    } finally {
                        end.run(); // a call whose handler threw is closed by gRPC itself, not by close()
                    }
                }

                @Override
                public void onCancel() {
                    try {
                        super.onCancel();
                    } finally {
                        end.run();
                    }
                }
            };
        }
    }
}

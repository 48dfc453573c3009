package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.core.Ticker;
import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Blocking unary calls whose deadline the client enforces itself: the calling thread waits for the answer at most
 * the timeout, then cancels the call (the peer sees the cancellation, as it would see a deadline pass) and fails
 * it DEADLINE_EXCEEDED, as gRPC's own deadline would.
 *
 * <p>Why not a gRPC deadline ({@code withDeadlineAfter}): gRPC sends it as a {@code grpc-timeout} header whose
 * value differs on every call, so both ends' HPACK tables take a new entry per call and the encoder searches a
 * table full of stale timeouts; and it arms and disarms a timer on the transport's event loop per call. On the
 * lock bench that was one of the largest shares of the client's CPU per call that Fencer controls. Fencer's server
 * needs no deadline from the client: a waiting Acquire ends at its {@code wait_millis}, which the client's
 * deadline always exceeds, and a call the client gives up is cancelled either way.
 *
 * <p>A call whose deadline passes before gRPC gave it a stream on a connected transport (the peer refuses, or the
 * connection is still being made) is cancelled while it waits in the channel and was never sent: it fails with
 * {@link Unreachable#noConnectionWithin}, so that the caller can say that nothing was sent.
 *
 * <p>As in gRPC's blocking stubs, the call's callbacks run on the calling thread while it waits (no hand-off to
 * another executor), and an interrupt cancels the call, fails it CANCELLED and keeps the thread's interrupt flag.
 *
 * <p>An answer that lands as the deadline passes or an abort fires, before the cancel, is returned (or the failure
 * it carries thrown), not dropped: for an Acquire it may be a grant, which a timeout would hide and an abort would
 * leave with the session on the service.
 */
final class UnaryCalls {
    private static final System.Logger LOG = System.getLogger(UnaryCalls.class.getName());
    /** Deadlines are real time, as in {@link Router}: a frozen test ticker must not hold a call for ever. */
    private static final Ticker SYSTEM_TIME = Ticker.system();
    /**
     * The longest a call given up waits for the end its cancel brings (the transport ends a cancelled stream at once,
     * without the peer): an answer that landed before the cancel is in that end.
     */
    static final long CANCEL_SETTLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private UnaryCalls() {}

    /**
     * Calls {@code method} with {@code request} on {@code channel} and waits at most {@code timeoutNanos} for the
     * answer.
     *
     * @throws StatusRuntimeException as a gRPC blocking stub throws it: the peer's status and trailers, or
     *     DEADLINE_EXCEEDED after the timeout, or CANCELLED when the thread was interrupted
     */
    static <RequestT, ResponseT> ResponseT call(Channel channel, MethodDescriptor<RequestT, ResponseT> method,
            RequestT request, long timeoutNanos) {
        return call(channel, method, request, timeoutNanos, null);
    }

    /**
     * As {@link #call(Channel, MethodDescriptor, Object, long)}, cancelled as soon as {@code abort}, when not null,
     * names a failure, which the call then throws.
     */
    static <RequestT, ResponseT> ResponseT call(Channel channel, MethodDescriptor<RequestT, ResponseT> method,
            RequestT request, long timeoutNanos, Router.Abort abort) {
        return call(channel, method, request, timeoutNanos, abort, SYSTEM_TIME);
    }

    /** As {@link #call(Channel, MethodDescriptor, Object, long, Router.Abort)}, its deadline kept by {@code ticker}. */
    static <RequestT, ResponseT> ResponseT call(Channel channel, MethodDescriptor<RequestT, ResponseT> method,
            RequestT request, long timeoutNanos, Router.Abort abort, Ticker ticker) {
        CallerExecutor executor = new CallerExecutor();
        StreamWatch watch = new StreamWatch();
        ClientCall<RequestT, ResponseT> call = channel.newCall(method,
                CallOptions.DEFAULT.withExecutor(executor).withStreamTracerFactory(watch));
        long deadlineNanos = ticker.nanoTime() + timeoutNanos;
        try {
            Future<ResponseT> response = ClientCalls.futureUnaryCall(call, request);
            while (!response.isDone()) {
                long remainingNanos = deadlineNanos - ticker.nanoTime();
                if (remainingNanos <= 0) {
                    call.cancel("the client's deadline passed", null);
                    if (!watch.streamCreated) { // read after the cancel: a stream made later is never started
                        throw Unreachable.noConnectionWithin(timeoutNanos);
                    }
                    if (landedBeforeCancel(response, executor)) {
                        return answer(response);
                    }
                    throw Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after "
                            + NANOSECONDS.toMillis(timeoutNanos) + " ms (enforced by the client)")
                            .asRuntimeException();
                }
                executor.waitAndDrain(abort == null ? remainingNanos : Math.min(remainingNanos,
                        abort.askAgainInNanos()));
                RuntimeException aborted = abort == null || response.isDone() ? null : abort.why();
                if (aborted != null) {
                    call.cancel("the call was given up", null);
                    if (landedBeforeCancel(response, executor)) {
                        return answer(response);
                    }
                    throw aborted;
                }
            }
            return answer(response);
        } catch (InterruptedException e) {
            call.cancel("the calling thread was interrupted", e);
            Thread.currentThread().interrupt();
            throw Status.CANCELLED.withDescription("the calling thread was interrupted").withCause(e)
                    .asRuntimeException();
        } finally {
            executor.shutdown();
        }
    }

    /**
     * Calls a server-streaming {@code method} and returns the concatenation of {@code data} of every message, at most
     * {@code bytesMax} bytes, within {@code timeoutNanos} (a gRPC deadline here: the stream's whole length is what
     * the caller bounds).
     *
     * @throws StatusRuntimeException as a gRPC blocking stub throws it, or RESOURCE_EXHAUSTED past {@code bytesMax}
     */
    static <RequestT, ResponseT> byte[] collect(Channel channel, MethodDescriptor<RequestT, ResponseT> method,
            RequestT request, long timeoutNanos, long bytesMax,
            java.util.function.Function<ResponseT, com.google.protobuf.ByteString> data) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.util.Iterator<ResponseT> messages = ClientCalls.blockingServerStreamingCall(channel, method,
                CallOptions.DEFAULT.withDeadlineAfter(timeoutNanos, NANOSECONDS), request);
        while (messages.hasNext()) {
            com.google.protobuf.ByteString next = data.apply(messages.next());
            if (bytes.size() + (long) next.size() > bytesMax) {
                throw Status.RESOURCE_EXHAUSTED.withDescription("the answer is over the client's limit of " + bytesMax
                        + " bytes").asRuntimeException();
            }
            bytes.writeBytes(next.toByteArray());
        }
        return bytes.toByteArray();
    }

    /**
     * Waits, at most {@link #CANCEL_SETTLE_NANOS}, for the end of a call just cancelled, running its callbacks, and
     * returns true when that end is the peer's (an answer, or a failure other than CANCELLED) rather than the
     * cancel's: the answer had reached the client, queued for this thread, when the call was given up.
     */
    private static boolean landedBeforeCancel(Future<?> response, CallerExecutor executor)
            throws InterruptedException {
        long settleDeadlineNanos = System.nanoTime() + CANCEL_SETTLE_NANOS;
        while (!response.isDone()) {
            long leftNanos = settleDeadlineNanos - System.nanoTime();
            if (leftNanos <= 0) {
                return false;
            }
            executor.waitAndDrain(leftNanos);
        }
        try {
            response.get();
            return true;
        } catch (ExecutionException e) {
            return Status.fromThrowable(e.getCause()).getCode() != Status.Code.CANCELLED;
        }
    }

    private static <ResponseT> ResponseT answer(Future<ResponseT> response) throws InterruptedException {
        try {
            return response.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof StatusRuntimeException statusRuntime) {
                throw statusRuntime;
            }
            if (cause instanceof StatusException status) {
                throw new StatusRuntimeException(status.getStatus(), status.getTrailers());
            }
            throw Status.UNKNOWN.withDescription("the call failed").withCause(cause).asRuntimeException();
        }
    }

    /**
     * Learns whether a call left the channel: gRPC creates a call's stream on a transport only once it is connected
     * and ready, and a call cancelled before then is dropped from the channel's queue, unsent. Retries and hedging
     * are off, so a call has at most one stream and one tracer.
     */
    private static final class StreamWatch extends ClientStreamTracer.Factory {
        private volatile boolean streamCreated;
        private final ClientStreamTracer tracer = new ClientStreamTracer() {
            @Override
            public void streamCreated(Attributes transportAttributes, Metadata headers) {
                streamCreated = true;
            }
        };

        @Override
        public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
            return tracer;
        }
    }

    /**
     * Runs a call's callbacks on the thread that waits for it, like gRPC's executor for blocking stubs. After
     * {@link #shutdown()} late callbacks are dropped: the caller has its answer or has given up on the call.
     */
    private static final class CallerExecutor extends ConcurrentLinkedQueue<Runnable> implements Executor {
        private static final Object SHUTDOWN = new Object();
        private static final long serialVersionUID = 1L;

        /** The waiting thread, null while it runs callbacks, or {@link #SHUTDOWN}. */
        private volatile Object waiter;

        /** Waits at most {@code nanos} for callbacks and runs every one queued; returns after at most one wait. */
        void waitAndDrain(long nanos) throws InterruptedException {
            throwIfInterrupted();
            Runnable runnable = poll();
            if (runnable == null) {
                waiter = Thread.currentThread();
                try {
                    runnable = poll(); // a callback queued before the waiter was published must not be slept over
                    if (runnable == null) {
                        LockSupport.parkNanos(this, nanos);
                        throwIfInterrupted();
                        runnable = poll();
                    }
                } finally {
                    waiter = null;
                }
            }
            while (runnable != null) {
                runQuietly(runnable);
                runnable = poll();
            }
        }

        /** Runs what is queued and drops what comes later. */
        void shutdown() {
            waiter = SHUTDOWN;
            Runnable runnable;
            while ((runnable = poll()) != null) {
                runQuietly(runnable);
            }
        }

        @Override
        public void execute(Runnable runnable) {
            add(runnable);
            Object current = waiter;
            if (current == SHUTDOWN) {
                remove(runnable);
            } else if (current != null) {
                LockSupport.unpark((Thread) current);
            }
        }

        private static void runQuietly(Runnable runnable) {
            try {
                runnable.run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "a gRPC callback failed", e);
            }
        }

        private static void throwIfInterrupted() throws InterruptedException {
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }
}

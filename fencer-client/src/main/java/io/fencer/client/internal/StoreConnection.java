package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.UnavailableException;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;

/**
 * The store client's way to its one store endpoint: a plaintext channel and the loop every call goes through.
 *
 * <p>An idempotent call (reads, fence, create-scope, a write with an idempotency key, unit commit and abort) is
 * retried on UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED with exponential backoff and jitter until the call
 * timeout is spent; each attempt gets at most a third of the timeout (at least 1 s), so a silent (paused) store
 * does not eat the whole budget in one attempt. Any other call gets one attempt of the whole timeout, and a
 * transport failure is an {@link UnavailableException} saying the call may or may not have taken effect.
 * Budgets run on {@link System#nanoTime()}, as gRPC deadlines do. Thread-safe.
 */
final class StoreConnection implements AutoCloseable {
    private static final long ATTEMPT_NANOS_MIN = MILLISECONDS.toNanos(1_000);
    private static final long SHUTDOWN_WAIT_MILLIS = 1_000;

    /** The blocking part of one attempt: it runs against {@code calls}, which carry the attempt's deadline. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(StoreCalls calls);
    }

    /**
     * One attempt's way to the store: Write and Get on the {@link Pipeline} stream (when on), other calls on
     * {@link #stub()}, all within the attempt's deadline.
     */
    record StoreCalls(StoreGrpc.StoreBlockingStub unlimited, Pipeline<?, ?> pipeline, long timeoutNanos) {
        /**
         * Returns the blocking stub with the attempt's deadline; made on demand, since pipelined calls, the common
         * ones, need none.
         */
        StoreGrpc.StoreBlockingStub stub() {
            return unlimited.withDeadlineAfter(timeoutNanos, NANOSECONDS);
        }

        WriteResponse write(WriteRequest request) {
            return pipeline != null && pipeline.carries(StoreGrpc.getWriteMethod())
                    ? pipeline.call(StoreGrpc.getWriteMethod(), request, timeoutNanos) : stub().write(request);
        }

        GetResponse get(GetRequest request) {
            return pipeline != null && pipeline.carries(StoreGrpc.getGetMethod())
                    ? pipeline.call(StoreGrpc.getGetMethod(), request, timeoutNanos) : stub().get(request);
        }
    }

    /** Whether a call may be sent again when its outcome is unknown. */
    enum Retry {
        /** A read: retried, and its failure says that it changed nothing. */
        READ,
        IDEMPOTENT,
        ONCE
    }

    private final String endpoint;
    private final ManagedChannel channel;
    private final StoreGrpc.StoreBlockingStub stub;
    private final Pipeline<?, ?> pipeline; // null when off (the builder's pipelining)
    private final long callTimeoutNanos;
    /** How long a call retries while the store has never answered and refuses connections. */
    private final long unreachableTimeoutNanos;
    private final long attemptTimeoutNanos;
    private final RetryBudget.Sleeper sleeper;
    /** Whether the store has ever answered a call (with a result or an error): then refusals are transient. */
    private volatile boolean answered;

    StoreConnection(String endpoint, long callTimeoutNanos, long unreachableTimeoutNanos, ClientTransport transport,
            boolean pipelining) {
        this(endpoint, callTimeoutNanos, unreachableTimeoutNanos, RetryBudget.SYSTEM, transport, pipelining);
    }

    /** Makes a plaintext connection whose retries wait with {@code sleeper}: tests make it oversleep. */
    StoreConnection(String endpoint, long callTimeoutNanos, RetryBudget.Sleeper sleeper) {
        this(endpoint, callTimeoutNanos, callTimeoutNanos, sleeper, ClientTransport.plaintext(),
                Router.PIPELINING_DEFAULT);
    }

    private StoreConnection(String endpoint, long callTimeoutNanos, long unreachableTimeoutNanos,
            RetryBudget.Sleeper sleeper, ClientTransport transport, boolean pipelining) {
        if (callTimeoutNanos <= 0) {
            throw new IllegalArgumentException("call timeout must be positive: " + callTimeoutNanos + " ns");
        }
        this.endpoint = Router.checkEndpoint(endpoint);
        this.channel = transport.channelBuilder(this.endpoint)
                // Fencer retries by itself, idempotently; gRPC's transparent retry buffers every call for nothing
                .disableRetry()
                // the store accepts batches up to 4 MiB and reads return values up to 1 MiB
                .maxInboundMessageSize(8 * 1024 * 1024)
                .build();
        this.stub = StoreGrpc.newBlockingStub(channel);
        this.pipeline = pipelining ? Pipeline.store(channel) : null;
        this.callTimeoutNanos = callTimeoutNanos;
        this.unreachableTimeoutNanos = unreachableTimeoutNanos;
        this.attemptTimeoutNanos = Math.min(callTimeoutNanos, Math.max(callTimeoutNanos / 3, ATTEMPT_NANOS_MIN));
        this.sleeper = sleeper;
    }

    String endpoint() {
        return endpoint;
    }

    /**
     * Runs {@code attempt}, retried as {@code retry} allows, and counts the attempts made in {@code attempts}
     * (null when the caller does not care).
     *
     * @throws UnavailableException when the store did not answer within the call timeout; the call may or may not
     *     have taken effect
     * @throws io.fencer.core.FencerException of the store's reason when the store refused the call
     */
    <T> T call(String operation, Retry retry, int[] attempts, Attempt<T> attempt) {
        RetryBudget budget = new RetryBudget(callTimeoutNanos, sleeper, retry != Retry.READ);
        int made = 0;
        while (true) {
            long remaining = budget.remainingNanos();
            long attemptNanos = retry != Retry.ONCE ? Math.min(remaining, attemptTimeoutNanos) : remaining;
            made++;
            if (attempts != null) {
                attempts[0] = made;
            }
            try {
                T result = attempt.run(new StoreCalls(stub, pipeline, attemptNanos));
                answered = true;
                return result;
            } catch (StatusRuntimeException failure) {
                answered |= !Unreachable.is(failure);
                if (!Router.isRetryable(failure) || Thread.currentThread().isInterrupted()) {
                    throw WireErrors.toException(failure);
                }
                budget.failed(failure);
                if (!answered && budget.unreachableFor(unreachableTimeoutNanos)) {
                    throw unreachable(operation, budget);
                }
                boolean mayRetry = retry != Retry.ONCE && !channel.isShutdown();
                if (!mayRetry || !budget.pauseBeforeRetry(operation, budget.nextBackoffNanos())) {
                    throw unavailable(operation, made, budget);
                }
                // do not wait for gRPC's own reconnect backoff (up to 2 minutes): a restarted store is used at once
                if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
                    channel.resetConnectBackoff();
                }
            }
        }
    }

    private UnavailableException unavailable(String operation, int attempts, RetryBudget budget) {
        return new UnavailableException(operation + " failed: the store at " + endpoint + " did not answer ("
                + attempts + (attempts == 1 ? " attempt" : " attempts") + " within "
                + NANOSECONDS.toMillis(callTimeoutNanos) + " ms; last error: " + budget.lastErrors()
                + ")" + budget.outcome(), budget.lastFailure());
    }

    /** The failure of a call that never reached the store: say where it tried and why. */
    private UnavailableException unreachable(String operation, RetryBudget budget) {
        return new UnavailableException(operation + " failed: cannot connect to the store at " + endpoint + " ("
                + Unreachable.why(budget.lastFailure()).orElse("unreachable") + ", for "
                + NANOSECONDS.toMillis(unreachableTimeoutNanos) + " ms); nothing was sent", budget.lastFailure());
    }

    /** Shuts the channel down, waiting briefly for calls in flight. Idempotent. */
    @Override
    public void close() {
        if (pipeline != null) {
            pipeline.close(); // an open stream would hold the channel's graceful shutdown up
        }
        channel.shutdown();
        try {
            if (!channel.awaitTermination(SHUTDOWN_WAIT_MILLIS, MILLISECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            channel.shutdownNow();
        }
    }
}

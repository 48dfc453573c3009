package io.fencer.cli.exec;

import io.fencer.client.FencedLock;
import io.fencer.client.Grant;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/** An acquire that the user can interrupt with SIGINT or SIGTERM while it waits in line. */
public final class Acquisition {
    private Acquisition() {}

    /**
     * Acquires {@code lock}, waiting at most {@code wait}, unless {@code stopRequested} completes first.
     *
     * <p>The acquire runs on its own thread because a blocking call cannot wait on a signal too. When the stop
     * comes first the caller closes the session, which withdraws the wait on the service.
     *
     * @return the grant, or null when the stop came first
     * @throws io.fencer.client.LockTimeoutException when not granted within {@code wait}
     */
    public static Grant acquire(FencedLock lock, Duration wait, CompletionStage<?> stopRequested)
            throws InterruptedException {
        return acquire(() -> lock.acquire(wait), stopRequested);
    }

    /**
     * Runs {@code acquire} (an acquire of a lock in either mode, a semaphore permit, a multi-lock) unless
     * {@code stopRequested} completes first; as {@link #acquire(FencedLock, Duration, CompletionStage)}.
     */
    static <G extends AutoCloseable> G acquire(Supplier<G> acquire, CompletionStage<?> stopRequested)
            throws InterruptedException {
        CompletableFuture<G> granted = new CompletableFuture<>();
        Thread acquirer = new Thread(() -> {
            try {
                granted.complete(acquire.get());
            } catch (RuntimeException | Error e) {
                granted.completeExceptionally(e);
            }
        }, "fencer-acquire");
        acquirer.setDaemon(true);
        acquirer.start();
        CompletableFuture<Object> first = CompletableFuture.anyOf(granted, stopRequested.toCompletableFuture());
        try {
            first.get();
        } catch (ExecutionException e) {
            // the grant failed (rethrown below) or the stop stage failed (treated as a stop)
        }
        if (stopRequested.toCompletableFuture().isDone()) {
            granted.thenAccept(Acquisition::closeQuietly); // a grant that raced the stop is given back at once
            return null;
        }
        try {
            return granted.join();
        } catch (CompletionException e) {
            throw rethrow(e.getCause());
        }
    }

    private static void closeQuietly(AutoCloseable grant) {
        try {
            grant.close();
        } catch (Exception e) {
            // the session closes next, which releases it on the service anyway
        }
    }

    private static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (cause instanceof Error error) {
            throw error;
        }
        throw new IllegalStateException("acquire failed with a checked exception", cause);
    }
}

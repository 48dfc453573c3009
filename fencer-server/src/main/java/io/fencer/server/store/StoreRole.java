package io.fencer.server.store;

import io.fencer.core.Ticker;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.net.DiskReserve;
import io.fencer.server.rpc.MalformedRequests;
import io.fencer.server.rpc.StreamFlow;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import io.grpc.ServerServiceDefinition;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced store as a server role: the {@link StoreEngine}, the worker pool its blocking calls run on, the
 * {@code fencer.v1.Store} service, and the periodic task that expires units and sweeps idempotency records. Hosted
 * by {@link io.fencer.server.FencerServer} beside the lock service, or alone by
 * {@link io.fencer.server.FencerStoreServer}.
 *
 * <p>Writes take no worker: they are queued with the engine's committer thread on the transport's thread and
 * answered by it (see {@link StoreEngine#writeAsync}). The other calls block on RocksDB, a unit commit on its own
 * fsync, so they run on {@value #WORKERS} workers; at most {@value #WORK_QUEUE_MAX} calls wait for a worker, and
 * their requests and those being served hold at most {@code requestBytesQueuedMax} bytes ({@link RequestBytes}),
 * beyond which calls are RESOURCE_EXHAUSTED.
 */
public final class StoreRole implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StoreRole.class);
    static final int WORKERS = 64;
    static final int WORK_QUEUE_MAX = 4_096;
    /** The largest Store request accepted: the engine's 4 MiB batch limit plus framing. */
    public static final int INBOUND_MESSAGE_BYTES_MAX = 5 * 1024 * 1024;
    private static final long SWEEP_PERIOD_MILLIS = 1_000;
    private static final long DRAIN_MILLIS = 5_000;

    private final StoreCalls calls;
    /** The replicated store served, or null for a single node's store. */
    private final ReplicatedStore replicated;
    private final ThreadPoolExecutor workers;
    private final ScheduledExecutorService sweeper;
    private final StoreService service;

    private StoreRole(StoreCalls calls, ReplicatedStore replicated, io.fencer.core.TokenKeys claimKeys,
            DiskReserve disk, MeterRegistry registry, Authorizer authorizer, ScopeClaims.LockHolders holders,
            RefusalListener refused, Duration backupStallTimeout) {
        this.calls = calls;
        this.replicated = replicated;
        this.workers = new ThreadPoolExecutor(WORKERS, WORKERS, 0, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(WORK_QUEUE_MAX), daemonThreads("fencer-store-worker-"));
        this.sweeper = new ScheduledThreadPoolExecutor(1, daemonThreads("fencer-store-sweeper-"));
        // a replica's own clock stands still (StoreEngine#openReplica): time the service by the server's
        Ticker ticker = replicated == null ? calls.engine().options().ticker() : replicated.ticker();
        this.service = new StoreService(calls, disk, ticker, workers, WORK_QUEUE_MAX,
                new StoreMetrics(registry, ticker, refused), authorizer,
                new ScopeClaims(authorizer, claimKeys, holders), sweeper, backupStallTimeout);
        service.pipelineFlow().register(registry);
        sweeper.scheduleWithFixedDelay(this::sweep, SWEEP_PERIOD_MILLIS, SWEEP_PERIOD_MILLIS, TimeUnit.MILLISECONDS);
    }

    /**
     * Opens the engine in {@code directory} and starts the role's threads; {@code authorizer} checks each call, and
     * {@code holders} tells the current grant of a lock for CreateScope ({@link ScopeClaims}): the lock service's
     * beside the hosted store, null for a standalone store server, which checks the grant's signature alone;
     * {@code refused} is told of each refused write and commit (the console's feed; {@link RefusalListener#NONE});
     * a backup whose client takes nothing for {@code backupStallTimeout} is ended
     * ({@link io.fencer.server.net.PortLimits#backupStallTimeout}).
     */
    public static StoreRole open(Path directory, StoreOptions options, MeterRegistry registry, Authorizer authorizer,
            ScopeClaims.LockHolders holders, RefusalListener refused, Duration backupStallTimeout) {
        return open(directory, options, registry, authorizer, holders, refused, backupStallTimeout, () -> { });
    }

    /**
     * Opens the store as {@link #open(Path, StoreOptions, MeterRegistry, Authorizer, ScopeClaims.LockHolders,
     * RefusalListener, Duration)} does, with {@code check} run before every store call but Backup: it throws to refuse
     * the call (a single peer's store, once its group has grown beyond it).
     */
    public static StoreRole open(Path directory, StoreOptions options, MeterRegistry registry, Authorizer authorizer,
            ScopeClaims.LockHolders holders, RefusalListener refused, Duration backupStallTimeout, Runnable check) {
        StoreEngine engine = StoreEngine.open(directory, options);
        try {
            return new StoreRole(StoreCalls.guarded(StoreCalls.local(engine), check), null, options.keys(),
                    DiskReserve.of(directory, options.ticker()), registry, authorizer, holders, refused,
                    backupStallTimeout);
        } catch (IOException e) {
            engine.close();
            throw new UncheckedIOException("cannot read the file system of " + directory, e);
        }
    }

    /**
     * Serves the replicated store of a group of peers ({@link ReplicatedStore}), which the caller opened and attached
     * to the state machine; closing the role closes it. Its claims check the token's signature with {@code keys}.
     * {@code refused} is told of each write and commit this peer served and the store refused. Writes are refused
     * while the replica's file system (the data directory's, which holds the Raft log too) is short of its reserve;
     * a backup whose client takes nothing for {@code backupStallTimeout} is ended.
     */
    public static StoreRole replicated(ReplicatedStore store, io.fencer.core.TokenKeys keys, MeterRegistry registry,
            Authorizer authorizer, ScopeClaims.LockHolders holders, RefusalListener refused,
            Duration backupStallTimeout) {
        try {
            return new StoreRole(store, store, keys, DiskReserve.of(store.engine().directory(), store.ticker()),
                    registry, authorizer, holders, refused, backupStallTimeout);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the file system of " + store.engine().directory(), e);
        }
    }

    /** Returns the service, guarded against undecodable requests and requests over 5 MiB. */
    public ServerServiceDefinition service() {
        return MalformedRequests.guard(service.bindService(), INBOUND_MESSAGE_BYTES_MAX);
    }

    /** Returns true when the role serves the replicated store of a group of peers. */
    public boolean replicated() {
        return replicated != null;
    }

    /** Returns the engine holding this node's data (a replica's is replaced when a snapshot is installed). */
    public StoreEngine engine() {
        return calls.engine();
    }

    StoreService storeService() {
        return service;
    }

    /** Returns the number of calls waiting for a worker (for tests). */
    int callsWaiting() {
        return workers.getQueue().size();
    }

    /** Returns the flow-control counters of the {@code Store.Pipeline} streams. */
    public StreamFlow pipelineFlow() {
        return service.pipelineFlow();
    }

    /** Ends the open pipeline streams; call right after gRPC stopped accepting calls. */
    public void shutdownStreams() {
        service.shutdown();
    }

    private void sweep() {
        try {
            if (replicated == null) { // a replica evicts only in its apply, in log order (StoreEngine#openReplica)
                calls.engine().expireUnits();
                calls.engine().sweepIdempotency();
            }
            service.forgetEndedUnits();
        } catch (RuntimeException e) {
            LOG.warn("the store's periodic sweep failed; it runs again in {} ms", SWEEP_PERIOD_MILLIS, e);
        }
    }

    /** Stops the sweeper, lets the calls in progress finish, and closes the engine; call after gRPC stopped. */
    @Override
    public void close() {
        sweeper.shutdownNow();
        workers.shutdown();
        try {
            if (!workers.awaitTermination(DRAIN_MILLIS, TimeUnit.MILLISECONDS)) {
                workers.shutdownNow();
            }
        } catch (InterruptedException e) {
            workers.shutdownNow();
            Thread.currentThread().interrupt();
        }
        if (replicated != null) {
            replicated.close();
        } else {
            calls.engine().close();
        }
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
